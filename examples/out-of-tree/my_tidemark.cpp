// my-tidemark: the Tidemark tool (jobs, run, plan, keygen, ...) over this application's jobs.
#include "sensor_jobs.hpp"
#include "tidemark/cli/main.hpp"

int main(int argc, char** argv) {
  tidemark::job_registry jobs;
  sensors::register_jobs(jobs);
  return tidemark::tool_main(argc, argv, jobs);
}
