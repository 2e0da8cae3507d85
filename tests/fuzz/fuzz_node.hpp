// The node the frame fuzzer drives: the node's real frame handling (net::node_dispatch) with the
// example jobs the node binary offers, behind a port that records what the dispatch asked of the
// node instead of running actors. Each node starts with example-window-count deployed over two
// nodes (this one is "n1"), so remote channels cross in both directions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "../support/recording_port.hpp"

namespace tidemark::fuzz {

/// The keys the fuzzer's peers send with (stand-ins for Z85 CURVE keys).
inline const std::string coordinator_key = "fuzz-coordinator-key";
inline const std::string peer_key = "fuzz-peer-key";      ///< node "n2", the deployment's other node
inline const std::string stranger_key = "fuzz-stranger-key";  ///< allow-listed, not the coordinator
inline const std::string coordinator_route = "coordinator";

using test::recording_port;

/// Separates the frames of one fuzz input.
inline constexpr const char* separator = "|TM|";

/// The Deploy frame that puts example-window-count on nodes n1 (self) and n2 (`peer_key`), stage
/// instances alternating between them; `deployment` tags its data frames, `restore_checkpoint`
/// names the checkpoint whose state pieces came before (0: none).
zmq::message_t deploy_frame(std::uint32_t deployment, std::uint64_t restore_checkpoint = 0);

/// A dispatch of node "n1" (faults allowed, 1 MiB frames) with the fuzz deployment in place.
class node {
 public:
  node();
  ~node();
  net::node_dispatch& dispatch() { return dispatch_; }
  recording_port& port() { return port_; }

 private:
  node_options opts_;
  recording_port port_;
  net::node_dispatch dispatch_;
};

/// The deployment id of the fuzz deployment (its data frames carry it).
inline constexpr std::uint32_t deployment_id = 7;

}  // namespace tidemark::fuzz
