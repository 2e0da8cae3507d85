// Copies of checkpoint pieces on the nodes (see checkpoint_copies.hpp).
#include "checkpoint_copies.hpp"

#include <algorithm>
#include <filesystem>

#include <spdlog/spdlog.h>

#include "../write_queue.hpp"

namespace tidemark::net {
namespace {

std::string str(const flatbuffers::String* s) { return s ? s->str() : std::string{}; }

zmq::message_t durable_frame(std::uint64_t id, const std::string& error) {
  flatbuffers::FlatBufferBuilder b{128};
  return control_message(b, wire::CreateCopyDurable(b, id, b.CreateString(error)));
}

zmq::message_t fetched_frame(std::uint64_t id, std::uint32_t pieces, const std::string& error) {
  flatbuffers::FlatBufferBuilder b{128};
  return control_message(b, wire::CreateCopiesFetched(b, id, pieces, b.CreateString(error)));
}

}  // namespace

std::vector<std::uint32_t> copy_holders(std::uint32_t producer, const std::vector<bool>& live,
                                        std::uint32_t copies) {
  std::vector<std::uint32_t> holders;
  const auto n = static_cast<std::uint32_t>(live.size());
  for (std::uint32_t step = 1; step < n && holders.size() < copies; ++step)
    if (live[(producer + step) % n]) holders.push_back((producer + step) % n);
  return holders;
}

std::vector<zmq::message_t> copy_piece_frames(std::uint64_t checkpoint, std::uint32_t stage,
                                              std::uint32_t instance, std::string_view state,
                                              std::size_t chunk_bytes, std::uint32_t retain) {
  return chunk_frames(state, chunk_bytes, [&](auto& b, std::size_t offset, auto bytes) {
    auto chunk = wire::CreateStatePiece(b, checkpoint, stage, instance, offset, state.size(), 0, bytes);
    return wire::CreateCopyPiece(b, chunk, retain);
  });
}

zmq::message_t copy_record_frame(std::uint64_t id, const std::string& job, const std::string& plan,
                                 std::uint32_t pieces) {
  flatbuffers::FlatBufferBuilder b{256};
  return control_message(
      b, wire::CreateCopyRecord(b, id, b.CreateString(job), b.CreateString(plan), pieces));
}

zmq::message_t copies_request_frame(const std::string& job) {
  flatbuffers::FlatBufferBuilder b{128};
  return control_message(b, wire::CreateCopiesRequest(b, b.CreateString(job)));
}

zmq::message_t drop_copies_frame(const std::string& job) {
  flatbuffers::FlatBufferBuilder b{128};
  return control_message(b, wire::CreateDropCopies(b, b.CreateString(job)));
}

zmq::message_t fetch_copies_frame(std::uint64_t id, const std::string& job,
                                  const std::string& plan) {
  flatbuffers::FlatBufferBuilder b{256};
  return control_message(
      b, wire::CreateFetchCopies(b, id, b.CreateString(job), b.CreateString(plan)));
}

held_copies read_held(const wire::HeldCopies& h) {
  held_copies out{str(h.node()), {}, str(h.error())};
  if (h.checkpoints())
    for (const auto* c : *h.checkpoints()) {
      persistence::held_checkpoint held;
      held.record.id = c->id();
      held.record.job = str(c->job());
      held.record.plan = str(c->plan());
      if (c->stages() && c->instances() && c->stages()->size() == c->instances()->size())
        for (flatbuffers::uoffset_t i = 0; i < c->stages()->size(); ++i)
          held.pieces.emplace_back(c->stages()->Get(i), c->instances()->Get(i));
      held.record.pieces = static_cast<std::uint32_t>(held.pieces.size());
      out.checkpoints.push_back(std::move(held));
    }
  return out;
}

copy_keeper::copy_keeper(std::string node, std::string dir, std::size_t chunk_bytes, answer a)
    : node_(std::move(node)),
      dir_(std::move(dir)),
      chunk_bytes_(chunk_bytes),
      answer_(std::move(a)),
      queue_(std::make_unique<detail::write_queue>()) {}

copy_keeper::~copy_keeper() = default;

void copy_keeper::drain() { queue_->drain(); }

persistence::checkpoint_store& copy_keeper::store(std::uint32_t retain) {
  if (dir_.empty())
    throw persistence::storage_error(EINVAL, "node '" + node_ + "' has no data directory");
  if (!store_ || (retain != 0 && retain != retain_)) {
    store_.reset();  // one connection to the directory at a time
    retain_ = retain != 0 ? retain : 3;
    store_ = std::make_unique<persistence::checkpoint_store>(dir_, retain_);
  }
  return *store_;
}

bool copy_keeper::keeps_nothing() const {
  return !store_ && (dir_.empty() || !std::filesystem::exists(dir_));
}

void copy_keeper::on_piece(const wire::CopyPiece& f) {
  if (!f.chunk()) throw bad_chunk("a copy without its chunk");
  auto piece = assembler_.add(*f.chunk());
  if (!piece) return;
  queue_->post([this, retain = f.retain(), p = std::make_shared<state_piece>(std::move(*piece))] {
    if (failed_.count(p->checkpoint)) return;
    try {
      auto& s = store(retain);
      const auto kept = s.list();
      if (!kept.empty() && kept.back().id >= p->checkpoint) {
        spdlog::info("node '{}': a copy of checkpoint {}, not newer than the {} kept: the copies "
                     "of the run before are removed",
                     node_, p->checkpoint, kept.back().id);
        s.clear();
      }
      s.put_piece(p->checkpoint, p->stage, p->instance, p->bytes);
    } catch (const persistence::storage_error& e) {
      failed_[p->checkpoint] = e.what();
      if (e.connection_lost()) store_.reset();
    }
  });
}

void copy_keeper::on_record(std::string_view from, const wire::CopyRecord& f) {
  persistence::checkpoint_record r;
  r.id = f.id();
  r.job = str(f.job());
  r.plan = str(f.plan());
  r.pieces = f.pieces();
  queue_->post([this, to = std::string{from}, r] {
    std::string error;
    if (auto it = failed_.find(r.id); it != failed_.end()) {
      error = it->second;
      failed_.erase(it);
    } else {
      try {
        store(0).complete(r);
      } catch (const persistence::storage_error& e) {
        error = e.what();
        if (e.connection_lost()) store_.reset();
      } catch (const std::invalid_argument& e) {  // pieces lost (a Stop in between): not kept
        error = e.what();
      }
    }
    if (!error.empty())
      spdlog::warn("node '{}': could not keep the copy of checkpoint {}: {}", node_, r.id, error);
    answer_(to, durable_frame(r.id, error));
  });
}

void copy_keeper::on_request(std::string_view from, const std::string& job) {
  queue_->post([this, to = std::string{from}, job] { answer_(to, held_frame(job)); });
}

void copy_keeper::on_drop(std::string_view from, const wire::DropCopies& f) {
  queue_->post([this, to = std::string{from}, job = str(f.job())] {
    try {
      if (keeps_nothing()) {
        answer_(to, held_frame(job));
        return;
      }
      auto& s = store(0);
      const auto kept = s.list();
      if (std::any_of(kept.begin(), kept.end(), [&](auto& r) { return r.job == job; })) {
        s.clear();
        spdlog::info("node '{}': job '{}' finished: its checkpoint copies were removed", node_, job);
      }
    } catch (const persistence::storage_error& e) {
      spdlog::warn("node '{}': job '{}' finished, but its checkpoint copies could not be removed "
                   "({})", node_, job, e.what());
    }
    answer_(to, held_frame(job));
  });
}

zmq::message_t copy_keeper::held_frame(const std::string& job) {
  std::vector<persistence::held_checkpoint> held;
  std::string error;
  try {
    if (!keeps_nothing()) held = store(0).held();
  } catch (const persistence::storage_error& e) {
    error = e.what();
  }
  flatbuffers::FlatBufferBuilder b;
  std::vector<flatbuffers::Offset<wire::HeldCopy>> list;
  for (const auto& h : held) {
    if (!job.empty() && h.record.job != job) continue;
    std::vector<std::uint32_t> stages, instances;
    for (const auto& [s, i] : h.pieces) {
      stages.push_back(s);
      instances.push_back(i);
    }
    list.push_back(wire::CreateHeldCopy(b, h.record.id, b.CreateString(h.record.job),
                                        b.CreateString(h.record.plan), b.CreateVector(stages),
                                        b.CreateVector(instances)));
  }
  return control_message(b, wire::CreateHeldCopies(b, b.CreateString(node_), b.CreateVector(list),
                                                   b.CreateString(error)));
}

void copy_keeper::on_fetch(std::string_view from, const wire::FetchCopies& f) {
  queue_->post([this, to = std::string{from}, id = f.id(), job = str(f.job()),
                plan = str(f.plan())] {
    std::string error;
    std::uint32_t sent = 0;
    try {
      auto loaded = store(0).latest(job, plan, id);
      if (loaded.record.id != id) {
        error = "node '" + node_ + "' keeps no intact copy of checkpoint " + std::to_string(id);
        for (const auto& why : loaded.rejected) error += "; " + why;
      } else {
        for (const auto& [k, bytes] : loaded.pieces) {
          for (auto& frame : piece_frames(id, k.first, k.second, bytes, 0, chunk_bytes_))
            answer_(to, std::move(frame));
          ++sent;
        }
      }
    } catch (const persistence::storage_error& e) {
      error = e.what();
    }
    answer_(to, fetched_frame(id, sent, error));
  });
}

}  // namespace tidemark::net
