// RIoTBench's blob upload and download (models from TRAIN, zipped charts from STATS) over a
// container that is either a WiredTiger blob store or a plain directory (for example one on a
// mount that other nodes read), instead of cloud blob storage.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "tidemark/core/error.hpp"
#include "tidemark/core/operator.hpp"
#include "tidemark/core/state.hpp"
#include "tidemark/persistence/blob_store.hpp"

namespace tidemark::riot::io {

/// Where blobs live. put() replaces a blob atomically: readers see the old or the new one.
/// Methods throw (storage_error, std::filesystem::filesystem_error, std::invalid_argument) with
/// the container and blob named; one instance per thread.
class blob_container {
 public:
  virtual ~blob_container() = default;
  virtual void put(std::string_view name, std::string_view bytes) = 0;
  virtual std::optional<std::string> get(std::string_view name) = 0;
  /// Names starting with `prefix`, sorted.
  virtual std::vector<std::string> list(std::string_view prefix) = 0;
  virtual bool remove(std::string_view name) = 0;
  /// Says which container this is, for messages, e.g. "blob store models".
  virtual std::string describe() const = 0;
};

/// Blobs in a WiredTiger blob store.
struct wiredtiger_blobs {
  std::shared_ptr<persistence::wt_connection> conn;
  std::string store;
  persistence::durability level = persistence::durability::process_crash;
};

/// Blobs as files in a directory (created if missing). Names must be plain file names. A put
/// writes a temporary file and renames it over the target, so a reader sees the whole old blob or
/// the whole new one. With `sync` the file is fsynced before the rename and the directory after
/// it: the blob survives power loss. Without, it survives a crash of the process (the OS holds
/// it), as the stores' `process_crash` level; a power loss may lose the puts of the last seconds
/// or leave one of them empty.
struct directory_blobs {
  std::string directory;
  bool sync = true;
};

using blob_target = std::variant<wiredtiger_blobs, directory_blobs>;

/// Opens the container `target` describes; each parallel task instance opens its own.
std::unique_ptr<blob_container> open_blob_container(const blob_target& target);

struct blob_upload_config {
  blob_target target;
  std::string name_prefix{};  ///< prepended to the file's name to form the blob name
};

/// A blob to put: its name and bytes.
using named_blob = std::pair<std::string, std::string>;

/// Uploads a local file (a model, an archive) as blob "<name_prefix><file name>".
class blob_upload {
 public:
  explicit blob_upload(blob_upload_config config);
  /// The blob name, or nullopt (counted) when the file cannot be read or the upload fails.
  std::optional<std::string> process(const std::string& file_path);
  /// The two halves of process: the blob a file makes (nullopt, counted, when it cannot be read),
  /// and putting one (false, counted, when the upload fails).
  std::optional<named_blob> read(const std::string& file_path);
  bool put(const named_blob& blob);

  std::uint64_t bytes_uploaded() const noexcept { return bytes_; }
  const error_sink& errors() const noexcept { return errors_; }

 private:
  std::string prefix_;
  std::unique_ptr<blob_container> container_;
  std::uint64_t bytes_ = 0;
  error_sink errors_;
};

/// The upload sink of upload_blobs, one per instance. Without checkpoints each file is uploaded as
/// it arrives. Once the job checkpoints (the first barrier reached the sink), each file is read
/// as it arrives and its bytes are staged in the sink's snapshot; they are put when the checkpoint
/// covering them completes, and a restore puts again what its snapshot staged (a put replaces the
/// blob by name, so the repeat leaves what the first put left). So a blob appears only once the
/// checkpoint covering it completed, with the bytes its file had when it reached the sink, and a
/// restored job leaves the container as a run without faults does. The end of the input puts what
/// no checkpoint covers yet.
class blob_upload_sink final : public operator_logic {
 public:
  explicit blob_upload_sink(blob_upload_config config);
  void process(std::size_t input, batch_ptr in, emitter& out) override;
  void finish(emitter& out) override;
  void snapshot(state_writer& out) override;
  void restore(state_reader& in) override;
  void on_checkpoint_complete(std::uint64_t id) override;
  /// task_errors, blobs_put, blobs_staged.
  void add_metrics(std::map<std::string, double>& out) const override;

 private:
  void commit(std::size_t n);  // puts the first `n` staged checkpoints' blobs
  blob_upload task_;
  bool checkpointing_ = false;
  std::vector<named_blob> pending_;  // since the last snapshot
  std::vector<std::pair<std::uint64_t, std::vector<named_blob>>> staged_;  // per checkpoint
  std::uint64_t put_ = 0;
};

struct blob_download_config {
  blob_target target;
};

/// Downloads a named blob's bytes (PRED fetching a new model).
class blob_download {
 public:
  explicit blob_download(blob_download_config config);
  /// The bytes, or nullopt (counted) when the blob is missing or the read fails.
  std::optional<std::string> process(std::string_view name);

  const error_sink& errors() const noexcept { return errors_; }

 private:
  std::unique_ptr<blob_container> container_;
  error_sink errors_;
};

}  // namespace tidemark::riot::io
