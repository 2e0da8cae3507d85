// The shipped `tidemark` tool: every built-in job (jobs.cpp) behind tidemark::tool_main.
#include "jobs.hpp"
#include "tidemark/cli/main.hpp"

int main(int argc, char** argv) {
  tidemark::job_registry jobs;
  tidemark::register_all_jobs(jobs);
  return tidemark::tool_main(argc, argv, jobs);
}
