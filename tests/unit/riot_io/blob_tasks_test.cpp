// Blob upload / download against both containers (WiredTiger blob store and a directory) with
// real model and data files from the RIoTBench sample, and the counted errors of each; the upload
// sink's two-phase commit with checkpoints.
#define BOOST_TEST_MODULE riot_blob_tasks
#include <boost/test/unit_test.hpp>

#include <fstream>
#include <map>
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

namespace {

/// Discards what a sink emits (it emits nothing).
struct no_output final : tidemark::emitter {
  void emit_watermark(tidemark::event_time) override {}
  void emit_idle(bool) override {}

 protected:
  void emit_on(std::uint32_t, tidemark::batch_ptr) override {}
};

tidemark::batch_ptr paths(std::vector<std::string> xs) {
  return std::make_unique<tidemark::batch<std::string>>(std::move(xs));
}

std::vector<std::uint8_t> snapshot_of(blob_upload_sink& sink, std::uint64_t id) {
  std::vector<std::uint8_t> bytes;
  tidemark::state_writer w{id, bytes};
  sink.snapshot(w);
  return bytes;
}

}  // namespace

// With checkpoints the sink puts a blob only once the checkpoint covering it completed; a restore
// puts again what its snapshot staged, so the container ends as after a run without faults, with
// the bytes each file had when it reached the sink.
BOOST_AUTO_TEST_CASE(with_checkpoints_blobs_appear_when_their_checkpoint_completes) {
  temp_dir dir;
  const auto model = dir / "model.bin";
  std::ofstream(model) << "first version";
  const blob_upload_config config{directory_blobs{dir / "blobs"}, "m-"};
  auto blobs = open_blob_container(config.target);
  no_output out;

  blob_upload_sink sink{config};
  (void)snapshot_of(sink, 1);  // the first barrier: the job checkpoints
  sink.process(0, paths({model}), out);
  BOOST_TEST(!blobs->get("m-model.bin"));  // staged, not put
  const auto taken = snapshot_of(sink, 2);
  std::ofstream(model) << "second version";  // the file changes after it reached the sink
  BOOST_TEST(!blobs->get("m-model.bin"));
  sink.on_checkpoint_complete(1);
  BOOST_TEST(!blobs->get("m-model.bin"));  // checkpoint 1 does not cover it
  sink.on_checkpoint_complete(2);
  BOOST_TEST(blobs->get("m-model.bin").value() == "first version");

  // a crash after checkpoint 2 was recorded but before its commit reached the sink: the restore
  // puts what checkpoint 2 staged, the bytes the file had then
  blobs->remove("m-model.bin");
  blob_upload_sink restored{config};
  tidemark::state_reader r{2, taken.data(), taken.size()};
  restored.restore(r);
  BOOST_TEST(r.remaining() == 0u);
  BOOST_TEST(blobs->get("m-model.bin").value() == "first version");

  // the end of the input puts what no checkpoint covers yet
  std::ofstream(dir / "late.bin") << "late";
  restored.process(0, paths({dir / "late.bin"}), out);
  BOOST_TEST(!blobs->get("m-late.bin"));
  restored.finish(out);
  BOOST_TEST(blobs->get("m-late.bin").value() == "late");
  std::map<std::string, double> metrics;
  restored.add_metrics(metrics);
  BOOST_TEST(metrics["blobs_put"] == 2.0);
  BOOST_TEST(metrics["blobs_staged"] == 0.0);
}

BOOST_AUTO_TEST_CASE(without_checkpoints_blobs_are_put_as_they_arrive) {
  temp_dir dir;
  std::ofstream(dir / "model.bin") << "bytes";
  const blob_upload_config config{directory_blobs{dir / "blobs"}, ""};
  blob_upload_sink sink{config};
  no_output out;
  sink.process(0, paths({dir / "model.bin", dir / "missing.bin"}), out);
  BOOST_TEST(open_blob_container(config.target)->get("model.bin").value() == "bytes");
  std::map<std::string, double> metrics;
  sink.add_metrics(metrics);
  BOOST_TEST(metrics["blobs_put"] == 1.0);
  BOOST_TEST(metrics["task_errors"] == 1.0);  // the missing file, counted
}
