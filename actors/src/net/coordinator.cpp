// The coordinator: deploys a registered job's physical plan on the nodes of a cluster file,
// starts it, watches heartbeats, collects metrics and reports the result (see cluster.hpp).
#include <algorithm>
#include <fstream>
#include <set>

#include <spdlog/spdlog.h>

#include "../live_poll.hpp"
#include "../wiring.hpp"
#include "channels.hpp"
#include "frames.hpp"
#include "security.hpp"
#include "tidemark/runtime/cluster.hpp"

namespace tidemark {

using clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

namespace {

std::string str(const flatbuffers::String* s) { return s ? s->str() : std::string{}; }

/// One DEALER per node; replies are verified like every other received frame.
class control_links {
 public:
  explicit control_links(const cluster_config& c) : cluster_(c) {
    if (c.insecure) net::warn_insecure("the coordinator");
    for (const auto& n : c.nodes) {
      auto& s = sockets_.emplace_back(ctx_, zmq::socket_type::dealer);
      net::make_client(s, c.coordinator, n.public_key, c.insecure, c.max_message_bytes);
      s.connect(n.endpoint);
    }
  }

  /// Never blocks: a node whose connection was refused has nowhere to queue, and whatever the
  /// message was, the timeouts of the step that waits for answers report it.
  void send(std::uint32_t node, zmq::message_t msg) {
    (void)sockets_[node].send(msg, zmq::send_flags::dontwait);
  }

  template <class Make>
  void send_all(Make make) {
    for (std::uint32_t n = 0; n < sockets_.size(); ++n) send(n, make(n));
  }

  /// Waits up to `timeout` for one frame from any node; calls f(node, frame) for each frame that
  /// passes verification. Returns false when nothing came.
  template <class F>
  bool poll(std::chrono::milliseconds timeout, F&& f) {
    std::vector<zmq::pollitem_t> items;
    for (auto& s : sockets_) items.push_back({s.handle(), 0, ZMQ_POLLIN, 0});
    if (zmq::poll(items, timeout) <= 0) return false;
    for (std::uint32_t n = 0; n < sockets_.size(); ++n) {
      zmq::message_t m;
      while (sockets_[n].recv(m, zmq::recv_flags::dontwait)) {
        if (auto bad = net::verify_control(m.data(), m.size(), cluster_.max_message_bytes)) {
          bad_frame(n, *bad);
          continue;
        }
        const auto& frame = net::read_control(m);
        if (auto refused = net::check_version(frame))
          throw job_error("node '" + cluster_.nodes[n].id + "': " + *refused);
        ++frames_in_;
        f(n, frame);
      }
    }
    return true;
  }

  /// Drops a frame of node `n` that cannot be used, saying why.
  void bad_frame(std::uint32_t n, const std::string& why) {
    ++bad_frames_;
    spdlog::warn("coordinator: dropped a bad frame from node '{}': {}", cluster_.nodes[n].id, why);
  }

  /// A verified frame whose content cannot be used: counted as bad instead of received.
  void refuse(std::uint32_t n, const std::string& why) {
    --frames_in_;
    bad_frame(n, why);
  }

  /// Frames received and dropped so far, as the coordinator's entry of a live view.
  node_status status() const {
    node_status s;
    s.node = "coordinator";
    s.frames_in = frames_in_;
    s.bad_frames = bad_frames_;
    return s;
  }

 private:
  std::uint64_t frames_in_ = 0;
  std::uint64_t bad_frames_ = 0;
  const cluster_config& cluster_;
  zmq::context_t ctx_{1};
  std::vector<zmq::socket_t> sockets_;
};

template <class Body>
zmq::message_t empty_control() {
  flatbuffers::FlatBufferBuilder b{64};
  typename Body::Builder body{b};
  return net::control_message(b, body.Finish());
}

zmq::message_t stop_message(const std::string& reason) {
  flatbuffers::FlatBufferBuilder b;
  return net::control_message(b, wire::CreateStop(b, b.CreateString(reason)));
}

/// "window (instances 1, 4), counts (instance 1)": what node `n` hosted.
std::string hosted(const logical_graph& g, const physical_plan& p,
                   const std::vector<std::uint32_t>& placement, std::uint32_t n) {
  std::string out;
  std::size_t at = 0;
  for (const auto& st : p.stages) {
    std::vector<std::uint32_t> mine;
    for (std::uint32_t i = 0; i < st.parallelism; ++i, ++at)
      if (placement[at] == n) mine.push_back(i);
    if (mine.empty()) continue;
    std::string list;
    for (auto i : mine) list += (list.empty() ? "" : ", ") + std::to_string(i);
    for (const auto& op : st.ops) {
      if (!out.empty()) out += ", ";
      out += g.node(op.node).name + (mine.size() == 1 ? " (instance " : " (instances ") + list + ")";
    }
  }
  return out.empty() ? "no operators" : out;
}

}  // namespace

job_result run_on_cluster(const job_spec& spec, job_options options, const cluster_config& cluster,
                          const run_options& opts) {
  std::shared_ptr<void> prepared = spec.prepare ? spec.prepare(options) : nullptr;
  auto j = spec.build(options);
  const auto synced = detail::executable_graph(j, opts);
  // A timezone's gates share one in-process coordinator (docs/timezones.md), so a timezone cannot
  // span nodes yet.
  if (!synced.timezones.empty())
    throw job_error("job '" + j.name() + "' has timezones (delayed operators): it runs embedded "
                    "only for now, because a timezone's synchronizer cannot span nodes yet");
  const auto& g = synced.graph;
  auto plan = compile(g, {opts.fuse});
  auto placement = place(g, plan, cluster);
  check_placement(g, plan, placement, cluster);
  std::vector<std::string> ids;
  for (const auto& n : cluster.nodes) ids.push_back(n.id);

  const auto count = static_cast<std::uint32_t>(cluster.nodes.size());
  control_links links{cluster};
  auto stop_all = [&](const std::string& why) {
    links.send_all([&](std::uint32_t) { return stop_message(why); });
  };
  // Wait until every node answered with `Body` (or fail naming the ones that did not).
  auto await_all = [&](wire::Body want, const char* step, auto&& on_reply) {
    std::vector<bool> answered(count, false);
    auto deadline = clock::now() + cluster.connect_timeout;
    while (std::count(answered.begin(), answered.end(), true) < count) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock::now());
      if (left <= 0ms) {
        std::string missing;
        for (std::uint32_t n = 0; n < count; ++n)
          if (!answered[n])
            missing += (missing.empty() ? "" : ", ") + ("'" + cluster.nodes[n].id + "' at " +
                                                        cluster.nodes[n].endpoint);
        stop_all(std::string{"no answer to "} + step);
        throw job_error(std::string{"no answer to "} + step + " within " +
                        std::to_string(cluster.connect_timeout.count()) + " ms from node " + missing +
                        ": is it running, and is the coordinator's public key in its allow-list "
                        "(--keys DIR)?");
      }
      links.poll(left, [&](std::uint32_t n, const wire::ControlFrame& f) {
        if (f.body_type() == wire::Body::HelloReply && !f.body_as_HelloReply()->accepted())
          throw job_error("node '" + cluster.nodes[n].id +
                          "' refused the coordinator: " + str(f.body_as_HelloReply()->reason()));
        if (f.body_type() != want) return;
        on_reply(n, f);
        answered[n] = true;
      });
    }
  };

  links.send_all([&](std::uint32_t) {
    flatbuffers::FlatBufferBuilder b;
    return net::control_message(b, wire::CreateHello(b, b.CreateString("coordinator")));
  });
  await_all(wire::Body::HelloReply, "hello", [](std::uint32_t, const wire::ControlFrame&) {});

  links.send_all([&](std::uint32_t self) {
    flatbuffers::FlatBufferBuilder b;
    std::vector<std::string> names, values;
    for (const auto& [k, v] : options.values()) {
      names.push_back(k);
      values.push_back(v);
    }
    std::vector<flatbuffers::Offset<wire::NodeAddress>> nodes;
    for (const auto& n : cluster.nodes)
      nodes.push_back(wire::CreateNodeAddress(b, b.CreateString(n.id), b.CreateString(n.endpoint),
                                              b.CreateString(n.public_key)));
    auto body = wire::CreateDeploy(
        b, b.CreateString(spec.name), b.CreateVectorOfStrings(names),
        b.CreateVectorOfStrings(values), b.CreateVector(nodes), self, b.CreateVector(placement),
        static_cast<std::uint32_t>(opts.batch_size), opts.credit,
        static_cast<std::uint32_t>(opts.linger.count()), opts.fuse,
        static_cast<std::uint32_t>(cluster.heartbeat_interval.count()),
        opts.live ? static_cast<std::uint32_t>(std::max<std::int64_t>(1, opts.live_period.count()))
                  : 0u);
    return net::control_message(b, body);
  });
  await_all(wire::Body::Deployed, "deploy", [&](std::uint32_t n, const wire::ControlFrame& f) {
    const auto* d = f.body_as_Deployed();
    if (d->ok()) return;
    stop_all("deploy failed on another node");
    throw job_error("node '" + cluster.nodes[n].id + "' could not deploy job '" + spec.name +
                    "': " + str(d->error()));
  });

  spdlog::info("coordinator: deployed job '{}' on {}", spec.name, fmt::join(ids, ", "));

  job_result result;
  result.job = j.name();
  result.plan = to_text(synced, plan);
  // the job's one live view: the nodes send their instances' counters every live period and
  // their transport counters with every heartbeat
  std::vector<std::string> node_of;
  for (auto n : placement) node_of.push_back(cluster.nodes[n].id);
  detail::live_poll live{opts.live, live_plan::of(j.name(), g, plan, node_of), opts.live_period};
  const auto offsets = net::instance_offsets(plan);
  // Records the instances a node reports, refusing the frame when one of them is not placed there.
  auto record_live = [&](std::uint32_t n, std::vector<instance_metrics> instances) {
    for (const auto& m : instances)
      if (m.stage >= plan.stages.size() || m.instance >= plan.stages[m.stage].parallelism ||
          placement[offsets[m.stage] + m.instance] != n) {
        links.refuse(n, "metrics of stage " + std::to_string(m.stage) + " instance " +
                            std::to_string(m.instance) + ", which does not run there");
        return;
      }
    for (auto& m : instances) live.update(std::move(m));
  };

  auto started = clock::now();
  links.send_all([](std::uint32_t) { return empty_control<wire::Start>(); });
  std::vector<clock::time_point> last_seen(count, started);
  std::vector<bool> done(count, false);
  while (std::count(done.begin(), done.end(), true) < count) {
    bool fresh = false;
    links.poll(50ms, [&](std::uint32_t n, const wire::ControlFrame& f) {
      last_seen[n] = clock::now();
      const auto* beat = f.body_as_Heartbeat();
      if (live.enabled() && beat && beat->counters()) {
        auto status = net::read_status(*beat->counters());
        status.node = cluster.nodes[n].id;  // the connection says who it is
        live.update(std::move(status));
      }
      if (live.enabled() && f.body_type() == wire::Body::LiveMetrics) {
        record_live(n, net::read_metrics(*f.body_as_LiveMetrics()));
        fresh = true;
      }
      if (f.body_type() == wire::Body::Failure) {
        stop_all("job failed");
        throw job_error("job '" + j.name() + "' failed on node '" + cluster.nodes[n].id +
                        "': " + str(f.body_as_Failure()->what()));
      }
      if (f.body_type() == wire::Body::Done && !done[n]) {
        done[n] = true;
        const auto* d = f.body_as_Done();
        for (auto& m : net::read_metrics(*d)) {
          if (live.enabled()) live.update(m);
          result.instances.push_back(std::move(m));
        }
        result.peak_live_batches = std::max(result.peak_live_batches, d->peak_live_batches());
        fresh = true;
      }
    });
    if (fresh) {
      live.update(links.status());
      live.publish(false);
    }
    auto now = clock::now();
    for (std::uint32_t n = 0; n < count; ++n)
      if (!done[n] && now - last_seen[n] > cluster.heartbeat_timeout) {
        auto silent = std::chrono::duration_cast<std::chrono::milliseconds>(now - last_seen[n]);
        stop_all("node '" + cluster.nodes[n].id + "' failed");
        throw job_error("node '" + cluster.nodes[n].id + "' at " + cluster.nodes[n].endpoint +
                        " sent no heartbeat for " + std::to_string(silent.count()) +
                        " ms (timeout " + std::to_string(cluster.heartbeat_timeout.count()) +
                        " ms); it hosted " + hosted(g, plan, placement, n));
      }
  }
  stop_all("job finished");
  live.update(links.status());
  live.publish(true);
  result.seconds = std::chrono::duration<double>(clock::now() - started).count();
  spdlog::info("coordinator: job '{}' finished on every node in {:.3f} s", spec.name,
               result.seconds);
  std::sort(result.instances.begin(), result.instances.end(), [](auto& a, auto& b) {
    return std::tie(a.stage, a.instance) < std::tie(b.stage, b.instance);
  });
  detail::publish(result, opts);
  if (spec.report) spec.report(options, result);
  return result;
}

std::optional<node_status> query_status(const std::string& endpoint, const cluster_config& cluster,
                                        std::chrono::milliseconds timeout) {
  cluster_config one = cluster;
  std::string key;
  for (const auto& n : cluster.nodes)
    if (n.endpoint == endpoint) key = n.public_key;
  one.nodes = {{"queried", endpoint, key}};
  control_links links{one};
  links.send(0, empty_control<wire::StatusRequest>());
  std::optional<node_status> result;
  auto deadline = clock::now() + timeout;
  while (!result && clock::now() < deadline) {
    links.poll(std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock::now()),
               [&](std::uint32_t, const wire::ControlFrame& f) {
                 if (f.body_type() != wire::Body::StatusReply) return;
                 const auto* s = f.body_as_StatusReply();
                 result = node_status{str(s->node()), s->frames_in(), s->bad_frames(),
                                      s->refused_peers(), s->lost_frames(), s->data_bytes_in(),
                                      s->batch_frames_in(), s->batch_bytes_in()};
               });
  }
  return result;
}

}  // namespace tidemark
