// Real delay, jitter and loss with `tc qdisc ... netem` for nodes that run in network namespaces
// (scripts/netns-cluster.sh): the tc command lines a netem fault needs, running them, and the
// check, before a run, that the kernel has netem at all.
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tidemark/chaos/schedule.hpp"

namespace tidemark::chaos {

/// Where a node's traffic leaves: a network namespace (empty: this one) and its device there.
struct netns_device {
  std::string ns;
  std::string device = "eth0";
};

/// Reads "ID=NAMESPACE" or "ID=NAMESPACE:DEVICE" (device eth0 by default) into the node id and
/// its device. Throws std::invalid_argument naming `text` otherwise.
std::pair<std::string, netns_device> parse_netns(const std::string& text);

/// What netem does to the frames a node sends.
struct netem_settings {
  std::chrono::milliseconds delay{0};
  std::chrono::milliseconds jitter{0};  ///< netem's uniform jitter around `delay`
  double loss = 0;                      ///< probability, 0..1
};

/// The netem node `node` must have while the netem faults `active` hold (their union: the highest
/// delay, jitter and loss); nullopt when none of them targets it.
std::optional<netem_settings> netem_for(const std::string& node,
                                        const std::vector<const fault*>& active);

/// The command that gives `d` the settings, or removes netem from it (nullopt):
/// `ip netns exec NS tc qdisc replace dev DEV root netem delay 40ms 10ms loss 2%`, or
/// `... tc qdisc del dev DEV root` (without `ip netns exec NS` for this namespace).
std::vector<std::string> netem_command(const netns_device& d,
                                       const std::optional<netem_settings>& s);

/// The exit status and everything a command printed.
struct command_result {
  int status = 0;  ///< its exit code; 127 when it could not be started
  std::string output;
};
/// Runs a command (argv[0] looked up on the PATH) and waits for it.
using command_runner = std::function<command_result(const std::vector<std::string>& argv)>;
command_result run_command(const std::vector<std::string>& argv);

/// Nullopt when netem can be set on `d` (tried with a netem that changes nothing, then removed
/// again: the device is left with its default qdisc); otherwise why not, starting with "tc netem
/// is not available on this kernel: " when the kernel lacks the netem qdisc.
std::optional<std::string> netem_unavailable(const netns_device& d, const command_runner& run);

}  // namespace tidemark::chaos
