// The job registry: applications register their jobs by name with declared options, so one tool
// (`tidemark run JOB`) and one node binary can build and run any of them from a name and options.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "tidemark/core/job.hpp"
#include "tidemark/runtime/runtime.hpp"

namespace tidemark {

struct cluster_config;

/// One option a job accepts on the command line as `--name value`.
struct job_option_spec {
  std::string name;           ///< without the leading dashes
  std::string default_value;  ///< used when the option is not given
  std::string help;
};

/// The option values of one run: what was given, falling back to the declared defaults. Typed
/// getters throw job_error naming the option when a value does not parse.
class job_options {
 public:
  job_options() = default;
  explicit job_options(std::vector<job_option_spec> specs) : specs_(std::move(specs)) {}

  /// Sets an option; throws job_error when the job declares no option of that name.
  void set(const std::string& name, std::string value);
  /// True when the option was given (not only defaulted).
  bool has(const std::string& name) const { return values_.count(name) > 0; }
  /// The given value, or the declared default. Throws job_error for an undeclared name.
  std::string get(const std::string& name) const;
  std::int64_t get_int(const std::string& name) const;
  double get_double(const std::string& name) const;
  /// Accepts true/false, yes/no, on/off, 1/0.
  bool get_bool(const std::string& name) const;
  /// The values that were given explicitly (what a coordinator ships to nodes).
  const std::map<std::string, std::string>& values() const noexcept { return values_; }
  const std::vector<job_option_spec>& specs() const noexcept { return specs_; }
  /// Every declared option with its value (given or default), one `name=value` line each, in
  /// declaration order: the same text for the same effective options.
  std::string text() const;

 private:
  const job_option_spec& spec(const std::string& name) const;

  std::vector<job_option_spec> specs_;
  std::map<std::string, std::string> values_;
};

/// A registered job: how to build it from options, and optional hooks around a run.
struct job_spec {
  std::string name;  ///< e.g. "riot-etl"
  std::string summary;
  std::vector<job_option_spec> options;
  /// Optional. Runs once in the submitting process before build: starts helpers (a broker, a
  /// temporary directory) and may fill in resolved options. The returned handle is released
  /// after the run and the report.
  std::function<std::shared_ptr<void>(job_options&)> prepare;
  /// Required. Builds the logical job; deterministic given the options, because distributed
  /// nodes build the same job to run their part of it.
  std::function<job(const job_options&)> build;
  /// Optional. Runs after the job finished, in the submitting process: summaries, plots. On a
  /// cluster, `job_result::node_reports` holds what node_report returned on each node.
  std::function<void(const job_options&, const job_result&)> report;

  // Hooks of a run on a cluster (`tidemark run --cluster`), all optional.
  /// Runs instead of prepare in the submitting process: it knows the nodes, so the helpers it
  /// starts can listen where they reach them (local_address_towards in cluster.hpp).
  std::function<std::shared_ptr<void>(job_options&, const cluster_config&)> prepare_cluster;
  /// Runs on each node when a deployment arrives, after the job was built and before its
  /// instances start, with the node's id and the names of the operators placed on it: prepares
  /// what they need on this host (input files, a local table, a broker the cluster file pins
  /// here). The handle lives as long as the deployment.
  std::function<std::shared_ptr<void>(const job_options&, const std::string& node,
                                      const std::vector<std::string>& hosted)>
      prepare_node;
  /// Runs on each node when its instances are done: the node's own figures (latency samples,
  /// CPU, memory) as bytes, which reach report in `job_result::node_reports`.
  std::function<std::string(const job_options&)> node_report;

  /// Options initialised with this job's declared specs.
  job_options make_options() const { return job_options{options}; }
};

/// Jobs by name.
class job_registry {
 public:
  /// Adds a job; throws job_error when the name is taken or build is missing.
  void add(job_spec spec);
  /// The job of that name; throws job_error listing the registered names when there is none.
  const job_spec& find(const std::string& name) const;
  /// Every job, ordered by name.
  std::vector<const job_spec*> all() const;

 private:
  std::map<std::string, job_spec> jobs_;
};

/// Turns `--name value` and `--name=value` arguments into options of `spec`; throws job_error
/// naming the argument when it is not an option of the job or lacks a value.
job_options parse_job_arguments(const job_spec& spec, const std::vector<std::string>& args);

/// Runs a registered job embedded in this process: prepare, build, run, report. The options as
/// given (before prepare resolves any) become the checkpoints' `job_settings`.
job_result run_registered(const job_spec& spec, job_options options, const run_options& opts = {});

}  // namespace tidemark
