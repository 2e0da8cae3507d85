// The blob store: a catalog row per blob (size, chunk count) and its chunks under keys
// "<name>\0<chunk index, 8 bytes big-endian>", so the chunks of one blob are adjacent and ordered.
#include "tidemark/persistence/blob_store.hpp"

#include <cerrno>
#include <stdexcept>

#include "store_support.hpp"

namespace tidemark::persistence {

namespace {

void put_u64(std::string& out, std::uint64_t x) {
  for (int shift = 56; shift >= 0; shift -= 8) out += static_cast<char>((x >> shift) & 0xff);
}

std::uint64_t get_u64(std::string_view in, std::size_t at) {
  std::uint64_t x = 0;
  for (std::size_t i = 0; i < 8; ++i) x = (x << 8) | static_cast<unsigned char>(in[at + i]);
  return x;
}

std::string store_table(const std::string& name, const char* part) {
  detail::validate_store_name("blob store", name);
  return "table:" + name + part;
}

void validate_blob_name(const std::string& store, std::string_view blob) {
  if (blob.empty() || blob.find('\0') != std::string_view::npos)
    throw std::invalid_argument("blob store " + store + ": blob name " + quote_bytes(blob) +
                                " is invalid: use a non-empty name without NUL bytes");
}

}  // namespace

blob_store::blob_store(std::shared_ptr<wt_connection> conn, std::string name, durability level,
                       std::size_t chunk_size)
    : name_(std::move(name)),
      level_(level),
      chunk_size_(chunk_size),
      session_(conn->open_session()),
      catalog_(detail::open_bytes_table(session_, "blob store", store_table(name_, ".catalog"), level)),
      chunks_(detail::open_bytes_table(session_, "blob store", store_table(name_, ".chunks"), level)) {
  if (chunk_size_ == 0) throw std::invalid_argument("blob store " + name_ + ": chunk size must be > 0");
}

blob_store::entry blob_store::decode(std::string_view blob, std::string_view value) const {
  if (value.size() != 16)
    throw storage_error(EIO, "blob store " + name_ + " blob " + quote_bytes(blob) +
                                 ": catalog entry has " + std::to_string(value.size()) +
                                 " bytes, expected 16 (store damaged)");
  return entry{get_u64(value, 0), get_u64(value, 8)};
}

std::optional<blob_store::entry> blob_store::find(std::string_view blob) {
  catalog_.set_key(blob);
  std::optional<entry> result;
  if (catalog_.search()) result = decode(blob, catalog_.value());
  catalog_.reset();
  return result;
}

void blob_store::remove_chunks(std::string_view blob, std::uint64_t from, std::uint64_t to) {
  for (auto i = from; i < to; ++i) {
    key_.assign(blob);
    key_ += '\0';
    put_u64(key_, i);
    chunks_.set_key(key_);
    chunks_.remove();
  }
}

void blob_store::put(std::string_view blob, std::string_view bytes) {
  validate_blob_name(name_, blob);
  wt_transaction tx{session_};
  auto old = find(blob);
  const std::uint64_t count = (bytes.size() + chunk_size_ - 1) / chunk_size_;
  for (std::uint64_t i = 0; i < count; ++i) {
    key_.assign(blob);
    key_ += '\0';
    put_u64(key_, i);
    chunks_.set_key(key_);
    chunks_.set_value(bytes.substr(i * chunk_size_, chunk_size_));
    chunks_.insert();
  }
  if (old && old->chunks > count) remove_chunks(blob, count, old->chunks);
  std::string meta;
  put_u64(meta, bytes.size());
  put_u64(meta, count);
  catalog_.set_key(blob);
  catalog_.set_value(meta);
  catalog_.insert();
  detail::commit_at(tx, session_, level_);
}

std::optional<std::string> blob_store::get(std::string_view blob) {
  wt_transaction tx{session_};  // catalog and chunks from one snapshot
  auto e = find(blob);
  if (!e) return std::nullopt;
  std::string bytes;
  bytes.reserve(e->size);
  for (std::uint64_t i = 0; i < e->chunks; ++i) {
    key_.assign(blob);
    key_ += '\0';
    put_u64(key_, i);
    chunks_.set_key(key_);
    if (!chunks_.search())
      throw storage_error(EIO, "blob store " + name_ + " blob " + quote_bytes(blob) + ": chunk " +
                                   std::to_string(i) + " of " + std::to_string(e->chunks) +
                                   " is missing (store damaged)");
    bytes += chunks_.value();
  }
  chunks_.reset();
  tx.commit();
  if (bytes.size() != e->size)
    throw storage_error(EIO, "blob store " + name_ + " blob " + quote_bytes(blob) + ": chunks hold " +
                                 std::to_string(bytes.size()) + " bytes, catalog says " +
                                 std::to_string(e->size) + " (store damaged)");
  return bytes;
}

std::optional<std::uint64_t> blob_store::size(std::string_view blob) {
  auto e = find(blob);
  return e ? std::optional<std::uint64_t>{e->size} : std::nullopt;
}

std::vector<blob_info> blob_store::list(std::string_view prefix) {
  std::vector<blob_info> result;
  wt_transaction tx{session_};
  catalog_.set_key(prefix);
  for (bool more = catalog_.seek_at_or_after(); more; more = catalog_.next()) {
    auto k = catalog_.key();
    if (k.substr(0, prefix.size()) != prefix) break;
    result.push_back(blob_info{std::string{k}, decode(k, catalog_.value()).size});
  }
  catalog_.reset();
  tx.commit();
  return result;
}

bool blob_store::remove(std::string_view blob) {
  wt_transaction tx{session_};
  auto e = find(blob);
  if (!e) return false;
  remove_chunks(blob, 0, e->chunks);
  catalog_.set_key(blob);
  catalog_.remove();
  detail::commit_at(tx, session_, level_);
  return true;
}

void blob_store::checkpoint() { session_.checkpoint(); }

}  // namespace tidemark::persistence
