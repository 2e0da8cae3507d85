// Blob upload / download against both containers (WiredTiger blob store and a directory) with
// real model and data files from the RIoTBench sample, and the counted errors of each.
#define BOOST_TEST_MODULE riot_blob_tasks
#include <boost/test/unit_test.hpp>

#include <fstream>
#include <sstream>

#include "../../support/environment.hpp"
#include "../../support/temp_dir.hpp"
#include "tidemark/riot/io/blob_tasks.hpp"

using namespace tidemark::riot::io;
using tidemark::persistence::wt_connection;
using tidemark::test::temp_dir;

namespace {

const std::string data_dir = tidemark::test::data_dir();

std::string file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// Runs `check` once with a WiredTiger blob target and once with a directory target.
template <class Check>
void for_each_target(const temp_dir& dir, Check check) {
  auto conn = wt_connection::open(dir / "", "log=(enabled=true)");
  check(blob_target{wiredtiger_blobs{conn, "models"}}, "blob store models");
  check(blob_target{directory_blobs{dir / "blobs"}}, "blob directory " + (dir / "blobs"));
}

}  // namespace

BOOST_AUTO_TEST_CASE(uploaded_files_download_byte_for_byte) {
  temp_dir dir;
  for_each_target(dir, [&](const blob_target& target, const std::string& where) {
    BOOST_TEST_CONTEXT(where) {
      blob_upload upload{{target, "TAXI-"}};
      auto name = upload.process(data_dir + "/linearregression.arff");
      BOOST_TEST(name.value() == "TAXI-linearregression.arff");
      BOOST_TEST(upload.process(data_dir + "/DecisionTreeClassify-SYS.arff").value() ==
                 "TAXI-DecisionTreeClassify-SYS.arff");
      BOOST_TEST(upload.bytes_uploaded() == 8370u + 44165u);

      blob_download download{{target}};
      BOOST_TEST(download.process("TAXI-linearregression.arff").value() ==
                 file_bytes(data_dir + "/linearregression.arff"));
      BOOST_TEST(download.errors().count() == 0u);
      BOOST_TEST((open_blob_container(target)->list("TAXI-") ==
                  std::vector<std::string>{"TAXI-DecisionTreeClassify-SYS.arff", "TAXI-linearregression.arff"}));
    }
  });
}

BOOST_AUTO_TEST_CASE(missing_files_and_blobs_are_counted_errors) {
  temp_dir dir;
  for_each_target(dir, [&](const blob_target& target, const std::string& where) {
    BOOST_TEST_CONTEXT(where) {
      blob_upload upload{{target, ""}};
      BOOST_TEST(!upload.process(dir / "absent.model").has_value());
      BOOST_TEST(upload.errors().last() == "blob_upload to " + where + ": cannot read file " + (dir / "absent.model"));

      blob_download download{{target}};
      BOOST_TEST(!download.process("absent.model").has_value());
      BOOST_TEST(download.errors().last() == "blob_download from " + where + ": no blob \"absent.model\"");
      BOOST_TEST(download.errors().count() == 1u);
    }
  });
}

BOOST_AUTO_TEST_CASE(directory_blobs_stay_inside_their_directory) {
  temp_dir dir;
  auto blobs = open_blob_container(directory_blobs{dir / "blobs"});
  BOOST_CHECK_THROW(blobs->put("../escape", "x"), std::invalid_argument);
  BOOST_CHECK_THROW(blobs->put(".hidden", "x"), std::invalid_argument);
  blobs->put("a.zip", "first");
  blobs->put("a.zip", "second");  // replaced through a temporary file and rename
  BOOST_TEST(blobs->get("a.zip").value() == "second");
  BOOST_TEST((blobs->list("") == std::vector<std::string>{"a.zip"}));
  BOOST_TEST(blobs->remove("a.zip"));
  BOOST_TEST(!blobs->get("a.zip").has_value());

  blob_download download{{directory_blobs{dir / "blobs"}}};
  BOOST_TEST(!download.process("../etc/passwd").has_value());
  BOOST_TEST(download.errors().last().find("blob name \"../etc/passwd\" is invalid") != std::string::npos);
}
