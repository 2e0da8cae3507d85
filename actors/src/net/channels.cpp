// Channel numbering and the codec check (see channels.hpp).
#include "channels.hpp"

namespace tidemark::net {

std::vector<channel> enumerate_channels(const logical_graph& g, const physical_plan& p,
                                        const detail::wiring& w) {
  std::vector<channel> result;
  for (std::uint32_t s = 0; s < p.stages.size(); ++s)
    for (std::uint32_t i = 0; i < p.stages[s].parallelism; ++i)
      for (std::uint32_t c = 0; c < w.copies[s][i]; ++c) {
        const auto& outs = w.outputs[s][i];
        for (std::uint32_t k = 0; k < outs.size(); ++k)
          result.push_back({s, i, k, outs[k].to.stage, outs[k].to.instance, outs[k].slot + c, c,
                            outs[k].to.copy, &g.node(p.stages[s].ops[outs[k].from_op].node),
                            outs[k].port});
      }
  return result;
}

std::vector<std::uint32_t> instance_offsets(const physical_plan& p) {
  std::vector<std::uint32_t> offsets;
  std::uint32_t at = 0;
  for (const auto& st : p.stages) {
    offsets.push_back(at);
    at += st.parallelism;
  }
  return offsets;
}

void check_codecs(const std::vector<channel>& chans, const std::vector<std::uint32_t>& offsets,
                  const detail::placement& placement, const std::vector<std::string>& ids) {
  for (const auto& c : chans) {
    auto from = placement.node(offsets[c.from_stage] + c.from_instance, c.from_copy);
    auto to = placement.node(offsets[c.to_stage] + c.to_instance, c.to_copy);
    if (from == to || c.output().codec) continue;
    const auto& port = c.output().name;
    throw job_error("operator '" + c.producer->name + "' emits " + c.output().value_type +
                    (port == "main" ? std::string{} : " on its output '" + port + "'") +
                    ", which has no tidemark::codec, but its output goes from node '" + ids[from] +
                    "' to node '" + ids[to] +
                    "': list the type's fields with TIDEMARK_FIELDS(...), specialize "
                    "tidemark::codec, or pin both operators to one node");
  }
}

}  // namespace tidemark::net
