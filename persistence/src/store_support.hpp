// What the table and blob stores share: table naming, creating a bytes table at a durability
// level (and checking an existing one matches), and committing at that level.
#pragma once

#include <string>

#include "tidemark/persistence/durability.hpp"
#include "tidemark/persistence/wiredtiger.hpp"

namespace tidemark::persistence::detail {

/// Throws std::invalid_argument unless `name` is non-empty and uses only letters, digits, '_',
/// '-' and '.'. `what` says which store, e.g. "table store".
void validate_store_name(const std::string& what, const std::string& name);

/// Creates table `table` (key_format=u, value_format=u, logged unless `level` is checkpoint) if
/// missing and opens a cursor on it. Throws std::invalid_argument when `level` needs the log and
/// the connection has none, or when an existing table has another format or log setting.
wt_cursor open_bytes_table(wt_session& session, const std::string& what, const std::string& table,
                           durability level);

/// Commits `tx` so that it is as durable as `level` promises.
void commit_at(wt_transaction& tx, wt_session& session, durability level);

}  // namespace tidemark::persistence::detail
