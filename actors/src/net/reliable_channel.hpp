// Reliable delivery of one remote channel over a link that may drop, duplicate, reorder and delay
// frames: the sender keeps every frame until the receiver acknowledges it and sends it again after
// a timeout or a gap report; the receiver drops duplicates, holds early frames and delivers in
// sequence order, and reports its state (cumulative ack and credit) so a lost report costs nothing.
// Pure logic without sockets or a clock of its own, so a test can replay any fault sequence.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <utility>

namespace tidemark::net {

/// What a receiver tells its sender in every credit frame.
struct channel_state {
  std::uint64_t ack = 0;     ///< every frame below this seq arrived (the next one expected)
  std::uint64_t credit = 0;  ///< batches the receiving stage processed, in total since the start
  bool gap = false;          ///< frames after `ack` arrived: frame `ack` is probably lost
};

struct reliability_options {
  /// A frame not acknowledged this long after it was (last) sent goes out again: at least this,
  /// more when the measured round trip needs it (SRTT + 4 RTTVAR, RFC 6298), doubled after each
  /// timeout until a frame sent once is acknowledged, at most max_retransmit_timeout.
  std::chrono::milliseconds retransmit_timeout{200};
  std::chrono::milliseconds max_retransmit_timeout{5000};
  /// A frame the receiver reports missing goes out again at once, unless it went out this recently.
  std::chrono::milliseconds gap_guard{40};
  /// The receiver acknowledges delivered frames at most this late (fewer acks when frames stream).
  std::chrono::milliseconds ack_delay{10};
  /// Frames this far or more ahead of the next expected one are dropped (the sender sends them
  /// again): bounds what a receiver holds even against a corrupt or hostile sequence number.
  std::uint64_t max_ahead = 1 << 16;
};

/// The sending end of one channel. Frames are numbered from 0 without gaps. Unacknowledged frames
/// are bounded by the credit window: at most `window` batches (plus the signals between them) are
/// sent and not yet processed, so at most that many are kept.
template <class Frame>
class reliable_sender {
 public:
  using time_point = std::chrono::steady_clock::time_point;

  /// `window`: the channel's credit (batches the sender may have in flight).
  reliable_sender(std::uint32_t window, reliability_options o) : window_(window), opts_(o) {}

  /// Records frame `seq` (the next one) as sent now; `batch` when it takes a credit, `last` for
  /// end-of-stream (once it is acknowledged the channel needs nothing more).
  void sent(std::uint64_t seq, Frame f, bool batch, bool last, time_point now) {
    next_seq_ = std::max(next_seq_, seq + 1);
    if (batch) ++batches_;
    if (last) last_seq_ = seq;
    unacked_.emplace(seq, entry{std::move(f), now, now, 0});
    progress_ = now;
  }

  /// Takes the receiver's state; returns the credits it grants that were not granted before
  /// (0 for a stale, duplicated or reordered report). On a gap report sends the first missing
  /// frame again through resend(seq, Frame&) unless it went out within the gap guard.
  template <class Resend>
  std::uint64_t on_state(const channel_state& s, time_point now, Resend&& resend) {
    if (s.ack > next_seq_ || s.credit > batches_) return 0;  // acknowledges what was never sent
    if (s.ack > acked_) {
      acked_ = s.ack;
      progress_ = now;
      const auto end = unacked_.lower_bound(s.ack);
      // a round trip sample from the newest frame acknowledged that went out once (Karn: the
      // ack of a frame sent again may answer either copy)
      for (auto it = end; it != unacked_.begin();)
        if ((--it)->second.resent == 0) {
          sample_round_trip(now - it->second.first_sent);
          break;
        }
      unacked_.erase(unacked_.begin(), end);
    }
    std::uint64_t granted = 0;
    if (s.credit > credit_) {
      granted = s.credit - credit_;
      credit_ = s.credit;
      progress_ = now;
    }
    if (s.gap)
      if (auto it = unacked_.find(s.ack);
          it != unacked_.end() && now - it->second.sent >= opts_.gap_guard) {
        it->second.sent = now;
        ++it->second.resent;
        ++retransmitted_;
        resend(it->first, it->second.frame);
      }
    return granted;
  }

  /// Sends again, through resend(seq, Frame&), every frame not acknowledged within the
  /// retransmit timeout. When every frame is acknowledged but the whole credit window is still
  /// out and nothing moved for the timeout, the report that would free it may be lost: calls
  /// probe() so the receiver reports again.
  template <class Resend, class Probe>
  void poll(time_point now, Resend&& resend, Probe&& probe) {
    bool timed_out = false;
    for (auto& [seq, e] : unacked_)
      if (now - e.sent >= rto_) {
        e.sent = now;
        ++e.resent;
        ++retransmitted_;
        timed_out = true;
        resend(seq, e.frame);
      }
    // back off until a frame sent once is acknowledged: the round trip may be longer than thought
    if (timed_out) rto_ = std::min(2 * rto_, opts_.max_retransmit_timeout);
    if (waiting_for_credit() && now - progress_ >= rto_) {
      progress_ = now;
      ++probes_;
      probe();
    }
  }

  /// When poll() has something to do next, or nullopt when only a report can change anything.
  std::optional<time_point> next_due() const {
    std::optional<time_point> due;
    for (const auto& [seq, e] : unacked_)
      due = std::min(due.value_or(time_point::max()), e.sent + rto_);
    if (waiting_for_credit()) due = std::min(due.value_or(time_point::max()), progress_ + rto_);
    return due;
  }

  /// The retransmit timeout now, as the round trips measured and the timeouts so far make it.
  std::chrono::milliseconds retransmit_timeout() const noexcept { return rto_; }

  std::size_t unacked() const noexcept { return unacked_.size(); }
  std::uint64_t acked() const noexcept { return acked_; }
  std::uint64_t credit() const noexcept { return credit_; }
  /// Batches sent and not processed yet (their credit has not come back): at most the window.
  std::uint64_t unprocessed() const noexcept { return batches_ - credit_; }
  std::uint64_t retransmitted() const noexcept { return retransmitted_; }
  std::uint64_t probes() const noexcept { return probes_; }

 private:
  struct entry {
    Frame frame;
    time_point first_sent;
    time_point sent;  // last
    unsigned resent;  // times sent again
  };

  /// RFC 6298's estimate, within the options' bounds.
  void sample_round_trip(std::chrono::steady_clock::duration rtt) {
    using std::chrono::duration_cast;
    using std::chrono::microseconds;
    const auto r = duration_cast<microseconds>(rtt);
    if (!srtt_) {
      srtt_ = r;
      rttvar_ = r / 2;
    } else {
      rttvar_ = (3 * rttvar_ + (*srtt_ > r ? *srtt_ - r : r - *srtt_)) / 4;
      srtt_ = (7 * *srtt_ + r) / 8;
    }
    rto_ = std::clamp(std::chrono::ceil<std::chrono::milliseconds>(*srtt_ + 4 * rttvar_),
                      opts_.retransmit_timeout, opts_.max_retransmit_timeout);
  }

  bool finished() const noexcept { return last_seq_ && acked_ > *last_seq_; }
  bool waiting_for_credit() const noexcept {
    return unacked_.empty() && !finished() && batches_ - credit_ >= window_;
  }

  std::uint32_t window_;
  reliability_options opts_;
  std::chrono::milliseconds rto_ = opts_.retransmit_timeout;
  std::optional<std::chrono::microseconds> srtt_;
  std::chrono::microseconds rttvar_{0};
  std::map<std::uint64_t, entry> unacked_;
  std::uint64_t next_seq_ = 0;
  std::uint64_t acked_ = 0;
  std::uint64_t batches_ = 0;  // sent
  std::uint64_t credit_ = 0;   // granted by the receiver, in total
  std::optional<std::uint64_t> last_seq_;
  time_point progress_{};  // last send, ack, credit or probe
  std::uint64_t retransmitted_ = 0;
  std::uint64_t probes_ = 0;
};

/// The receiving end of one channel.
template <class Frame>
class reliable_receiver {
 public:
  using time_point = std::chrono::steady_clock::time_point;

  enum class verdict {
    delivered,  ///< the next frame: delivered, with the held frames it freed
    held,       ///< ahead of a missing frame: held until that one arrives
    duplicate,  ///< delivered or held before: dropped
    too_far,    ///< max_ahead or more beyond the next expected frame: dropped
  };

  explicit reliable_receiver(reliability_options o) : opts_(o) {}

  /// Takes frame `seq`; calls deliver(Frame&&) for it and for every held frame it frees, in
  /// sequence order. Every frame is delivered exactly once, however often and in whatever order
  /// it arrives.
  template <class Deliver>
  verdict accept(std::uint64_t seq, Frame f, time_point now, Deliver&& deliver) {
    if (seq < next_ || held_.count(seq)) {
      ++duplicates_;
      report_at(now);  // the sender did not see our ack
      return verdict::duplicate;
    }
    if (seq - next_ >= opts_.max_ahead) return verdict::too_far;
    if (seq > next_) {
      held_.emplace(seq, std::move(f));
      ++held_total_;
      report_at(now);  // a gap: tell the sender at once
      return verdict::held;
    }
    deliver(std::move(f));
    ++next_;
    for (auto it = held_.begin(); it != held_.end() && it->first == next_; it = held_.erase(it)) {
      deliver(std::move(it->second));
      ++next_;
    }
    report_at(now + opts_.ack_delay);
    return verdict::delivered;
  }

  /// The receiving stage processed `n` more batches: the sender hears of it at once.
  void add_credit(std::uint64_t n, time_point now) {
    credit_ += n;
    report_at(now);
  }

  /// The sender asks for a report (its window is out and nothing moved).
  void on_probe(time_point now) { report_at(now); }

  /// The state to report now, once, when a report is due; nullopt otherwise.
  std::optional<channel_state> report(time_point now) {
    if (!report_due_ || *report_due_ > now) return std::nullopt;
    report_due_.reset();
    return channel_state{next_, credit_, !held_.empty()};
  }

  std::optional<time_point> next_due() const { return report_due_; }

  std::uint64_t next() const noexcept { return next_; }
  std::size_t held() const noexcept { return held_.size(); }
  std::uint64_t duplicates() const noexcept { return duplicates_; }
  /// Frames that arrived ahead of a missing one, in total.
  std::uint64_t held_total() const noexcept { return held_total_; }

 private:
  void report_at(time_point t) { report_due_ = std::min(report_due_.value_or(t), t); }

  reliability_options opts_;
  std::uint64_t next_ = 0;
  std::uint64_t credit_ = 0;
  std::map<std::uint64_t, Frame> held_;
  std::optional<time_point> report_due_;
  std::uint64_t duplicates_ = 0;
  std::uint64_t held_total_ = 0;
};

}  // namespace tidemark::net
