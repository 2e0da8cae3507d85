// Blob containers (WiredTiger blob store, directory) and the upload/download tasks over them.
#include "tidemark/riot/io/blob_tasks.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <limits>
#include <fstream>
#include <sstream>
#include <system_error>

namespace tidemark::riot::io {

namespace fs = std::filesystem;

namespace {

class wiredtiger_container final : public blob_container {
 public:
  explicit wiredtiger_container(const wiredtiger_blobs& t) : store_(t.conn, t.store, t.level) {}
  void put(std::string_view name, std::string_view bytes) override { store_.put(name, bytes); }
  std::optional<std::string> get(std::string_view name) override { return store_.get(name); }
  std::vector<std::string> list(std::string_view prefix) override {
    std::vector<std::string> names;
    for (auto& b : store_.list(prefix)) names.push_back(std::move(b.name));
    return names;
  }
  bool remove(std::string_view name) override { return store_.remove(name); }
  std::string describe() const override { return "blob store " + store_.name(); }

 private:
  persistence::blob_store store_;
};

void sync_path(const fs::path& p, int flags) {
  int fd = ::open(p.c_str(), flags | O_CLOEXEC);
  if (fd < 0 || ::fsync(fd) != 0) {
    int err = errno;
    if (fd >= 0) ::close(fd);
    throw fs::filesystem_error("fsync", p, std::error_code{err, std::generic_category()});
  }
  ::close(fd);
}

class directory_container final : public blob_container {
 public:
  explicit directory_container(const directory_blobs& t) : dir_(t.directory), sync_(t.sync) {
    fs::create_directories(dir_);
  }

  void put(std::string_view name, std::string_view bytes) override {
    auto target = path_of(name);
    auto tmp = dir_ / ("." + std::string{name} + ".part");
    {
      std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
      out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
      out.close();
      if (!out)
        throw fs::filesystem_error("writing blob", tmp, std::error_code{errno, std::generic_category()});
    }
    if (sync_) sync_path(tmp, O_RDONLY);
    fs::rename(tmp, target);
    if (sync_) sync_path(dir_, O_RDONLY | O_DIRECTORY);
  }

  std::optional<std::string> get(std::string_view name) override {
    auto p = path_of(name);
    std::ifstream in(p, std::ios::binary);
    if (!in) {
      if (!fs::exists(p)) return std::nullopt;
      throw fs::filesystem_error("reading blob", p, std::error_code{errno, std::generic_category()});
    }
    std::ostringstream bytes;
    bytes << in.rdbuf();
    return std::move(bytes).str();
  }

  std::vector<std::string> list(std::string_view prefix) override {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(dir_)) {
      auto name = e.path().filename().string();
      if (e.is_regular_file() && name[0] != '.' && name.compare(0, prefix.size(), prefix) == 0)
        names.push_back(std::move(name));
    }
    std::sort(names.begin(), names.end());
    return names;
  }

  bool remove(std::string_view name) override { return fs::remove(path_of(name)); }

  std::string describe() const override { return "blob directory " + dir_.string(); }

 private:
  fs::path path_of(std::string_view name) const {
    // Plain names only: a blob name must not reach outside the directory or hide as a temp file.
    if (name.empty() || name[0] == '.' || name.find('/') != std::string_view::npos ||
        name.find('\0') != std::string_view::npos)
      throw std::invalid_argument(describe() + ": blob name " + persistence::quote_bytes(name) +
                                  " is invalid: use a file name without '/' that does not start with '.'");
    return dir_ / std::string{name};
  }

  fs::path dir_;
  bool sync_;
};

}  // namespace

std::unique_ptr<blob_container> open_blob_container(const blob_target& target) {
  if (auto* wt = std::get_if<wiredtiger_blobs>(&target)) return std::make_unique<wiredtiger_container>(*wt);
  return std::make_unique<directory_container>(std::get<directory_blobs>(target));
}

// ---- blob_upload ----

blob_upload::blob_upload(blob_upload_config config)
    : prefix_(std::move(config.name_prefix)), container_(open_blob_container(config.target)) {}

std::optional<std::string> blob_upload::process(const std::string& file_path) {
  auto blob = read(file_path);
  if (!blob || !put(*blob)) return std::nullopt;
  return blob->first;
}

std::optional<named_blob> blob_upload::read(const std::string& file_path) {
  std::ifstream in(file_path, std::ios::binary);
  if (!in) {
    errors_.report({"blob_upload to " + container_->describe() + ": cannot read file " + file_path});
    return std::nullopt;
  }
  std::ostringstream bytes;
  bytes << in.rdbuf();
  return named_blob{prefix_ + fs::path(file_path).filename().string(), bytes.str()};
}

bool blob_upload::put(const named_blob& blob) {
  try {
    container_->put(blob.first, blob.second);
  } catch (const std::exception& e) {
    errors_.report({"blob_upload of " + blob.first + " to " + container_->describe() + ": " +
                    e.what()});
    return false;
  }
  bytes_ += blob.second.size();
  return true;
}

// ---- blob_upload_sink ----

blob_upload_sink::blob_upload_sink(blob_upload_config config) : task_(std::move(config)) {}

void blob_upload_sink::process(std::size_t, batch_ptr in, emitter&) {
  for (const auto& path : static_cast<batch<std::string>&>(*in).values) {
    if (!checkpointing_) {
      put_ += task_.process(path).has_value();
      continue;
    }
    if (auto blob = task_.read(path)) pending_.push_back(std::move(*blob));
  }
}

void blob_upload_sink::finish(emitter&) {
  if (!checkpointing_) return;
  staged_.emplace_back(std::numeric_limits<std::uint64_t>::max(), std::move(pending_));
  pending_.clear();
  commit(staged_.size());
}

void blob_upload_sink::snapshot(state_writer& out) {
  checkpointing_ = true;
  if (!pending_.empty()) staged_.emplace_back(out.checkpoint(), std::move(pending_));
  pending_.clear();
  out.write(staged_);
}

void blob_upload_sink::restore(state_reader& in) {
  checkpointing_ = true;
  in.read(staged_);
  commit(staged_.size());  // every staged checkpoint is <= the restored one, so complete
}

void blob_upload_sink::on_checkpoint_complete(std::uint64_t id) {
  std::size_t n = 0;
  while (n < staged_.size() && staged_[n].first <= id) ++n;
  commit(n);
}

void blob_upload_sink::commit(std::size_t n) {
  for (std::size_t i = 0; i < n; ++i)
    for (const auto& blob : staged_[i].second) put_ += task_.put(blob);
  staged_.erase(staged_.begin(), staged_.begin() + static_cast<std::ptrdiff_t>(n));
}

void blob_upload_sink::add_metrics(std::map<std::string, double>& out) const {
  out["task_errors"] = static_cast<double>(task_.errors().count());
  out["blobs_put"] = static_cast<double>(put_);
  std::size_t staged = pending_.size();
  for (const auto& s : staged_) staged += s.second.size();
  out["blobs_staged"] = static_cast<double>(staged);
}

// ---- blob_download ----

blob_download::blob_download(blob_download_config config)
    : container_(open_blob_container(config.target)) {}

std::optional<std::string> blob_download::process(std::string_view name) {
  try {
    auto bytes = container_->get(name);
    if (!bytes) errors_.report({"blob_download from " + container_->describe() + ": no blob " +
                                persistence::quote_bytes(name)});
    return bytes;
  } catch (const std::exception& e) {
    errors_.report({"blob_download of " + persistence::quote_bytes(name) + " from " + container_->describe() +
                    ": " + e.what()});
    return std::nullopt;
  }
}

}  // namespace tidemark::riot::io
