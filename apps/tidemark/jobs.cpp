// One line per application library: its register function.
#include "jobs.hpp"

#include "tidemark/examples/example_jobs.hpp"
#include "tidemark/riot/apps/jobs.hpp"
#include "tidemark/aion/workloads.hpp"
#include "tidemark/examples/figure1.hpp"

namespace tidemark {

void register_all_jobs(job_registry& registry) {
  examples::register_jobs(registry);
  riot::apps::register_jobs(registry);
  aion::register_jobs(registry);
  figure1::register_jobs(registry);
}

}  // namespace tidemark
