// RAII handles for a WiredTiger connection, its sessions and cursors. One connection per data
// directory is shared by every store (table, blob, window state); each thread opens its own
// session, because a WT_SESSION and its cursors must not be used by two threads at once.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

// WiredTiger's own struct tags; <wiredtiger.h> stays out of this header.
struct __wt_connection;  // NOLINT(bugprone-reserved-identifier): WiredTiger's name
struct __wt_session;     // NOLINT(bugprone-reserved-identifier)
struct __wt_cursor;      // NOLINT(bugprone-reserved-identifier)

namespace tidemark::persistence {

/// A failed WiredTiger call. what() names the operation, the object (table, key) and carries
/// wiredtiger_strerror's text; code() is WiredTiger's (or errno's) error code.
class storage_error : public std::runtime_error {
 public:
  /// WiredTiger's WT_PANIC: after a failed write (e.g. a full disk) the connection refuses
  /// every call; the database must be closed and opened again.
  static constexpr int panic = -31804;

  storage_error(int code, const std::string& what) : std::runtime_error(what), code_(code) {}
  int code() const noexcept { return code_; }
  /// The connection is unusable (code() == panic): reopen the database to go on.
  bool connection_lost() const noexcept { return code_ == panic; }

 private:
  int code_;
};

/// A key or value quoted for an error message: printable bytes as they are, others as \xNN,
/// cut after 64 bytes.
std::string quote_bytes(std::string_view bytes);

class wt_session;

/// An open WiredTiger database (one data directory). Shared by stores through shared_ptr; it is
/// closed when the last session and store using it is gone. Thread-safe.
class wt_connection : public std::enable_shared_from_this<wt_connection> {
 public:
  /// Opens the database in directory `home`, creating the directory and the database when
  /// missing. `config` is a wiredtiger_open configuration string (`create` is added), e.g.
  /// "log=(enabled=true),cache_size=256MB". Throws storage_error naming `home`.
  static std::shared_ptr<wt_connection> open(const std::string& home, const std::string& config = "");
  /// The connection this process has open on `home`, or a new one opened with `config`.
  /// WiredTiger allows one connection per directory and process, so components that find a
  /// directory by name (sink instances of one job) share it this way; the first opener's `config`
  /// applies. Thread-safe.
  static std::shared_ptr<wt_connection> open_shared(const std::string& home, const std::string& config = "");

  /// Use open(); the key keeps construction inside it, so every connection is shared-owned.
  class key {
    friend class wt_connection;
    key() = default;
  };
  /// WiredTiger's error messages of the connection (defined in wiredtiger.cpp).
  struct event_log;
  wt_connection(key, __wt_connection* conn, std::string home, bool logging,
                std::unique_ptr<event_log> events);
  ~wt_connection();
  wt_connection(const wt_connection&) = delete;
  wt_connection& operator=(const wt_connection&) = delete;

  /// A new session for the calling thread.
  wt_session open_session();

  const std::string& home() const noexcept { return home_; }
  /// Whether the connection writes a log (config `log=(enabled=true)`); logged stores need it.
  bool logging_enabled() const noexcept { return logging_; }
  /// WiredTiger's "cache: bytes currently in the cache": the memory the connection's pages hold
  /// now, at most its cache_size plus what eviction has not caught up with. The connection must
  /// keep statistics (config `statistics=(fast)`); otherwise this throws storage_error.
  std::uint64_t cache_bytes_in_use();
  __wt_connection* get() const noexcept { return conn_; }

 private:
  __wt_connection* conn_;
  std::string home_;
  bool logging_;
  std::unique_ptr<event_log> events_;
};

class wt_cursor;

/// A WiredTiger session: one thread at a time. Keeps its connection alive.
class wt_session {
 public:
  wt_session(std::shared_ptr<wt_connection> conn, __wt_session* session) noexcept
      : conn_(std::move(conn)), session_(session) {}
  wt_session(wt_session&& other) noexcept;
  wt_session& operator=(wt_session&& other) noexcept;
  ~wt_session();

  /// Creates `uri` (e.g. "table:events") unless it exists; `config` as for WT_SESSION::create.
  void create(const std::string& uri, const std::string& config);
  /// A cursor on `uri`; throws storage_error naming the uri.
  wt_cursor open_cursor(const std::string& uri, const char* config = nullptr);
  /// Removes `uri` and its files; `config` as for WT_SESSION::drop ("force=true": discard what
  /// the cache holds of it unwritten).
  void drop(const std::string& uri, const char* config = nullptr);

  void begin_transaction();
  /// Commits; `config` as for WT_SESSION::commit_transaction (e.g. "sync=on").
  void commit_transaction(const char* config = nullptr);
  void rollback_transaction() noexcept;
  /// WT_SESSION::log_flush: "sync=off" hands buffered log records to the OS, "sync=on" fsyncs.
  void log_flush(const char* config);
  /// Throws storage_error (WT_PANIC) when the connection failed. WiredTiger 3.2.1 can return
  /// success from a synced commit whose log write failed (a full disk), panicking the connection
  /// in the same call; this confirms such a commit.
  void check_connection();
  /// Writes a checkpoint of every table: afterwards unlogged tables survive a crash too.
  void checkpoint();

  wt_connection& connection() const noexcept { return *conn_; }
  __wt_session* get() const noexcept { return session_; }

 private:
  std::shared_ptr<wt_connection> conn_;
  __wt_session* session_;
};

/// A transaction that rolls back unless commit() was called.
class wt_transaction {
 public:
  explicit wt_transaction(wt_session& session);
  ~wt_transaction();
  wt_transaction(const wt_transaction&) = delete;
  wt_transaction& operator=(const wt_transaction&) = delete;
  void commit(const char* config = nullptr);

 private:
  wt_session& session_;
  bool open_;
};

/// A cursor over a table whose keys and values are raw bytes (key_format=u, value_format=u),
/// ordered bytewise. The empty key is never stored: searching it finds nothing, seeking it starts
/// at the first row, inserting it throws. Views returned by key()/value() stay valid until the next call on the
/// cursor; bytes passed to set_key()/set_value() must stay alive until the next call too.
class wt_cursor {
 public:
  wt_cursor(std::string uri, __wt_cursor* cursor) noexcept : uri_(std::move(uri)), cursor_(cursor) {}
  wt_cursor(wt_cursor&& other) noexcept;
  wt_cursor& operator=(wt_cursor&& other) noexcept;
  ~wt_cursor();

  void set_key(std::string_view key);
  void set_value(std::string_view value);
  std::string_view key() const;
  std::string_view value() const;

  /// Positions on the set key; false when it is absent.
  bool search();
  /// Positions on the first key >= the set key; false when there is none.
  bool seek_at_or_after();
  bool next();
  bool prev();
  /// Inserts or overwrites the set key with the set value.
  void insert();
  /// Removes the set key (nothing happens when it is absent).
  void remove();
  void reset();

  const std::string& uri() const noexcept { return uri_; }
  __wt_cursor* get() const noexcept { return cursor_; }

 private:
  [[noreturn]] void fail(int code, const char* op) const;
  /// Fault injection before a write (see wiredtiger.cpp).
  void before_write(const char* op);

  std::string uri_;
  __wt_cursor* cursor_;
  std::string key_;  // a copy of the key last set, for error messages
};

}  // namespace tidemark::persistence
