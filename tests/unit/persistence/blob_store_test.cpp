// The WiredTiger blob store on real files: a multi-megabyte blob split into chunks and read back
// after reopening, replacement that drops surplus chunks, listing, removal and bad names.
#define BOOST_TEST_MODULE blob_store
#include <boost/test/unit_test.hpp>

#include <cstdint>
#include <random>
#include <string>

#include "../../support/temp_dir.hpp"
#include "tidemark/persistence/blob_store.hpp"
#include "tidemark/persistence/table_store.hpp"

using namespace tidemark::persistence;
using tidemark::test::temp_dir;

namespace {

const std::string logged = "log=(enabled=true)";

std::string random_bytes(std::size_t n, std::uint32_t seed) {
  std::mt19937 gen{seed};
  std::string s(n, '\0');
  for (auto& c : s) c = static_cast<char>(gen() & 0xff);
  return s;
}

// Chunks stored for all blobs, counted through the chunk table itself.
std::size_t chunk_rows(const std::shared_ptr<wt_connection>& conn, const std::string& store) {
  return table_store{conn, store + ".chunks"}.prefix("").size();
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_multi_megabyte_blob_is_chunked_and_read_back_after_reopening) {
  temp_dir dir;
  const auto model = random_bytes(5 * 1024 * 1024 + 123, 42);  // 21 chunks of 256 KiB
  {
    auto conn = wt_connection::open(dir.path(), logged);
    blob_store blobs{conn, "models"};
    blobs.put("TAXI-MLR-1000.model", model);
    BOOST_TEST(chunk_rows(conn, "models") == 21u);
  }
  auto conn = wt_connection::open(dir.path(), logged);
  blob_store blobs{conn, "models"};
  BOOST_TEST(blobs.size("TAXI-MLR-1000.model").value() == model.size());
  auto back = blobs.get("TAXI-MLR-1000.model");
  BOOST_REQUIRE(back.has_value());
  BOOST_TEST((*back == model));
}

BOOST_AUTO_TEST_CASE(replacing_a_blob_with_a_smaller_one_drops_its_surplus_chunks) {
  temp_dir dir;
  auto conn = wt_connection::open(dir.path(), logged);
  blob_store blobs{conn, "charts", durability::process_crash, 1000};
  blobs.put("a.svg", random_bytes(4500, 1));  // 5 chunks
  blobs.put("b.svg", random_bytes(1000, 2));  // 1 chunk, exactly full
  BOOST_TEST(chunk_rows(conn, "charts") == 6u);
  const auto smaller = random_bytes(1001, 3);  // 2 chunks
  blobs.put("a.svg", smaller);
  BOOST_TEST(chunk_rows(conn, "charts") == 3u);
  BOOST_TEST((blobs.get("a.svg").value() == smaller));
  blobs.put("empty", "");
  BOOST_TEST(blobs.get("empty").value().empty());
  BOOST_TEST(chunk_rows(conn, "charts") == 3u);
}

BOOST_AUTO_TEST_CASE(list_is_ordered_by_name_and_filtered_by_prefix) {
  temp_dir dir;
  auto conn = wt_connection::open(dir.path(), logged);
  blob_store blobs{conn, "zips", durability::checkpoint};
  blobs.put("stats-2.zip", "22");
  blobs.put("stats-10.zip", "1010");
  blobs.put("other.zip", "o");
  BOOST_TEST((blobs.list("stats-") ==
              std::vector<blob_info>{{"stats-10.zip", 4}, {"stats-2.zip", 2}}));
  BOOST_TEST(blobs.list().size() == 3u);
  BOOST_TEST(blobs.remove("stats-10.zip"));
  BOOST_TEST(!blobs.remove("stats-10.zip"));
  BOOST_TEST(!blobs.get("stats-10.zip").has_value());
  BOOST_TEST(!blobs.size("stats-10.zip").has_value());
  BOOST_TEST((blobs.list() == std::vector<blob_info>{{"other.zip", 1}, {"stats-2.zip", 2}}));
}

BOOST_AUTO_TEST_CASE(bad_store_and_blob_names_are_rejected) {
  temp_dir dir;
  auto conn = wt_connection::open(dir.path(), logged);
  BOOST_CHECK_THROW((blob_store{conn, "no/slash"}), std::invalid_argument);
  BOOST_CHECK_THROW((blob_store{conn, "ok", durability::process_crash, 0}), std::invalid_argument);
  blob_store blobs{conn, "ok"};
  BOOST_CHECK_EXCEPTION(blobs.put(std::string{"a\0b", 3}, "x"), std::invalid_argument, [](const auto& e) {
    return std::string{e.what()} ==
           "blob store ok: blob name \"a\\x00b\" is invalid: use a non-empty name without NUL bytes";
  });
  BOOST_CHECK_THROW(blobs.put("", "x"), std::invalid_argument);
}
