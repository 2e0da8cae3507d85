// RIoTBench's zip tasks: entries (charts, files) gathered into zip archives of a fixed number of
// entries (IO.ZIPBUFFER.MAX_FILES_COUNT). "Local" zip writes the archive into a local directory;
// "remote" zip builds it in a local staging directory and then moves it into a directory on a
// mounted path (another node's export), where it appears atomically and complete.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tidemark/core/codec.hpp"
#include "tidemark/core/error.hpp"

namespace tidemark::riot::io {

/// One file inside an archive.
struct zip_entry {
  std::string name;
  std::string bytes;
  TIDEMARK_FIELDS(name, bytes)
};

struct zip_batch_config {
  std::string directory;            ///< where finished archives go (created if missing)
  std::string archive_prefix = "batch";  ///< archives are named <prefix>-<n>.zip, n = 0, 1, ...
  std::size_t max_entries = 10;     ///< entries per archive
  /// Empty: "local" zip, written straight into `directory`. Otherwise "remote" zip: written here
  /// first, then copied into `directory` under a temporary name, fsynced and renamed.
  std::string staging_directory{};
  /// Deflate level 1 (fastest) .. 9 (smallest). SVG charts shrink about as well at 1 as at 6
  /// (java.util.zip's default, used by the originals) at several times the speed.
  int compression_level = 1;
};

/// Collects entries and writes an archive each time max_entries have arrived.
class zip_batch {
 public:
  explicit zip_batch(zip_batch_config config);

  /// Adds an entry; returns the archive's path when this entry completed one. Failures to
  /// write are counted in errors() and lose that archive's entries.
  std::optional<std::string> process(zip_entry entry);
  /// Adds the file at `path` as an entry named after its file name (counted error if unreadable).
  std::optional<std::string> process_file(const std::string& path);
  /// Writes the entries gathered so far as a last, shorter archive (nullopt when none).
  std::optional<std::string> finish();

  std::uint64_t archives_written() const noexcept { return archives_; }
  /// The entries gathered for the next archive (what a checkpoint saves with archives_written()).
  const std::vector<zip_entry>& gathered() const noexcept { return pending_; }
  /// Continues from a checkpoint: `gathered` entries waiting, `archives_written` archives done
  /// (the next one gets that number). Throws std::invalid_argument when `gathered` would have
  /// completed an archive.
  void resume(std::vector<zip_entry> gathered, std::uint64_t archives_written);
  const error_sink& errors() const noexcept { return errors_; }

 private:
  std::optional<std::string> write_archive();

  zip_batch_config config_;
  std::vector<zip_entry> pending_;
  std::uint64_t archives_ = 0;
  error_sink errors_;
};

/// Writes `entries` into a new zip archive at `path` (replacing it), deflated at
/// `compression_level` (1..9); throws std::runtime_error with libzip's message and the path on
/// failure.
void write_zip(const std::string& path, const std::vector<zip_entry>& entries, int compression_level = 1);

}  // namespace tidemark::riot::io
