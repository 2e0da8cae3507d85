// Where completed checkpoints live: the state piece of every (stage, instance) with a CRC-32, and
// one record per completed checkpoint, in a WiredTiger database whose commits are fsynced. A
// restore takes the newest checkpoint whose pieces are all present and intact.
//
// Tables (raw bytes, logged; integers big-endian so keys sort by id):
//   checkpoint.records  id(8)                                 -> the record and its piece list
//   checkpoint.pieces   id(8) stage(4) instance(4)            -> size(8) crc32(4) chunks(8)
//   checkpoint.chunks   id(8) stage(4) instance(4) chunk(8)   -> at most chunk_size bytes
//   checkpoint.meta     "next_id"                             -> id(8), kept across clear()
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tidemark/core/codec.hpp"
#include "tidemark/persistence/wiredtiger.hpp"

namespace tidemark::persistence {

/// One completed checkpoint.
struct checkpoint_record {
  std::uint64_t id = 0;
  std::string job;                ///< job name
  std::string plan;               ///< fingerprint of the physical plan the pieces belong to
  std::uint32_t pieces = 0;       ///< stage instances that wrote a piece
  std::uint64_t bytes = 0;        ///< total piece bytes
  std::int64_t completed_ms = 0;  ///< wall clock (ms since epoch) at completion
  double duration_ms = 0;         ///< start of the checkpoint to its completion
  double alignment_ms = 0;        ///< longest barrier alignment of an instance
  /// The nodes that hold a copy of the checkpoint's pieces (the coordinator's record, with
  /// `checkpoint: {copies: N}` in the cluster file); empty elsewhere.
  std::vector<std::string> holders;
  TIDEMARK_FIELDS(id, job, plan, pieces, bytes, completed_ms, duration_ms, alignment_ms, holders)
};

/// A completed checkpoint and the (stage, instance) of every piece it holds.
struct held_checkpoint {
  checkpoint_record record;
  std::vector<std::pair<std::uint32_t, std::uint32_t>> pieces;
};

/// A checkpoint read back for a restore: its record and one piece per (stage, instance).
struct loaded_checkpoint {
  checkpoint_record record;  ///< record.id == 0 when no checkpoint is usable
  std::map<std::pair<std::uint32_t, std::uint32_t>, std::string> pieces;
  /// Newer completed checkpoints of the job that could not be used, newest first, one line each
  /// naming the checkpoint, the piece and why, e.g. "checkpoint 7: piece stage 2 instance 1 is
  /// corrupt (CRC-32 mismatch)", "... is missing", or "checkpoint 7: written for another plan".
  std::vector<std::string> rejected;
};

/// Completed checkpoints of one job in a WiredTiger database (logged, commits synced:
/// durability::power_loss). Used from one thread at a time. Failed storage calls throw
/// storage_error; misuse (a record announcing pieces that were not put) throws
/// std::invalid_argument.
class checkpoint_store {
 public:
  /// Pieces are cut into chunks of this many bytes, and written in transactions of
  /// `chunks_per_transaction` chunks, so a 100 MB piece never has to fit WiredTiger's cache.
  static constexpr std::size_t chunk_size = std::size_t{1} << 20;
  static constexpr std::size_t chunks_per_transaction = 8;

  /// Opens (creating when missing) the database in directory `dir`. `retain` >= 1 completed
  /// checkpoints are kept. Throws storage_error when the directory cannot be opened (another
  /// process has it open, for one).
  explicit checkpoint_store(const std::string& dir, std::uint32_t retain = 3);
  /// Uses an open connection, which must have the log enabled (else std::invalid_argument), so
  /// that a job's tables and its checkpoints can share one data directory.
  explicit checkpoint_store(std::shared_ptr<wt_connection> conn, std::uint32_t retain = 3);

  /// Stores the state of (stage, instance) for checkpoint `id` with a CRC-32 (zlib), replacing a
  /// piece put before under the same names; durable on return (survives kill -9 and power loss).
  /// Throws storage_error when a write fails (a full or failing disk): the piece is then absent
  /// or partly written without its header, which counts as absent.
  void put_piece(std::uint64_t id, std::uint32_t stage, std::uint32_t instance,
                 std::string_view bytes);
  /// Records checkpoint `r.id` as complete; durable on return. `r.pieces` must equal the number
  /// of pieces put for `r.id` (else std::invalid_argument, nothing recorded); `r.bytes` is
  /// replaced by their total size. Then keeps only the newest `retain` completed checkpoints and
  /// drops the pieces of checkpoints older than the newest completed one that never completed.
  /// Throws storage_error only when the record is not durable; a failed removal is left for the
  /// next complete(), as after a crash.
  void complete(const checkpoint_record& r);
  /// Completed checkpoints, oldest first.
  std::vector<checkpoint_record> list();
  /// Completed checkpoints with the pieces each holds, oldest first (a node's copies: a holder
  /// keeps only some pieces of a checkpoint).
  std::vector<held_checkpoint> held();
  /// The newest completed checkpoint of `job` with plan fingerprint `plan` whose pieces are all
  /// present and intact (CRC-32), with every piece read back. When none is usable, record.id is 0
  /// and pieces is empty. Either way `rejected` says why each newer checkpoint of `job` was
  /// passed over. Checkpoints of other jobs are ignored. With `newest`, checkpoints after it are
  /// not considered (a fetch of checkpoint `newest` from a node's copies).
  loaded_checkpoint latest(std::string_view job, std::string_view plan,
                           std::uint64_t newest = UINT64_MAX);
  /// The id the next checkpoint should use: one more than any id that has a piece or a record,
  /// or that had one before the last clear(), so ids never repeat in a database, not even after
  /// a crash or a fresh start (sinks rely on it to tell committed checkpoints apart).
  std::uint64_t next_id();
  /// Removes every checkpoint and piece (a fresh start); next_id() goes on counting.
  void clear();

 private:
  struct piece_header {
    std::uint64_t size;
    std::uint32_t crc;
    std::uint64_t chunks;
  };
  void remove_piece(std::string_view piece_key, const piece_header& h);
  void remove_old_checkpoints();
  std::map<std::string, piece_header> pieces_with_prefix(std::string_view prefix);
  // The piece's bytes, or a reason ("is missing", "is corrupt (...)") why they are unusable.
  bool read_piece(std::string_view piece_key, std::string& bytes, std::string& why);
  std::uint64_t last_id(wt_cursor& c);

  std::uint32_t retain_;
  wt_session session_;
  wt_cursor records_;
  wt_cursor pieces_;
  wt_cursor chunks_;
  wt_cursor meta_;
};

}  // namespace tidemark::persistence
