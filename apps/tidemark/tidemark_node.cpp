// The shipped `tidemark-node`: every built-in job (jobs.cpp) behind tidemark::node_main.
#include "jobs.hpp"
#include "tidemark/cli/main.hpp"

int main(int argc, char** argv) {
  tidemark::job_registry jobs;
  tidemark::register_all_jobs(jobs);
  return tidemark::node_main(argc, argv, jobs);
}
