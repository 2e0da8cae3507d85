// Zip archives through libzip; "remote" archives are published by copy + fsync + rename so a
// reader on the mount never sees a partial file.
#include "tidemark/riot/io/zip_tasks.hpp"

#include <fcntl.h>
#include <unistd.h>
#include <zip.h>

#include <cerrno>
#include <system_error>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace tidemark::riot::io {

namespace fs = std::filesystem;

namespace {

void fsync_file(const fs::path& p, int flags) {
  int fd = ::open(p.c_str(), flags | O_CLOEXEC);
  int rc = fd < 0 ? -1 : ::fsync(fd);
  int err = errno;
  if (fd >= 0) ::close(fd);
  if (rc != 0) throw std::runtime_error("fsync " + p.string() + ": " + std::error_code{err, std::generic_category()}.message());
}

}  // namespace

void write_zip(const std::string& path, const std::vector<zip_entry>& entries, int compression_level) {
  int code = 0;
  zip_t* archive = zip_open(path.c_str(), ZIP_CREATE | ZIP_TRUNCATE, &code);
  if (!archive) {
    zip_error_t error;
    zip_error_init_with_code(&error, code);
    std::string message = "zip archive " + path + ": cannot create: " + zip_error_strerror(&error);
    zip_error_fini(&error);
    throw std::runtime_error(message);
  }
  for (const auto& e : entries) {
    // The buffers must live until zip_close, which is below; libzip does not copy them.
    zip_source_t* source = zip_source_buffer(archive, e.bytes.data(), e.bytes.size(), 0);
    zip_int64_t index = -1;
    if (source) index = zip_file_add(archive, e.name.c_str(), source, ZIP_FL_ENC_UTF_8 | ZIP_FL_OVERWRITE);
    if (index < 0 || zip_set_file_compression(archive, static_cast<zip_uint64_t>(index), ZIP_CM_DEFLATE,
                                              static_cast<zip_uint32_t>(compression_level)) < 0) {
      if (source && index < 0) zip_source_free(source);
      std::string message = "zip archive " + path + ": cannot add entry '" + e.name +
                            "': " + zip_strerror(archive);
      zip_discard(archive);
      throw std::runtime_error(message);
    }
  }
  if (zip_close(archive) != 0) {
    std::string message = std::string{"zip archive "} + path + ": cannot write: " + zip_strerror(archive);
    zip_discard(archive);
    throw std::runtime_error(message);
  }
}

zip_batch::zip_batch(zip_batch_config config) : config_(std::move(config)) {
  if (config_.max_entries == 0) throw std::invalid_argument("zip_batch: max_entries must be > 0");
  if (config_.compression_level < 1 || config_.compression_level > 9)
    throw std::invalid_argument("zip_batch: compression_level must be 1..9");
  fs::create_directories(config_.directory);
  if (!config_.staging_directory.empty()) fs::create_directories(config_.staging_directory);
  pending_.reserve(config_.max_entries);
}

std::optional<std::string> zip_batch::process(zip_entry entry) {
  pending_.push_back(std::move(entry));
  if (pending_.size() < config_.max_entries) return std::nullopt;
  return write_archive();
}

void zip_batch::resume(std::vector<zip_entry> gathered, std::uint64_t archives_written) {
  if (gathered.size() >= config_.max_entries)
    throw std::invalid_argument("zip_batch: " + std::to_string(gathered.size()) +
                                " gathered entries would have completed an archive of " +
                                std::to_string(config_.max_entries));
  pending_ = std::move(gathered);
  archives_ = archives_written;
}

std::optional<std::string> zip_batch::process_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    errors_.report({"zip_batch into " + config_.directory + ": cannot read file " + path});
    return std::nullopt;
  }
  std::ostringstream bytes;
  bytes << in.rdbuf();
  return process(zip_entry{fs::path(path).filename().string(), std::move(bytes).str()});
}

std::optional<std::string> zip_batch::finish() {
  if (pending_.empty()) return std::nullopt;
  return write_archive();
}

std::optional<std::string> zip_batch::write_archive() {
  auto name = config_.archive_prefix + "-" + std::to_string(archives_) + ".zip";
  auto target = fs::path(config_.directory) / name;
  std::vector<zip_entry> entries;
  entries.swap(pending_);
  pending_.reserve(config_.max_entries);
  try {
    if (config_.staging_directory.empty()) {
      write_zip(target.string(), entries, config_.compression_level);  // libzip itself writes a temp file and renames it
    } else {
      auto staged = fs::path(config_.staging_directory) / name;
      write_zip(staged.string(), entries, config_.compression_level);
      auto part = fs::path(config_.directory) / ("." + name + ".part");
      fs::copy_file(staged, part, fs::copy_options::overwrite_existing);
      fsync_file(part, O_RDONLY);
      fs::rename(part, target);
      fsync_file(config_.directory, O_RDONLY | O_DIRECTORY);
      fs::remove(staged);
    }
  } catch (const std::exception& e) {
    errors_.report({std::string{"zip_batch: "} + e.what() + " (" + std::to_string(entries.size()) +
                    " entries lost)"});
    return std::nullopt;
  }
  ++archives_;
  return target.string();
}

}  // namespace tidemark::riot::io
