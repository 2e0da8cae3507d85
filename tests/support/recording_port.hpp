// A node_port that records what a node's frame handling (net::node_dispatch) asked of the node
// instead of running actors: the frame fuzzer and the dispatch tests drive the real dispatch
// behind it. Needs actors/src on the include path.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "net/node_dispatch.hpp"

namespace tidemark::test {

/// Counts what the dispatch asked of the node.
struct recording_port final : net::node_port {
  std::uint64_t replies = 0, launches = 0, starts = 0, halts = 0, checkpoints = 0, commits = 0;
  std::uint64_t lost_nodes = 0, restored = 0;
  std::uint64_t credits = 0, batches = 0, values = 0, signals = 0;

  /// Calls that change what the node runs (only the coordinator may cause them).
  std::uint64_t job_changes() const {
    return launches + starts + halts + checkpoints + commits + lost_nodes + restored;
  }

  void reply(std::string_view, zmq::message_t) override { ++replies; }
  // from the checkpoint copies' thread
  std::atomic<std::uint64_t> later_replies{0};
  void reply_later(std::string, zmq::message_t) override { ++later_replies; }
  std::vector<std::string> launch(net::deployment&, detail::restore_point) override {
    ++launches;
    return {};
  }
  void start() override { ++starts; }
  void halt() override { ++halts; }
  void lose_node(std::uint32_t) override { ++lost_nodes; }
  void lose_copy(std::uint32_t, std::uint32_t) override { ++lost_nodes; }
  void restore_copy(const net::deployment&, detail::wiring::endpoint, std::uint32_t,
                    const detail::restore_point&) override {
    ++restored;
  }
  void connect_copy(const net::deployment&, detail::wiring::endpoint, std::uint64_t) override {
    ++restored;
  }
  void checkpoint(std::uint64_t) override { ++checkpoints; }
  void commit(std::uint64_t) override { ++commits; }
  void to_sender(std::uint32_t, detail::credit_msg) override { ++credits; }
  void to_receiver(std::uint32_t, detail::data_msg m) override {
    ++batches;
    values += m.batch.ptr->size();
  }
  void to_receiver(std::uint32_t, detail::signal_msg) override { ++signals; }
  void outside_counters(node_status&) override {}
};

}  // namespace tidemark::test
