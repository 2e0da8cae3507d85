// The stage actor: CAF messages and timers in, stage_core logic, CAF messages out. What the core
// sends on a channel while the actor handles one message goes out at its end, in one message.
#include "stage_actor.hpp"

#include <chrono>

#include <sys/resource.h>
#include <unistd.h>

#include <caf/send.hpp>

#include "tidemark/core/annotated_actor.hpp"
#include "messages.hpp"

namespace tidemark::detail {
namespace {

class stage_actor final : public annotated_actor, private stage_io {
 public:
  stage_actor(caf::actor_config& cfg, stage_setup setup)
      : annotated_actor(cfg),
        outputs_(std::move(setup.outputs)),
        driver_(std::move(setup.driver)),
        snapshots_(std::move(setup.snapshots)),
        senders_(setup.core.input_ports.size()),
        pending_(outputs_.size()),
        burst_capacity_(setup.core.opts.credit + 1),
        adaptive_(setup.core.opts.adaptive_batching),
        core_(std::make_unique<stage_core>(std::move(setup.core), static_cast<stage_io&>(*this))) {}

  /// Neighbours hold handles to each other; dropping them (and the operators) here breaks the
  /// reference cycle so that actors and the resources their operators own are freed on exit.
  void on_exit() override {
    annotated_actor::on_exit();
    core_.reset();
    outputs_.clear();
    senders_.clear();
    pending_.clear();
    dirty_.clear();
    driver_ = nullptr;
    snapshots_ = nullptr;
  }

  caf::behavior make_behavior() override {
    if (core_->timer_period_ms() > 0) schedule_timer();
    // async operators and synchronizers post a wake message from their own threads
    core_->set_wakeup([addr = address()] {
      if (auto self = caf::actor_cast<caf::actor>(addr)) caf::anon_send(self, wake_atom::value);
    });
    core_->restore();
    send_pending();  // a stage restored as finished ended its outputs already
    return {
        [this](start_atom) {
          core_->start();
          after_message();
        },
        [this](pump_atom) {
          core_->on_pump();
          after_message();
        },
        [this](data_msg& m) {
          learn_sender(m.in, m.out);
          core_->on_data(m.in, std::move(m.batch.ptr));
          after_message();
        },
        [this](burst_msg& m) {
          for (auto& item : m.items) {
            if (core_->over()) break;  // nothing more goes into a stage that is done or failed
            if (item.batch.ptr) {
              learn_sender(m.in, m.out);
              core_->on_data(m.in, std::move(item.batch.ptr));
            } else {
              core_->on_signal(m.in, item.kind, item.wm);
            }
          }
          after_message();
        },
        [this](signal_msg& m) {
          core_->on_signal(m.in, m.kind, m.wm);
          after_message();
        },
        [this](credit_msg& m) {
          core_->on_credit(m.out, m.n);
          after_message();
        },
        [this](copies_lost_msg& m) {
          core_->on_copies_lost(m.outs, m.ins);
          after_message();
        },
        [this](connect_msg& m) { outputs_.at(m.out) = {std::move(m.target), m.in}; },
        [this](output_restored_msg& m) {
          outputs_.at(m.out) = {std::move(m.target), m.in};
          core_->on_output_restored(m.out, m.checkpoint);
          after_message();
        },
        [this](input_restored_msg& m) {
          senders_.at(m.in) = {};  // learnt again from the restored copy's first batch
          core_->on_input_restored(m.in, m.checkpoint);
          after_message();
        },
        [this](flush_atom) {
          core_->on_flush();
          send_pending();
        },
        [this](wake_atom) {
          core_->on_wakeup();
          after_message();
        },
        [this](checkpoint_atom, std::uint64_t id) {
          core_->on_checkpoint(id);
          after_message();
        },
        [this](commit_atom, std::uint64_t id) {
          core_->on_checkpoint_complete(id);
          after_message();
        },
        [this](state_written_msg& m) {
          core_->on_state_written(m.id, std::move(m.state), std::move(m.error));
          after_message();
        },
        [this](live_atom) {
          send(caf::actor_cast<caf::actor>(current_sender()), live_metrics_msg{core_->snapshot()});
        },
        [this](timer_atom) {
          if (core_->finished() || core_->over()) return;
          core_->on_timer(std::chrono::duration_cast<std::chrono::milliseconds>(
                              std::chrono::system_clock::now().time_since_epoch())
                              .count());
          schedule_timer();
          after_message();
        },
    };
  }

 private:
  /// Who sends on an input slot (learnt from its first batch) and from which output slot.
  struct sender {
    caf::actor actor;
    std::uint32_t out = 0;
  };

  /// The sender of input slot `in` is learnt from its first batch (its credit goes back there).
  void learn_sender(std::uint32_t in, std::uint32_t out) {
    auto& s = senders_[in];
    if (!s.actor) s = {caf::actor_cast<caf::actor>(current_sender()), out};
  }

  void send_batch(std::uint32_t out, batch_ptr b) override {
    queue(out, {batch_holder{std::move(b)}});
  }
  void send_signal(std::uint32_t out, signal_kind kind, event_time wm) override {
    queue(out, {batch_holder{}, kind, wm});
  }
  void queue(std::uint32_t out, channel_item item) {
    auto& items = pending_[out];
    if (items.empty()) {
      dirty_.push_back(out);
      items.reserve(burst_capacity_);  // a burst moves the vector out: room for the usual one
    }
    items.push_back(std::move(item));
  }
  /// Sends what the core queued while handling the current message: one message per output slot
  /// (a CAF message costs about as much as a small batch's processing), in the order queued.
  void send_pending() {
    for (auto out : dirty_) {
      auto& items = pending_[out];
      const auto& o = outputs_[out];
      if (items.size() > 1) {
        send(o.target, burst_msg{o.in, out, std::move(items)});
      } else if (auto& item = items.front(); item.batch.ptr) {
        send(o.target, data_msg{o.in, out, std::move(item.batch)});
      } else {
        send(o.target, signal_msg{o.in, item.kind, item.wm});
      }
      items.clear();
    }
    dirty_.clear();
  }
  void return_credit(std::uint32_t in, std::uint32_t n) override {
    send(senders_[in].actor, credit_msg{senders_[in].out, n});
  }
  void schedule_flush(std::chrono::milliseconds linger) override {
    delayed_send(this, linger, flush_atom::value);
  }
  void schedule_pump(std::chrono::nanoseconds delay) override {
    if (delay.count() > 0)
      delayed_send(this, delay, pump_atom::value);
    else
      send(this, pump_atom::value);
  }
  // A stage that is done stays until the deployment stops it: checkpoints taken later hear from
  // it that it had finished (stage_core::on_checkpoint).
  void done(instance_metrics m) override {
    send_pending();
    send(driver_, done_msg{std::move(m)});
  }
  void failed(std::string what) override {
    send_pending();
    send(driver_, failed_msg{std::move(what)});
    quit();
  }

  void checkpointed(std::uint64_t id, std::string state, double alignment_ms) override {
    send(driver_, checkpointed_msg{core_->stage(), core_->instance(), id, std::move(state), alignment_ms});
  }

  bool write_elsewhere(std::uint64_t id, std::function<std::string()> write) override {
    if (!snapshots_) return false;
    snapshots_->post([addr = address(), id, write = std::move(write)] {
      state_written_msg m{id, {}, {}};
      try {
        m.state = write();
      } catch (const std::exception& e) {
        m.error = e.what();
      }
      if (auto self = caf::actor_cast<caf::actor>(addr)) caf::anon_send(self, std::move(m));
    });
    return true;
  }

  void copy_dropped(std::uint32_t out) override {
    send(driver_, copy_dropped_msg{core_->stage(), core_->instance(), out});
  }

  void copy_caught_up(std::uint32_t in) override {
    send(driver_, copy_caught_up_msg{core_->stage(), core_->instance(), in});
  }

  /// Adaptive batching seals partly filled batches when the stage has nothing more to do: one
  /// check of the mailbox per message, which under load always holds more (so batches fill).
  void after_message() {
    if (adaptive_ && core_ && !core_->over() && mailbox().empty()) core_->on_idle();
    send_pending();
  }

  void schedule_timer() {
    delayed_send(this, std::chrono::milliseconds(core_->timer_period_ms()), timer_atom::value);
  }

  std::vector<output_channel> outputs_;
  caf::actor driver_;
  std::shared_ptr<snapshot_writer> snapshots_;
  std::vector<sender> senders_;
  std::vector<std::vector<channel_item>> pending_;  // per output slot: not sent yet
  std::vector<std::uint32_t> dirty_;                // output slots with pending items
  std::size_t burst_capacity_;                      // credit batches and a signal
  bool adaptive_;
  std::unique_ptr<stage_core> core_;
};

}  // namespace

void snapshot_writer::post(std::function<void()> write) {
  std::call_once(started_, [this] {
    thread_ = std::make_unique<worker_pool>(1);
    // nice 10 for this thread only (Linux: a thread is a process to setpriority)
    thread_->submit([](std::size_t) { setpriority(PRIO_PROCESS, static_cast<id_t>(gettid()), 10); });
  });
  thread_->submit([write = std::move(write)](std::size_t) { write(); });
}

caf::actor spawn_stage(caf::actor_system& sys, stage_setup setup) {
  return sys.spawn<stage_actor>(std::move(setup));
}

}  // namespace tidemark::detail
