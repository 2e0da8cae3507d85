// RAII handles over the WiredTiger C API; every failing call becomes a storage_error that says
// what was attempted on which object, with wiredtiger_strerror's text.
//
// Injected storage faults (faults.hpp) strike here, the layer every store shares: a commit of a
// transaction that wrote, an insert or remove outside a transaction (the storage service's
// blocks), and a checkpoint. Not in a WT_FILE_SYSTEM: WiredTiger 3.2 lets an extension replace
// the file system but gives it no access to the POSIX one to wrap, so it would mean a second
// POSIX file system of our own under every store; and a failed write in there panics the whole
// connection (as a real full disk does, which the tmpfs test covers), so it could not test how a
// store handles a single failed write.
#include "tidemark/persistence/wiredtiger.hpp"
#include "tidemark/persistence/wiredtiger_warm_up.hpp"

#include <wiredtiger.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <mutex>
#include <utility>

#include "fault_injection.hpp"

namespace tidemark::persistence {

static_assert(storage_error::panic == WT_PANIC);

/// Receives WiredTiger's error messages for one connection. After a failed write WiredTiger
/// panics the connection and every later call returns only WT_PANIC; the message it logged
/// before (e.g. "pwrite: failed to write ... : No space left on device") is the cause, and goes
/// into the errors of those calls.
struct wt_connection::event_log {
  struct handler_type : WT_EVENT_HANDLER {
    event_log* owner = nullptr;
  };
  handler_type handler{};  // WiredTiger passes its address back to on_error
  std::mutex m;
  int last_code = 0;
  std::string last_error;

  event_log() {
    handler.handle_error = &on_error;
    handler.owner = this;
  }

  static int on_error(WT_EVENT_HANDLER* h, WT_SESSION*, int error, const char* message) {
    std::fprintf(stderr, "%s\n", message);  // what WiredTiger's default handler does
    if (error > 0) {  // a system error (ENOSPC, EIO), not a panic or an informational line
      auto* self = static_cast<handler_type*>(h)->owner;
      std::string text{message};
      // drop WiredTiger's "[time][pid:thread], " prefix
      if (auto at = text.find("], "); !text.empty() && text[0] == '[' && at != std::string::npos)
        text.erase(0, at + 3);
      std::lock_guard lock{self->m};
      self->last_code = error;
      self->last_error = std::move(text);
    }
    return 0;
  }

  /// The last system error WiredTiger reported ("" when none), with its code.
  std::pair<int, std::string> cause() {
    std::lock_guard lock{m};
    return {last_code, last_error};
  }
};

namespace {

// The event logs of open connections by handle, so a call that fails with WT_PANIC finds the
// cause from its WT_CONNECTION alone. Only opening, closing and failures look here.
std::mutex registry_mutex;
std::map<WT_CONNECTION*, wt_connection::event_log*> registry;

void registry_add(WT_CONNECTION* conn, wt_connection::event_log* log) {
  std::lock_guard lock{registry_mutex};
  registry[conn] = log;
}

void registry_remove(WT_CONNECTION* conn) {
  std::lock_guard lock{registry_mutex};
  registry.erase(conn);
}

std::pair<int, std::string> cause_of_panic(WT_CONNECTION* conn) {
  std::lock_guard lock{registry_mutex};
  auto it = registry.find(conn);
  return it == registry.end() ? std::pair<int, std::string>{} : it->second->cause();
}

// "CONTEXT: <the system error> (WiredTiger: <its message>; ...)" when WiredTiger panicked after
// a system error, else "CONTEXT: <WiredTiger's text for code>".
std::string error_text(int code, const std::string& context,
                       const std::pair<int, std::string>& cause) {
  if (code != WT_PANIC || cause.first == 0) return context + ": " + wiredtiger_strerror(code);
  return context + ": " + wiredtiger_strerror(cause.first) + " (WiredTiger: " + cause.second +
         "; it panicked, so the database must be closed and opened again)";
}

// The flags a session keeps in WT_SESSION::app_private, for fault injection: a transaction is
// open, and it wrote something (only then does its commit count as a write).
constexpr std::uintptr_t in_transaction = 1;
constexpr std::uintptr_t wrote = 2;

std::uintptr_t flags_of(WT_SESSION* s) {
  return reinterpret_cast<std::uintptr_t>(s->app_private);
}
void set_flags(WT_SESSION* s, std::uintptr_t f) {
  s->app_private = reinterpret_cast<void*>(f);
}

// The error for WiredTiger's `code`, with the cause WiredTiger logged when the connection panicked.
storage_error wt_error(int code, const std::string& context, WT_CONNECTION* conn) {
  return storage_error(
      code, error_text(code, context, conn ? cause_of_panic(conn) : std::pair<int, std::string>{}));
}

// Throws when `code` is an error; `context()` (what was attempted, on what) is built only then,
// so a successful call allocates nothing.
template <class Context>
void check(int code, Context&& context, WT_CONNECTION* conn = nullptr) {
  if (code != 0) throw wt_error(code, context(), conn);
}

// Reads `log.enabled` from a wiredtiger_open configuration string.
bool config_enables_log(const std::string& config) {
  WT_CONFIG_PARSER* parser = nullptr;
  if (wiredtiger_config_parser_open(nullptr, config.data(), config.size(), &parser) != 0)
    return false;  // wiredtiger_open reports the malformed string itself
  WT_CONFIG_ITEM value;
  bool enabled = parser->get(parser, "log.enabled", &value) == 0 && value.val != 0;
  parser->close(parser);
  return enabled;
}

}  // namespace

std::string quote_bytes(std::string_view bytes) {
  static constexpr std::size_t max_shown = 64;
  static constexpr char hex[] = "0123456789abcdef";
  std::string out = "\"";
  for (std::size_t i = 0; i < bytes.size() && i < max_shown; ++i) {
    auto c = static_cast<unsigned char>(bytes[i]);
    if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') {
      out += static_cast<char>(c);
    } else {
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 0xf];
    }
  }
  out += '"';
  if (bytes.size() > max_shown) out += "... (" + std::to_string(bytes.size()) + " bytes)";
  return out;
}

void warm_up_wiredtiger() {
  static std::once_flag once;
  std::call_once(once, [] {
    // wiredtiger_open initializes the library first, then rejects the unknown configuration key
    // before it looks at the home directory; the handler keeps the rejection off stderr
    WT_EVENT_HANDLER quiet{};
    quiet.handle_error = [](WT_EVENT_HANDLER*, WT_SESSION*, int, const char*) { return 0; };
    WT_CONNECTION* conn = nullptr;
    wiredtiger_open(".", &quiet, "tidemark_warm_up", &conn);
  });
}

// ---- wt_connection ----

std::shared_ptr<wt_connection> wt_connection::open(const std::string& home, const std::string& config) {
  std::error_code ec;
  std::filesystem::create_directories(home, ec);
  if (ec) throw storage_error(ec.value(), "creating the WiredTiger home directory '" + home + "': " + ec.message());
  WT_CONNECTION* conn = nullptr;
  std::string full = config.empty() ? "create" : "create," + config;
  auto events = std::make_unique<event_log>();
  if (int rc = wiredtiger_open(home.c_str(), &events->handler, full.c_str(), &conn); rc != 0)
    throw storage_error(
        rc, error_text(
                rc, "opening WiredTiger database in '" + home + "' with config \"" + config + "\"",
                events->cause()));
  registry_add(conn, events.get());
  return std::make_shared<wt_connection>(key{}, conn, home, config_enables_log(config),
                                         std::move(events));
}

std::shared_ptr<wt_connection> wt_connection::open_shared(const std::string& home,
                                                          const std::string& config) {
  static std::mutex mutex;
  static std::map<std::string, std::weak_ptr<wt_connection>> open;
  std::error_code ec;
  std::filesystem::create_directories(home, ec);
  auto name = std::filesystem::weakly_canonical(home, ec).string();
  if (ec) name = home;
  std::lock_guard lock{mutex};
  if (auto conn = open[name].lock()) return conn;
  auto conn = wt_connection::open(home, config);
  open[name] = conn;
  return conn;
}

wt_connection::wt_connection(key, __wt_connection* conn, std::string home, bool logging,
                             std::unique_ptr<event_log> events)
    : conn_(conn), home_(std::move(home)), logging_(logging), events_(std::move(events)) {}

wt_connection::~wt_connection() {
  // Closing the connection closes any session still open; stores hold the connection through
  // shared_ptr, so none is left here.
  conn_->close(conn_, nullptr);
  registry_remove(conn_);
}

wt_session wt_connection::open_session() {
  WT_SESSION* session = nullptr;
  check(
      conn_->open_session(conn_, nullptr, nullptr, &session),
      [&] { return "opening a session on the WiredTiger database in '" + home_ + "'"; }, conn_);
  return wt_session{shared_from_this(), session};
}

std::uint64_t wt_connection::cache_bytes_in_use() {
  auto session = open_session();
  auto fail = [&] {
    return "reading the cache statistics of the WiredTiger database in '" + home_ + "'";
  };
  WT_CURSOR* stats = nullptr;
  check(session.get()->open_cursor(session.get(), "statistics:", nullptr, nullptr, &stats), fail,
        conn_);
  stats->set_key(stats, WT_STAT_CONN_CACHE_BYTES_INUSE);
  int rc = stats->search(stats);
  const char* description = nullptr;
  const char* printable = nullptr;
  std::int64_t value = 0;
  if (rc == 0) rc = stats->get_value(stats, &description, &printable, &value);
  stats->close(stats);
  check(rc, fail, conn_);
  return static_cast<std::uint64_t>(value);
}

// ---- wt_session ----

wt_session::wt_session(wt_session&& other) noexcept
    : conn_(std::move(other.conn_)), session_(std::exchange(other.session_, nullptr)) {}

wt_session& wt_session::operator=(wt_session&& other) noexcept {
  if (this != &other) {
    if (session_) session_->close(session_, nullptr);
    conn_ = std::move(other.conn_);
    session_ = std::exchange(other.session_, nullptr);
  }
  return *this;
}

wt_session::~wt_session() {
  if (session_) session_->close(session_, nullptr);
}

void wt_session::create(const std::string& uri, const std::string& config) {
  check(
      session_->create(session_, uri.c_str(), config.c_str()),
      [&] { return "creating " + uri + " in '" + conn_->home() + "'"; }, conn_->get());
}

wt_cursor wt_session::open_cursor(const std::string& uri, const char* config) {
  WT_CURSOR* cursor = nullptr;
  check(
      session_->open_cursor(session_, uri.c_str(), nullptr, config, &cursor),
      [&] { return "opening a cursor on " + uri + " in '" + conn_->home() + "'"; }, conn_->get());
  return wt_cursor{uri, cursor};
}

void wt_session::drop(const std::string& uri, const char* config) {
  check(
      session_->drop(session_, uri.c_str(), config),
      [&] { return "dropping " + uri + " in '" + conn_->home() + "'"; }, conn_->get());
}

void wt_session::begin_transaction() {
  check(
      session_->begin_transaction(session_, nullptr),
      [&] { return "beginning a transaction in '" + conn_->home() + "'"; }, conn_->get());
  set_flags(session_, in_transaction);
}

void wt_session::commit_transaction(const char* config) {
  const bool wrote_rows = (flags_of(session_) & wrote) != 0;
  set_flags(session_, 0);
  if (wrote_rows && detail::storage_faults_active()) {
    try {
      detail::inject_write_fault(conn_->home(),
                                 [] { return std::string{"committing a transaction"}; });
    } catch (const storage_error&) {
      session_->rollback_transaction(session_, nullptr);  // as a failed commit does
      throw;
    }
  }
  check(
      session_->commit_transaction(session_, config),
      [&] { return "committing a transaction in '" + conn_->home() + "'"; }, conn_->get());
}

void wt_session::rollback_transaction() noexcept {
  set_flags(session_, 0);
  session_->rollback_transaction(session_, nullptr);
}

void wt_session::log_flush(const char* config) {
  check(
      session_->log_flush(session_, config),
      [&] { return std::string{"flushing the log ("} + config + ") in '" + conn_->home() + "'"; },
      conn_->get());
}

void wt_session::check_connection() {
  // a cheap call that touches no cursor and, like every call, fails once the connection panicked
  std::uint64_t pinned = 0;
  check(
      session_->transaction_pinned_range(session_, &pinned),
      [&] { return "checking the WiredTiger database in '" + conn_->home() + "'"; }, conn_->get());
}

void wt_session::checkpoint() {
  detail::inject_write_fault(conn_->home(), [] { return std::string{"checkpointing"}; });
  check(
      session_->checkpoint(session_, nullptr),
      [&] { return "checkpointing '" + conn_->home() + "'"; }, conn_->get());
}

// ---- wt_transaction ----

wt_transaction::wt_transaction(wt_session& session) : session_(session), open_(false) {
  session_.begin_transaction();
  open_ = true;
}

wt_transaction::~wt_transaction() {
  if (open_) session_.rollback_transaction();
}

void wt_transaction::commit(const char* config) {
  open_ = false;  // a failed commit has already rolled back
  session_.commit_transaction(config);
}

// ---- wt_cursor ----

wt_cursor::wt_cursor(wt_cursor&& other) noexcept
    : uri_(std::move(other.uri_)), cursor_(std::exchange(other.cursor_, nullptr)), key_(std::move(other.key_)) {}

wt_cursor& wt_cursor::operator=(wt_cursor&& other) noexcept {
  if (this != &other) {
    if (cursor_) cursor_->close(cursor_);
    uri_ = std::move(other.uri_);
    cursor_ = std::exchange(other.cursor_, nullptr);
    key_ = std::move(other.key_);
  }
  return *this;
}

wt_cursor::~wt_cursor() {
  if (cursor_) cursor_->close(cursor_);
}

void wt_cursor::fail(int code, const char* op) const {
  throw wt_error(code, std::string{op} + " " + uri_ + " key " + quote_bytes(key_),
                 cursor_->session->connection);
}

void wt_cursor::before_write(const char* op) {
  WT_SESSION* s = cursor_->session;
  if (const auto f = flags_of(s); f & in_transaction) {
    set_flags(s, f | wrote);  // the commit is the write
  } else if (detail::storage_faults_active()) {
    detail::inject_write_fault(s->connection->get_home(s->connection), [&] {
      return std::string{op} + " " + uri_ + " key " + quote_bytes(key_);
    });
  }
}

void wt_cursor::set_key(std::string_view key) {
  key_.assign(key.data(), key.size());
  if (key.empty()) return;  // WiredTiger rejects (and logs) empty keys; the operations handle them
  WT_ITEM item;
  std::memset(&item, 0, sizeof item);
  item.data = key.data();
  item.size = key.size();
  cursor_->set_key(cursor_, &item);
}

void wt_cursor::set_value(std::string_view value) {
  WT_ITEM item;
  std::memset(&item, 0, sizeof item);
  item.data = value.data();
  item.size = value.size();
  cursor_->set_value(cursor_, &item);
}

std::string_view wt_cursor::key() const {
  WT_ITEM item;
  if (int rc = cursor_->get_key(cursor_, &item); rc != 0) fail(rc, "reading the key of");
  return {static_cast<const char*>(item.data), item.size};
}

std::string_view wt_cursor::value() const {
  WT_ITEM item;
  if (int rc = cursor_->get_value(cursor_, &item); rc != 0) fail(rc, "reading the value of");
  return {static_cast<const char*>(item.data), item.size};
}

bool wt_cursor::search() {
  if (key_.empty()) return false;  // no row can have an empty key
  int rc = cursor_->search(cursor_);
  if (rc == WT_NOTFOUND) return false;
  if (rc != 0) fail(rc, "looking up in");
  return true;
}

bool wt_cursor::seek_at_or_after() {
  if (key_.empty()) {  // search_near rejects an empty key; every key is at or after it
    cursor_->reset(cursor_);
    return next();
  }
  int exact = 0;
  int rc = cursor_->search_near(cursor_, &exact);
  if (rc == WT_NOTFOUND) return false;
  if (rc != 0) fail(rc, "seeking in");
  if (exact >= 0) return true;
  rc = cursor_->next(cursor_);  // landed on the largest smaller key
  if (rc == WT_NOTFOUND) return false;
  if (rc != 0) fail(rc, "seeking in");
  return true;
}

bool wt_cursor::next() {
  int rc = cursor_->next(cursor_);
  if (rc == WT_NOTFOUND) return false;
  if (rc != 0) fail(rc, "iterating");
  return true;
}

bool wt_cursor::prev() {
  int rc = cursor_->prev(cursor_);
  if (rc == WT_NOTFOUND) return false;
  if (rc != 0) fail(rc, "iterating");
  return true;
}

void wt_cursor::insert() {
  if (key_.empty()) fail(EINVAL, "inserting an empty key (not permitted) into");
  before_write("inserting into");
  if (int rc = cursor_->insert(cursor_); rc != 0) fail(rc, "inserting into");
}

void wt_cursor::remove() {
  if (key_.empty()) return;  // absent by definition
  before_write("removing from");
  int rc = cursor_->remove(cursor_);
  if (rc != 0 && rc != WT_NOTFOUND) fail(rc, "removing from");
}

void wt_cursor::reset() {
  if (int rc = cursor_->reset(cursor_); rc != 0) fail(rc, "resetting a cursor on");
}

}  // namespace tidemark::persistence
