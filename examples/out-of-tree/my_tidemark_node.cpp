// my-tidemark-node: one host of a cluster that runs this application's jobs.
#include "sensor_jobs.hpp"
#include "tidemark/cli/main.hpp"

int main(int argc, char** argv) {
  tidemark::job_registry jobs;
  sensors::register_jobs(jobs);
  return tidemark::node_main(argc, argv, jobs);
}
