// Zip batches read back with libzip: entry names, counts and exact contents, in local mode and
// in "remote" mode (staged locally, then moved into the target directory), and resumed from a
// checkpoint.
#define BOOST_TEST_MODULE riot_zip_tasks
#include <boost/test/unit_test.hpp>

#include <zip.h>

#include <filesystem>
#include <map>

#include "../../support/temp_dir.hpp"
#include "sample_data.hpp"
#include "tidemark/riot/io/zip_tasks.hpp"

using namespace tidemark::riot::io;
using tidemark::test::temp_dir;
namespace fs = std::filesystem;

namespace {

// Every entry of the archive at `path`: name -> bytes, read through libzip.
std::map<std::string, std::string> read_zip(const std::string& path) {
  int error = 0;
  zip_t* archive = zip_open(path.c_str(), ZIP_RDONLY | ZIP_CHECKCONS, &error);
  BOOST_REQUIRE_MESSAGE(archive, "cannot open " << path << " (libzip error " << error << ")");
  std::map<std::string, std::string> entries;
  for (zip_int64_t i = 0; i < zip_get_num_entries(archive, 0); ++i) {
    zip_stat_t st;
    zip_stat_index(archive, i, 0, &st);
    BOOST_TEST(st.comp_method == ZIP_CM_DEFLATE);
    BOOST_TEST(st.comp_size < st.size);  // SenML text and file contents compress
    std::string bytes(st.size, '\0');
    zip_file_t* f = zip_fopen_index(archive, i, 0);
    BOOST_REQUIRE(f);
    BOOST_REQUIRE(zip_fread(f, bytes.data(), st.size) == static_cast<zip_int64_t>(st.size));
    zip_fclose(f);
    entries[st.name] = bytes;
  }
  zip_close(archive);
  return entries;
}

// Seven entries, one per CITY event: "chart<ts>-<n>.svg" holding the event's line.
std::vector<zip_entry> city_entries() {
  std::vector<zip_entry> entries;
  int n = 0;
  for (auto& e : tidemark::test::city_events(7))
    entries.push_back({"chart" + std::to_string(e.ts) + "-" + std::to_string(n++) + ".svg", e.line});
  return entries;
}

std::vector<std::string> names_in(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace

BOOST_AUTO_TEST_CASE(local_zip_writes_an_archive_per_max_entries) {
  temp_dir dir;
  zip_batch zip{{dir / "out", "stats", 3}};
  auto entries = city_entries();
  std::vector<std::string> archives;
  for (std::size_t i = 0; i < entries.size(); ++i) {
    auto written = zip.process(entries[i]);
    BOOST_TEST(written.has_value() == (i == 2 || i == 5));
    if (written) archives.push_back(*written);
  }
  archives.push_back(zip.finish().value());
  BOOST_TEST(!zip.finish().has_value());
  BOOST_TEST((archives == std::vector<std::string>{dir / "out/stats-0.zip", dir / "out/stats-1.zip",
                                                    dir / "out/stats-2.zip"}));
  BOOST_TEST(zip.archives_written() == 3u);
  for (std::size_t a = 0; a < 3; ++a) {
    auto contents = read_zip(archives[a]);
    BOOST_TEST(contents.size() == (a < 2 ? 3u : 1u));
    for (std::size_t i = a * 3; i < std::min<std::size_t>(a * 3 + 3, 7); ++i)
      BOOST_TEST(contents.at(entries[i].name) == entries[i].bytes);
  }
}

BOOST_AUTO_TEST_CASE(remote_zip_appears_complete_in_the_target_directory) {
  temp_dir dir;
  zip_batch zip{{dir / "mnt/node2", "remote", 2, dir / "staging"}};
  BOOST_TEST(!zip.process_file(tidemark::test::data_dir() + "/city-metadata.txt").has_value());
  auto path = zip.process_file(tidemark::test::data_dir() + "/linearregression.arff");
  BOOST_TEST(path.value() == dir / "mnt/node2/remote-0.zip");
  auto contents = read_zip(*path);
  BOOST_TEST(contents.size() == 2u);
  BOOST_TEST(contents.at("linearregression.arff").size() == 8370u);
  BOOST_TEST(contents.at("city-metadata.txt").size() == 91154u);
  BOOST_TEST((names_in(dir / "mnt/node2") == std::vector<std::string>{"remote-0.zip"}));
  BOOST_TEST(names_in(dir / "staging").empty());
}

BOOST_AUTO_TEST_CASE(bad_configurations_are_rejected) {
  temp_dir dir;
  BOOST_CHECK_THROW((zip_batch{{dir / "out", "x", 0}}), std::invalid_argument);
  zip_batch_config config{dir / "out", "x", 1};
  config.compression_level = 10;
  BOOST_CHECK_THROW(zip_batch{config}, std::invalid_argument);
}

BOOST_AUTO_TEST_CASE(unreadable_files_and_unwritable_archives_are_counted) {
  temp_dir dir;
  zip_batch zip{{dir / "out", "x", 1}};
  BOOST_TEST(!zip.process_file(dir / "absent.svg").has_value());
  BOOST_TEST(zip.errors().last() == "zip_batch into " + (dir / "out") + ": cannot read file " + (dir / "absent.svg"));
  fs::remove_all(dir / "out");
  fs::create_directories(dir / "out/x-0.zip/occupied");  // a directory where the archive should go
  BOOST_TEST(!zip.process({"a.txt", "a"}).has_value());
  BOOST_TEST(zip.errors().count() == 2u);
  BOOST_TEST(zip.errors().last().find("zip_batch: zip archive " + (dir / "out/x-0.zip")) == 0u);
  BOOST_TEST(zip.archives_written() == 0u);
}

BOOST_AUTO_TEST_CASE(a_resumed_zip_batch_writes_what_the_interrupted_one_would_have) {
  // archives of 3 from 7 entries, interrupted after entry 4 (archive 0 written, 1 gathering)
  temp_dir dir;
  auto entries = city_entries();
  std::vector<zip_entry> gathered;
  std::uint64_t written = 0;
  {
    zip_batch first{{dir / "out", "stats", 3}};
    for (std::size_t i = 0; i < 5; ++i) first.process(entries[i]);
    gathered = first.gathered();
    written = first.archives_written();
  }
  BOOST_TEST(gathered.size() == 2u);
  zip_batch second{{dir / "out", "stats", 3}};
  second.resume(gathered, written);
  BOOST_TEST(second.process(entries[5]).value() == dir / "out/stats-1.zip");
  second.process(entries[6]);
  BOOST_TEST(second.finish().value() == dir / "out/stats-2.zip");
  auto middle = read_zip(dir / "out/stats-1.zip");
  BOOST_TEST(middle.size() == 3u);
  for (std::size_t i = 3; i < 6; ++i) BOOST_TEST(middle.at(entries[i].name) == entries[i].bytes);
  BOOST_CHECK_THROW(second.resume(std::vector<zip_entry>(3), 0), std::invalid_argument);
}
