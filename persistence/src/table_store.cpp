// The key-value table store: every write is its own transaction committed at the store's
// durability level; range reads run in one snapshot.
#include "tidemark/persistence/table_store.hpp"

#include "store_support.hpp"

namespace tidemark::persistence {

std::optional<std::string> prefix_end(std::string_view prefix) {
  std::string end{prefix};
  while (!end.empty() && static_cast<unsigned char>(end.back()) == 0xff) end.pop_back();
  if (end.empty()) return std::nullopt;
  end.back() = static_cast<char>(static_cast<unsigned char>(end.back()) + 1);
  return end;
}

namespace {
std::string table_uri(const std::string& name) {
  detail::validate_store_name("table store", name);
  return "table:" + name;
}
}  // namespace

table_store::table_store(std::shared_ptr<wt_connection> conn, std::string name, durability level)
    : name_(std::move(name)),
      level_(level),
      session_(conn->open_session()),
      cursor_(detail::open_bytes_table(session_, "table store", table_uri(name_), level)) {}

void table_store::insert(std::string_view key, std::string_view value) {
  wt_transaction tx{session_};
  cursor_.set_key(key);
  cursor_.set_value(value);
  cursor_.insert();
  detail::commit_at(tx, session_, level_);
}

void table_store::insert_batch(const std::vector<row>& rows) {
  wt_transaction tx{session_};
  for (const auto& r : rows) {
    cursor_.set_key(r.key);
    cursor_.set_value(r.value);
    cursor_.insert();
  }
  detail::commit_at(tx, session_, level_);
}

std::optional<std::string> table_store::lookup(std::string_view key) {
  cursor_.set_key(key);
  std::optional<std::string> result;
  if (cursor_.search()) result.emplace(cursor_.value());
  cursor_.reset();  // releases the page pinned by the positioned cursor
  return result;
}

bool table_store::remove(std::string_view key) {
  wt_transaction tx{session_};
  cursor_.set_key(key);
  bool found = cursor_.search();
  if (found) cursor_.remove();
  cursor_.reset();
  detail::commit_at(tx, session_, level_);
  return found;
}

void table_store::scan(std::string_view first, std::optional<std::string_view> end,
                       const std::function<bool(std::string_view, std::string_view)>& visit) {
  wt_transaction tx{session_};  // one snapshot for the whole scan
  cursor_.set_key(first);
  for (bool more = cursor_.seek_at_or_after(); more; more = cursor_.next()) {
    auto key = cursor_.key();
    if (end && key >= *end) break;
    if (!visit(key, cursor_.value())) break;
  }
  cursor_.reset();
  tx.commit();
}

std::vector<row> table_store::range(std::string_view first, std::string_view end, std::size_t limit) {
  std::vector<row> rows;
  if (limit == 0 || first >= end) return rows;
  scan(first, end, [&](std::string_view k, std::string_view v) {
    rows.push_back(row{std::string{k}, std::string{v}});
    return rows.size() < limit;
  });
  return rows;
}

std::vector<row> table_store::prefix(std::string_view prefix, std::size_t limit) {
  std::vector<row> rows;
  if (limit == 0) return rows;
  auto end = prefix_end(prefix);
  scan(prefix, end ? std::optional<std::string_view>{*end} : std::nullopt,
       [&](std::string_view k, std::string_view v) {
         rows.push_back(row{std::string{k}, std::string{v}});
         return rows.size() < limit;
       });
  return rows;
}

void table_store::checkpoint() { session_.checkpoint(); }

}  // namespace tidemark::persistence
