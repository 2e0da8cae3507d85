// The job registry and option parsing behind `tidemark run JOB [options]`.
#include "tidemark/runtime/job_registry.hpp"

#include <algorithm>
#include <cctype>
#include <stdexcept>

namespace tidemark {

const job_option_spec& job_options::spec(const std::string& name) const {
  auto it = std::find_if(specs_.begin(), specs_.end(), [&](auto& s) { return s.name == name; });
  if (it != specs_.end()) return *it;
  std::string known;
  for (const auto& s : specs_) known += (known.empty() ? "--" : ", --") + s.name;
  throw job_error("unknown option '--" + name + "'; the job's options are: " +
                  (known.empty() ? "(none)" : known));
}

void job_options::set(const std::string& name, std::string value) {
  spec(name);
  values_[name] = std::move(value);
}

std::string job_options::get(const std::string& name) const {
  const auto& s = spec(name);
  auto it = values_.find(name);
  return it != values_.end() ? it->second : s.default_value;
}

namespace {

template <class T, class Parse>
T parse_whole(const std::string& name, const std::string& text, const char* what, Parse parse) {
  try {
    std::size_t used = 0;
    T v = parse(text, &used);
    if (used == text.size()) return v;
  } catch (const std::exception&) {
  }
  throw job_error("option --" + name + ": expected " + what + ", got '" + text + "'");
}

}  // namespace

std::int64_t job_options::get_int(const std::string& name) const {
  return parse_whole<std::int64_t>(name, get(name), "an integer",
                                   [](const std::string& s, std::size_t* n) { return std::stoll(s, n); });
}

double job_options::get_double(const std::string& name) const {
  return parse_whole<double>(name, get(name), "a number",
                             [](const std::string& s, std::size_t* n) { return std::stod(s, n); });
}

bool job_options::get_bool(const std::string& name) const {
  auto v = get(name);
  std::transform(v.begin(), v.end(), v.begin(), [](unsigned char c) { return std::tolower(c); });
  if (v == "true" || v == "yes" || v == "on" || v == "1") return true;
  if (v == "false" || v == "no" || v == "off" || v == "0") return false;
  throw job_error("option --" + name + ": expected true or false, got '" + get(name) + "'");
}

void job_registry::add(job_spec spec) {
  if (!spec.build) throw job_error("job '" + spec.name + "': no build function");
  auto name = spec.name;
  if (!jobs_.emplace(name, std::move(spec)).second)
    throw job_error("job '" + name + "' is registered twice");
}

const job_spec& job_registry::find(const std::string& name) const {
  if (auto it = jobs_.find(name); it != jobs_.end()) return it->second;
  std::string known;
  for (const auto& [n, s] : jobs_) known += (known.empty() ? "" : ", ") + n;
  throw job_error("no job named '" + name + "'; registered jobs: " +
                  (known.empty() ? "(none)" : known));
}

std::vector<const job_spec*> job_registry::all() const {
  std::vector<const job_spec*> out;
  for (const auto& [n, s] : jobs_) out.push_back(&s);
  return out;
}

job_options parse_job_arguments(const job_spec& spec, const std::vector<std::string>& args) {
  auto options = spec.make_options();
  for (std::size_t i = 0; i < args.size(); ++i) {
    const auto& arg = args[i];
    if (arg.rfind("--", 0) != 0 || arg.size() == 2)
      throw job_error("job '" + spec.name + "': expected an option like --name value, got '" +
                      arg + "'");
    auto eq = arg.find('=');
    if (eq != std::string::npos) {
      options.set(arg.substr(2, eq - 2), arg.substr(eq + 1));
    } else if (i + 1 < args.size()) {
      options.set(arg.substr(2), args[i + 1]);
      ++i;
    } else {
      throw job_error("job '" + spec.name + "': option '" + arg + "' needs a value");
    }
  }
  return options;
}

std::string job_options::text() const {
  std::string out;
  for (const auto& s : specs_) out += s.name + "=" + get(s.name) + "\n";
  return out;
}

job_result run_registered(const job_spec& spec, job_options options, const run_options& opts) {
  auto run_opts = opts;
  run_opts.checkpoints.job_settings = options.text();
  std::shared_ptr<void> prepared;
  if (spec.prepare) prepared = spec.prepare(options);
  auto result = run(spec.build(options), run_opts);
  if (spec.report) spec.report(options, result);
  return result;
}

}  // namespace tidemark
