// Copies of checkpoint pieces on the nodes (cluster file `checkpoint: {copies: N, retain: R}`,
// docs/deploy.md, "Checkpoints and recovery"): which nodes keep a piece, the frames that carry
// copies, and a node's side, copy_keeper, which keeps them in NODE_DATA/checkpoints and sends them
// back to a coordinator whose own store was lost with its host.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <zmq.hpp>

#include "frames.hpp"
#include "tidemark/persistence/checkpoint_store.hpp"

namespace tidemark::detail {
class write_queue;
}

namespace tidemark::net {

/// The nodes (indices into `live`'s order, the cluster file's) that keep a copy of a piece made
/// on node `producer`: the next `copies` nodes after it that are still there (`live`), never
/// the producer itself; fewer when fewer are left.
std::vector<std::uint32_t> copy_holders(std::uint32_t producer, const std::vector<bool>& live,
                                        std::uint32_t copies);

/// The CopyPiece frames carrying a copy of a piece, in chunks of at most `chunk_bytes`, for a
/// holder keeping the newest `retain` checkpoints.
std::vector<zmq::message_t> copy_piece_frames(std::uint64_t checkpoint, std::uint32_t stage,
                                              std::uint32_t instance, std::string_view state,
                                              std::size_t chunk_bytes, std::uint32_t retain);
zmq::message_t copy_record_frame(std::uint64_t id, const std::string& job, const std::string& plan,
                                 std::uint32_t pieces);
zmq::message_t copies_request_frame(const std::string& job);
zmq::message_t drop_copies_frame(const std::string& job);
zmq::message_t fetch_copies_frame(std::uint64_t id, const std::string& job,
                                  const std::string& plan);
/// What a HeldCopies frame says: the node's completed checkpoints with their pieces, or why it
/// could not read them.
struct held_copies {
  std::string node;
  std::vector<persistence::held_checkpoint> checkpoints;
  std::string error;
};
held_copies read_held(const wire::HeldCopies& h);

/// A node's copies of checkpoint pieces, in the checkpoint store `dir` (opened at the first
/// copy). Every store call runs on a write_queue of its own, so the node's I/O thread (its
/// dispatch and heartbeats) never waits for the disk; answers go out through `answer`, from that
/// thread. One run's copies at a time: a copy of a checkpoint no newer than the newest kept
/// starts afresh (a new run counts its ids from where its coordinator's store was).
class copy_keeper {
 public:
  /// Sends `msg` to the control peer with routing id `to`; called from the keeper's thread.
  using answer = std::function<void(std::string to, zmq::message_t msg)>;
  /// `dir` empty: the node has no data directory, and refuses copies. `chunk_bytes`: of the
  /// StatePiece frames a fetch answers with.
  copy_keeper(std::string node, std::string dir, std::size_t chunk_bytes, answer a);
  ~copy_keeper();
  copy_keeper(const copy_keeper&) = delete;
  copy_keeper& operator=(const copy_keeper&) = delete;

  /// A chunk of a copy; throws bad_chunk when it does not continue its piece.
  void on_piece(const wire::CopyPiece& f);
  /// Records checkpoint `f.id()` once its pieces are durable, then answers CopyDurable.
  void on_record(std::string_view from, const wire::CopyRecord& f);
  /// Answers HeldCopies: what it keeps of `job` (empty: of any job).
  void on_request(std::string_view from, const std::string& job);
  /// Removes its copies when they are of job `f.job()` (its run finished), then answers like
  /// on_request.
  void on_drop(std::string_view from, const wire::DropCopies& f);
  /// Answers with the checkpoint's pieces (StatePiece frames) and CopiesFetched.
  void on_fetch(std::string_view from, const wire::FetchCopies& f);
  /// Returns once every store call so far ran (tests).
  void drain();

 private:
  persistence::checkpoint_store& store(std::uint32_t retain);
  /// No store was opened and its directory does not exist (asking creates nothing).
  bool keeps_nothing() const;
  /// A HeldCopies frame of what the store keeps of `job` (empty: of any job); keeper's thread.
  zmq::message_t held_frame(const std::string& job);

  std::string node_;
  std::string dir_;
  std::size_t chunk_bytes_;
  answer answer_;
  piece_assembler assembler_;  // I/O thread
  // the keeper's thread only:
  std::unique_ptr<persistence::checkpoint_store> store_;
  std::uint32_t retain_ = 0;
  std::map<std::uint64_t, std::string> failed_;  // checkpoint -> why a copy of it failed
  std::unique_ptr<detail::write_queue> queue_;    // last: stops first
};

}  // namespace tidemark::net
