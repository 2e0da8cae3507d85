// A fresh directory under $TMPDIR (or /tmp) for one test, removed with everything in it when the
// test ends, so tests that write real files (WiredTiger, archives, plots) never share state.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <string>

namespace tidemark::test {

class temp_dir {
 public:
  explicit temp_dir(const std::string& tag = "tidemark") {
    const char* base = std::getenv("TMPDIR");  // NOLINT(concurrency-mt-unsafe): read at test start
    std::string pattern = std::string{base ? base : "/tmp"} + "/" + tag + "-XXXXXX";
    if (!mkdtemp(pattern.data())) throw std::runtime_error("cannot create a temp dir " + pattern);
    path_ = pattern;
  }
  ~temp_dir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  temp_dir(const temp_dir&) = delete;
  temp_dir& operator=(const temp_dir&) = delete;

  const std::filesystem::path& path() const noexcept { return path_; }
  /// A path inside the directory.
  std::string operator/(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

}  // namespace tidemark::test
