// Seeded runs of the figure 1 jobs, shared by figure1_test and loops_test: the lookup table in a
// fresh WiredTiger directory, and one run of the job `build(out)` makes, its pairs sorted.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "../../support/temp_dir.hpp"
#include "tidemark/examples/figure1.hpp"
#include "tidemark/persistence/table_store.hpp"
#include "tidemark/runtime/runtime.hpp"

namespace tidemark::test {

struct figure1_runs {
  temp_dir dir;
  figure1::config c;

  explicit figure1_runs(const std::string& tag) : dir{tag} {
    c.db = persistence::wt_connection::open(dir.path().string());
    c.elements = 40;
    c.concurrency = 8;
    c.max_delay_us = 1500;
    figure1::fill_table(c);
  }

  template <class Build>
  std::vector<figure1::joined> run_seeded(std::uint64_t seed, bool synchronizers, Build build) {
    c.seed = seed;
    collected<figure1::joined> out;
    auto j = build(out);
    run_options o;
    o.synchronizers.enabled = synchronizers;
    o.threads = 2;
    run(j, o);
    auto xs = out.values();
    std::sort(xs.begin(), xs.end());
    return xs;
  }
};

}  // namespace tidemark::test
