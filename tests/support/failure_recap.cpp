// Linked into every test executable: the errors of a test module, repeated in one list at the end
// of its log. CI shows the head and the tail of a failing test's output; a long test's failed
// checks sit in the middle, so without this list a failure there could be named but not read.
// The formatter is Boost.Test's own human-readable one, otherwise unchanged.
#include <boost/test/execution_monitor.hpp>
#include <boost/test/framework.hpp>
#include <boost/test/output/compiler_log_formatter.hpp>
#include <boost/test/unit_test.hpp>
#include <boost/test/utils/lazy_ostream.hpp>
#include <ostream>
#include <sstream>
#include <string>
#include <vector>

namespace {
namespace ut = boost::unit_test;

class failure_recap final : public ut::output::compiler_log_formatter {
 public:
  void log_finish(std::ostream& os) override {
    compiler_log_formatter::log_finish(os);
    if (failures_.empty()) return;
    os << "\n" << failures_.size() << " failure(s) of this module, again here at its end:\n";
    for (const auto& f : failures_) os << "  " << f << "\n";
    os.flush();
  }
  void log_exception_start(std::ostream& os, ut::log_checkpoint_data const& cp,
                           boost::execution_exception const& ex) override {
    compiler_log_formatter::log_exception_start(os, cp, ex);
    std::ostringstream s;
    s << "in \"" << current_test() << "\": " << ex.where().m_file_name << "("
      << ex.where().m_line_num << "): exception: " << ex.what();
    if (!cp.m_file_name.is_empty())
      s << " (last checkpoint " << cp.m_file_name << "(" << cp.m_line_num << "))";
    failures_.push_back(s.str());
  }
  void log_entry_start(std::ostream& os, ut::log_entry_data const& d, log_entry_types t) override {
    compiler_log_formatter::log_entry_start(os, d, t);
    recording_ = t >= BOOST_UTL_ET_ERROR;
    if (!recording_) return;
    std::ostringstream s;
    s << "in \"" << current_test() << "\": " << d.m_file_name << "(" << d.m_line_num << "): ";
    entry_ = s.str();
  }
  void log_entry_value(std::ostream& os, ut::const_string value) override {
    compiler_log_formatter::log_entry_value(os, value);
    if (recording_) entry_.append(value.begin(), value.end());
  }
  void log_entry_value(std::ostream& os, ut::lazy_ostream const& value) override {
    std::ostringstream s;
    s << value;
    log_entry_value(os, ut::const_string{s.str()});
  }
  void log_entry_finish(std::ostream& os) override {
    compiler_log_formatter::log_entry_finish(os);
    if (recording_) failures_.push_back(entry_);
    recording_ = false;
  }

 private:
  static std::string current_test() {
    return ut::framework::get(ut::framework::current_test_case_id(), ut::TUT_ANY).p_name.get();
  }
  std::vector<std::string> failures_;
  std::string entry_;
  bool recording_ = false;
};

struct install_failure_recap {
  install_failure_recap() { ut::unit_test_log.set_formatter(new failure_recap); }
};
BOOST_TEST_GLOBAL_FIXTURE(install_failure_recap);
}  // namespace
