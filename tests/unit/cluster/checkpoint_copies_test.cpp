// Checkpoint copies on other nodes (cluster file `checkpoint: {copies: N}`): which nodes keep a
// piece, the completion rule of the driver (a checkpoint completes only once every holder said
// its copies are durable; a lost, failing or slow holder fails that checkpoint, never the job),
// and a node's copy_keeper storing, listing and sending back what it keeps.
#define BOOST_TEST_MODULE checkpoint copies
#include <boost/test/unit_test.hpp>

#include <mutex>

#include "../../support/temp_dir.hpp"
#include "../../support/wait_until.hpp"
#include "checkpointing.hpp"
#include "net/checkpoint_copies.hpp"
#include "tidemark/persistence/checkpoint_store.hpp"

using namespace tidemark;
using namespace std::chrono_literals;

namespace {

/// A driver of two stage instances whose copies the test records instead of sending.
struct shipping_driver {
  test::temp_dir dir{"checkpoint-copies"};
  checkpoint_options opts;
  std::unique_ptr<detail::checkpoint_driver> driver;
  std::vector<std::string> pieces_to;                          // holder per shipped piece
  std::vector<std::pair<std::string, std::uint32_t>> records;  // holder, pieces

  explicit shipping_driver(std::chrono::milliseconds timeout = 10s) {
    opts.dir = dir / "checkpoints";
    opts.interval = 1ms;
    driver = std::make_unique<detail::checkpoint_driver>(opts, "job", "plan", 2);
    driver->ship_copies({[this](std::uint64_t, std::uint32_t, std::uint32_t instance,
                                const std::string&) {
                           // instance i is made on node n{i+1}; its copy is on the next node
                           std::vector<std::string> to{"n" + std::to_string(instance + 2)};
                           pieces_to.push_back(to.front());
                           return to;
                         },
                         [this](std::uint64_t, const std::string& holder, std::uint32_t pieces) {
                           records.emplace_back(holder, pieces);
                         }},
                        timeout);
  }

  /// Starts a checkpoint and hands both pieces over; returns its id.
  std::uint64_t checkpoint() {
    std::uint64_t id = 0;
    test::wait_until([&] {
      driver->poll([&](std::uint64_t started) { id = started; });
      return id != 0;
    }, 5s, "a checkpoint to start");
    return pieces(id);
  }
  std::uint64_t pieces(std::uint64_t id) {
    driver->on_piece(0, 0, id, "state of instance 0", 0);
    driver->on_piece(0, 1, id, "state of instance 1", 0);
    return id;
  }

  /// Waits for collect() to report a checkpoint.
  std::uint64_t completed() {
    std::vector<std::uint64_t> done;
    test::wait_until([&] {
      driver->poll([](std::uint64_t) {});
      done = driver->collect();
      return !done.empty();
    }, 10s, "a checkpoint to complete");
    return done.front();
  }
};

}  // namespace

BOOST_AUTO_TEST_CASE(holders_are_the_next_live_nodes_never_the_producer) {
  const std::vector<bool> all(4, true);
  BOOST_TEST(net::copy_holders(0, all, 1) == (std::vector<std::uint32_t>{1}));
  BOOST_TEST(net::copy_holders(3, all, 2) == (std::vector<std::uint32_t>{0, 1}));
  BOOST_TEST(net::copy_holders(1, {true, true, false, true}, 2) ==
             (std::vector<std::uint32_t>{3, 0}));
  // never the producer, so at most the others
  BOOST_TEST(net::copy_holders(0, all, 7) == (std::vector<std::uint32_t>{1, 2, 3}));
  BOOST_TEST(net::copy_holders(0, {true}, 1).empty());
  BOOST_TEST(net::copy_holders(0, all, 0).empty());
}

BOOST_AUTO_TEST_CASE(a_checkpoint_completes_only_once_every_copy_is_durable) {
  shipping_driver d;
  const auto id = d.checkpoint();
  BOOST_TEST(d.pieces_to == (std::vector<std::string>{"n2", "n3"}));
  BOOST_TEST(d.records.size() == 2u);
  // the driver's own pieces are written meanwhile; without the holders' answers nothing completes
  for (auto until = std::chrono::steady_clock::now() + 300ms;
       std::chrono::steady_clock::now() < until;) {
    d.driver->poll([](std::uint64_t) { BOOST_FAIL("a second checkpoint before the first"); });
    BOOST_TEST(d.driver->collect().empty());
  }
  d.driver->on_copy_durable(id, "n2", "");
  d.driver->on_copy_durable(id, "n2", "");  // twice: still one holder missing
  for (auto until = std::chrono::steady_clock::now() + 100ms;
       std::chrono::steady_clock::now() < until;)
    BOOST_TEST(d.driver->collect().empty());
  d.driver->on_copy_durable(id, "n3", "");
  BOOST_TEST(d.completed() == id);
  d.driver.reset();
  // the record names the holders
  persistence::checkpoint_store store{d.opts.dir};
  const auto records = store.list();
  BOOST_REQUIRE(records.size() == 1u);
  BOOST_TEST(records.back().holders == (std::vector<std::string>{"n2", "n3"}));
}

BOOST_AUTO_TEST_CASE(a_lost_failing_or_slow_holder_fails_the_checkpoint_and_the_next_one_runs) {
  shipping_driver d{200ms};
  auto id = d.checkpoint();
  d.driver->holder_lost("n3");  // before it answered
  BOOST_TEST(d.driver->failed() == 1u);
  d.driver->on_copy_durable(id, "n2", "");  // too late to matter

  id = d.checkpoint();
  d.driver->on_copy_durable(id, "n2", "disk full");
  BOOST_TEST(d.driver->failed() == 2u);
  BOOST_TEST(d.driver->first_failure().find("node 'n3'") != std::string::npos);

  id = d.checkpoint();  // n3 never answers: the timeout fails it
  d.driver->on_copy_durable(id, "n2", "");
  std::uint64_t next = 0;  // the checkpoint the same poll may start
  test::wait_until([&] {
    d.driver->poll([&](std::uint64_t started) { next = started; });
    return d.driver->failed() == 3u;
  }, 5s, "the slow holder's checkpoint to fail");

  id = next != 0 ? d.pieces(next) : d.checkpoint();
  d.driver->on_copy_durable(id, "n2", "");
  d.driver->on_copy_durable(id, "n3", "");
  BOOST_TEST(d.completed() == id);
  BOOST_TEST(d.driver->completed().size() == 1u);
}

BOOST_AUTO_TEST_CASE(a_node_keeps_copies_lists_them_and_sends_them_back) {
  test::temp_dir dir{"copy-keeper"};
  std::mutex mutex;
  std::vector<zmq::message_t> answers;
  net::copy_keeper keeper{"n2", dir / "checkpoints", 8, [&](std::string to, zmq::message_t m) {
                            BOOST_TEST(to == "coordinator");
                            std::lock_guard<std::mutex> lock{mutex};
                            answers.push_back(std::move(m));
                          }};
  auto frames = [&](std::vector<zmq::message_t> sent) {
    for (auto& m : sent) {
      const auto& f = net::read_control(m);
      if (f.body_type() == wire::Body::CopyPiece) keeper.on_piece(*f.body_as_CopyPiece());
      if (f.body_type() == wire::Body::CopyRecord)
        keeper.on_record("coordinator", *f.body_as_CopyRecord());
      if (f.body_type() == wire::Body::CopiesRequest)
        keeper.on_request("coordinator", f.body_as_CopiesRequest()->job()->str());
      if (f.body_type() == wire::Body::DropCopies)
        keeper.on_drop("coordinator", *f.body_as_DropCopies());
      if (f.body_type() == wire::Body::FetchCopies)
        keeper.on_fetch("coordinator", *f.body_as_FetchCopies());
    }
    keeper.drain();
    std::lock_guard<std::mutex> lock{mutex};
    return std::exchange(answers, {});
  };
  // checkpoints 4 and 5, one piece each (cut in chunks of 8 bytes), keeping the newest 1
  for (std::uint64_t id : {4, 5}) {
    auto sent = net::copy_piece_frames(id, 1, 2, "piece of checkpoint " + std::to_string(id), 8, 1);
    BOOST_TEST(sent.size() > 1u);
    sent.push_back(net::copy_record_frame(id, "job", "plan", 1));
    auto got = frames(std::move(sent));
    BOOST_REQUIRE(got.size() == 1u);
    const auto* durable = net::read_control(got.front()).body_as_CopyDurable();
    BOOST_REQUIRE(durable);
    BOOST_TEST(durable->id() == id);
    BOOST_TEST(durable->error()->str() == "");
  }
  std::vector<zmq::message_t> request;
  request.push_back(net::copies_request_frame("job"));
  auto got = frames(std::move(request));
  BOOST_REQUIRE(got.size() == 1u);
  const auto held = net::read_held(*net::read_control(got.front()).body_as_HeldCopies());
  BOOST_TEST(held.node == "n2");
  BOOST_REQUIRE(held.checkpoints.size() == 1u);  // retain 1
  BOOST_TEST(held.checkpoints.front().record.id == 5u);
  BOOST_TEST(held.checkpoints.front().record.plan == "plan");
  BOOST_TEST((held.checkpoints.front().pieces ==
              std::vector<std::pair<std::uint32_t, std::uint32_t>>{{1, 2}}));

  std::vector<zmq::message_t> fetch;
  fetch.push_back(net::fetch_copies_frame(5, "job", "plan"));
  fetch.push_back(net::fetch_copies_frame(4, "job", "plan"));  // dropped by retention
  got = frames(std::move(fetch));
  net::piece_assembler assembler;
  std::optional<net::state_piece> piece;
  std::vector<std::string> errors;
  for (auto& m : got) {
    const auto& f = net::read_control(m);
    if (f.body_type() == wire::Body::StatePiece)
      if (auto p = assembler.add(*f.body_as_StatePiece())) piece = std::move(p);
    if (f.body_type() == wire::Body::CopiesFetched)
      errors.push_back(f.body_as_CopiesFetched()->error()->str());
  }
  BOOST_REQUIRE(piece.has_value());
  BOOST_TEST(piece->checkpoint == 5u);
  BOOST_TEST(piece->bytes == "piece of checkpoint 5");
  BOOST_REQUIRE(errors.size() == 2u);
  BOOST_TEST(errors[0] == "");
  BOOST_TEST(errors[1].find("no intact copy of checkpoint 4") != std::string::npos);

  // a copy no newer than the newest kept belongs to a new run: the old copies go
  auto sent = net::copy_piece_frames(1, 0, 0, "new run", 8, 1);
  sent.push_back(net::copy_record_frame(1, "job", "plan", 1));
  frames(std::move(sent));
  request.clear();
  request.push_back(net::copies_request_frame(""));
  got = frames(std::move(request));
  const auto after = net::read_held(*net::read_control(got.front()).body_as_HeldCopies());
  BOOST_REQUIRE(after.checkpoints.size() == 1u);
  BOOST_TEST(after.checkpoints.front().record.id == 1u);

  // the run finished: its copies go, so a later --resume cannot find them
  std::vector<zmq::message_t> drop;
  drop.push_back(net::drop_copies_frame("job"));
  got = frames(std::move(drop));
  BOOST_REQUIRE(got.size() == 1u);
  BOOST_TEST(net::read_held(*net::read_control(got.front()).body_as_HeldCopies()).checkpoints.empty());
}
