// The status of a cluster (cluster_status.hpp) and of one node (query_status, cluster.hpp): a
// StatusRequest to every node at once with the coordinator's credentials, then the nodes' views of
// their deployment merged into one plan.
#include <algorithm>
#include <tuple>

#include <spdlog/spdlog.h>

#include "frames.hpp"
#include "security.hpp"
#include "tidemark/runtime/cluster_status.hpp"

namespace tidemark {

namespace {

using clock = std::chrono::steady_clock;

struct answer {
  node_status counters;
  std::optional<deployment_status> deployment;
};

/// Asks every node of `nodes` for its status with the credentials of `cluster`; waits at most
/// `timeout` for all answers. A node that does not answer (down, refused key, another major wire
/// version) has none.
std::vector<std::optional<answer>> ask(const cluster_config& cluster,
                                       const std::vector<cluster_node>& nodes,
                                       std::chrono::milliseconds timeout) {
  if (cluster.insecure) net::warn_insecure("the status query");
  zmq::context_t ctx{1};
  std::vector<zmq::socket_t> sockets;
  sockets.reserve(nodes.size());
  for (const auto& n : nodes) {
    auto& s = sockets.emplace_back(ctx, zmq::socket_type::dealer);
    net::make_client(s, cluster.coordinator, n.public_key, cluster.insecure,
                     cluster.max_message_bytes);  // no linger: a dead node holds nothing up
    s.connect(n.endpoint);
    flatbuffers::FlatBufferBuilder b{64};
    (void)s.send(net::control_message(b, wire::StatusRequestBuilder{b}.Finish()),
                 zmq::send_flags::dontwait);
  }
  std::vector<std::optional<answer>> answers(nodes.size());
  auto pending = nodes.size();
  const auto deadline = clock::now() + timeout;
  while (pending > 0) {
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - clock::now());
    if (left.count() <= 0) break;
    std::vector<zmq::pollitem_t> items;
    for (auto& s : sockets) items.push_back({s.handle(), 0, ZMQ_POLLIN, 0});
    if (zmq::poll(items, left) <= 0) continue;
    for (std::size_t n = 0; n < sockets.size(); ++n) {
      zmq::message_t received, copy;
      while (sockets[n].recv(received, zmq::recv_flags::dontwait)) {
        auto& m = net::aligned_frame(received, copy);
        auto refused = net::verify_control(m.data(), m.size(), cluster.max_message_bytes);
        if (!refused) refused = net::check_version(net::read_control(m));
        if (refused) {
          spdlog::warn("status: dropped an answer of node '{}': {}", nodes[n].id, *refused);
          continue;
        }
        const auto& f = net::read_control(m);
        if (f.body_type() != wire::Body::StatusReply || answers[n]) continue;
        const auto& reply = *f.body_as_StatusReply();
        answers[n] = answer{net::read_status(reply), net::read_deployment(reply)};
        --pending;
      }
    }
  }
  return answers;
}

/// How much of a deployment's history a view knows: among views of the same deployment, the one
/// that heard of more losses is the newer.
std::size_t events_known(const deployment_status& d) {
  std::size_t n = d.gone.size();
  for (const auto& inst : d.instances)
    for (const auto& c : inst.copies) n += c.now != copy_status::state::alive;
  return n;
}

}  // namespace

const char* to_string(copy_status::state s) {
  switch (s) {
    case copy_status::state::alive:
      return "alive";
    case copy_status::state::gone:
      return "gone";
    case copy_status::state::dropped:
      return "dropped";
    case copy_status::state::restored:
      return "restored";
  }
  return "?";
}

bool deployment_status::same_plan(const deployment_status& o) const {
  if (std::tie(job, deployment, nodes, gone) != std::tie(o.job, o.deployment, o.nodes, o.gone) ||
      instances.size() != o.instances.size())
    return false;
  for (std::size_t k = 0; k < instances.size(); ++k) {
    const auto& a = instances[k].copies;
    const auto& b = o.instances[k].copies;
    if (instances[k].name != o.instances[k].name || a.size() != b.size()) return false;
    for (std::size_t c = 0; c < a.size(); ++c)
      if (std::tie(a[c].node, a[c].now, a[c].was_on) != std::tie(b[c].node, b[c].now, b[c].was_on))
        return false;
  }
  return true;
}

cluster_status query_cluster_status(const cluster_config& cluster,
                                    std::chrono::milliseconds timeout) {
  cluster_status status;
  auto answers = ask(cluster, cluster.nodes, timeout);
  for (std::size_t n = 0; n < cluster.nodes.size(); ++n) {
    auto& to = status.nodes.emplace_back();
    to.id = cluster.nodes[n].id;
    to.endpoint = cluster.nodes[n].endpoint;
    if (!answers[n]) continue;
    to.counters = std::move(answers[n]->counters);
    to.deployment = std::move(answers[n]->deployment);
  }
  const deployment_status* newest = nullptr;
  for (const auto& n : status.nodes)
    if (n.deployment &&
        (!newest || std::make_pair(n.deployment->deployment, events_known(*n.deployment)) >
                        std::make_pair(newest->deployment, events_known(*newest))))
      newest = &*n.deployment;
  if (!newest) return status;
  status.plan = *newest;
  for (auto& inst : status.plan->instances)
    for (auto& c : inst.copies) c.lag.reset();
  // each node measures the lag of the copies it sends to: the plan's is their sum
  for (const auto& n : status.nodes) {
    if (!n.deployment) continue;
    if (!n.deployment->same_plan(*status.plan)) {
      status.disagreeing.push_back(n.id);
      continue;
    }
    for (std::size_t k = 0; k < status.plan->instances.size(); ++k)
      for (std::size_t c = 0; c < status.plan->instances[k].copies.size(); ++c)
        if (const auto& lag = n.deployment->instances[k].copies[c].lag) {
          auto& sum = status.plan->instances[k].copies[c].lag;
          sum = sum.value_or(0) + *lag;
        }
  }
  return status;
}

std::optional<node_status> query_status(const std::string& endpoint, const cluster_config& cluster,
                                        std::chrono::milliseconds timeout) {
  std::string key;
  for (const auto& n : cluster.nodes)
    if (n.endpoint == endpoint) key = n.public_key;
  auto got = ask(cluster, {{"queried", endpoint, key}}, timeout).front();
  if (!got) return std::nullopt;
  return std::move(got->counters);
}

}  // namespace tidemark
