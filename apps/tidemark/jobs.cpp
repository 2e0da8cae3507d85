// One line per application library: its register function.
#include "jobs.hpp"

#include "example_jobs.hpp"

namespace tidemark {

void register_all_jobs(job_registry& registry) {
  examples::register_jobs(registry);
}

}  // namespace tidemark
