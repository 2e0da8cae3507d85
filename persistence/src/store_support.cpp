// Shared plumbing of the WiredTiger stores: names, table creation per durability level, commits.
#include "store_support.hpp"

#include <wiredtiger.h>

#include <cstring>
#include <optional>
#include <stdexcept>

namespace tidemark::persistence {

const char* to_string(durability level) noexcept {
  switch (level) {
    case durability::checkpoint: return "checkpoint";
    case durability::process_crash: return "process_crash";
    case durability::power_loss: return "power_loss";
  }
  return "unknown";
}

namespace detail {

namespace {

// The value of `key` (e.g. "log.enabled") in a configuration string, or "" when absent.
std::string config_value(const char* config, const char* key) {
  WT_CONFIG_PARSER* parser = nullptr;
  if (wiredtiger_config_parser_open(nullptr, config, std::strlen(config), &parser) != 0) return {};
  WT_CONFIG_ITEM value;
  std::string result;
  if (parser->get(parser, key, &value) == 0) result.assign(value.str, value.len);
  parser->close(parser);
  return result;
}

// The metadata configuration of `uri` (e.g. "file:x.wt"), or nullopt when it does not exist.
std::optional<std::string> metadata_of(wt_session& session, const std::string& uri) {
  auto meta = session.open_cursor("metadata:");
  WT_CURSOR* c = meta.get();
  c->set_key(c, uri.c_str());
  if (c->search(c) != 0) return std::nullopt;
  const char* config = nullptr;
  c->get_value(c, &config);
  return std::string{config};
}

}  // namespace

void validate_store_name(const std::string& what, const std::string& name) {
  bool ok = !name.empty();
  for (char c : name) {
    bool allowed = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                   c == '_' || c == '-' || c == '.';
    ok = ok && allowed;
  }
  if (!ok)
    throw std::invalid_argument(what + " name " + quote_bytes(name) +
                                " is invalid: use a non-empty name of letters, digits, '_', '-' and '.'");
}

wt_cursor open_bytes_table(wt_session& session, const std::string& what, const std::string& table,
                           durability level) {
  const bool logged = level != durability::checkpoint;
  if (logged && !session.connection().logging_enabled())
    throw std::invalid_argument(what + " " + table + ": durability " + to_string(level) +
                                " needs the log; open the connection with log=(enabled=true)"
                                " or use durability checkpoint");
  // Created only when missing, so a read-only connection can open existing tables.
  if (!metadata_of(session, table))
    session.create(table, std::string{"key_format=u,value_format=u,log=(enabled="} +
                              (logged ? "true" : "false") + ")");
  auto cursor = session.open_cursor(table);
  WT_CURSOR* c = cursor.get();
  if (std::strcmp(c->key_format, "u") != 0 || std::strcmp(c->value_format, "u") != 0)
    throw std::invalid_argument(what + " " + table + " exists with key_format=" + c->key_format +
                                ",value_format=" + c->value_format +
                                "; a store needs u,u (raw bytes). Use another name.");
  auto file_config = metadata_of(session, "file:" + table.substr(std::strlen("table:")) + ".wt");
  bool table_logged = !file_config || config_value(file_config->c_str(), "log.enabled") != "false";
  if (table_logged != logged)
    throw std::invalid_argument(what + " " + table + " was created " +
                                (logged ? "without" : "with") + " a log, so it cannot give durability " +
                                to_string(level) + "; open it with the level it was created with");
  return cursor;
}

void commit_at(wt_transaction& tx, wt_session& session, durability level) {
  switch (level) {
    case durability::checkpoint:
      tx.commit();
      break;
    case durability::process_crash:
      tx.commit();
      session.log_flush("sync=off");
      session.check_connection();  // a failed log write may not fail the commit
      break;
    case durability::power_loss:
      tx.commit("sync=on");
      session.check_connection();
      break;
  }
}

}  // namespace detail
}  // namespace tidemark::persistence
