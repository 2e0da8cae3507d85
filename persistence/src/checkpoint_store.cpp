// The checkpoint store. A piece's chunks are written in several small transactions and its header
// last, in a transaction committed with sync=on: WiredTiger's log is written in order, so the
// synced header commit makes every chunk before it durable too, and a piece without a header
// (a crash mid-write) is simply not there. Retention is recomputed from the tables at every
// complete(), so work a crash interrupted is finished by the next one.
#include "tidemark/persistence/checkpoint_store.hpp"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <set>
#include <stdexcept>

#include "store_support.hpp"

namespace tidemark::persistence {

namespace {

constexpr durability level = durability::power_loss;
constexpr std::uint8_t record_format = 2;  // 2: the record names its holders
const std::string next_id_key = "next_id";

void put_be(std::string& out, std::uint64_t x, int bytes) {
  for (int shift = (bytes - 1) * 8; shift >= 0; shift -= 8)
    out += static_cast<char>((x >> shift) & 0xff);
}

std::uint64_t get_be(std::string_view in, std::size_t at, std::size_t bytes) {
  std::uint64_t x = 0;
  for (std::size_t i = 0; i < bytes; ++i) x = (x << 8) | static_cast<unsigned char>(in[at + i]);
  return x;
}

std::string id_key(std::uint64_t id) {
  std::string k;
  put_be(k, id, 8);
  return k;
}

std::string piece_key(std::uint64_t id, std::uint32_t stage, std::uint32_t instance) {
  std::string k = id_key(id);
  put_be(k, stage, 4);
  put_be(k, instance, 4);
  return k;
}

std::string chunk_key(std::string_view piece, std::uint64_t chunk) {
  std::string k{piece};
  put_be(k, chunk, 8);
  return k;
}

std::string piece_name(std::string_view piece) {
  return "piece stage " + std::to_string(get_be(piece, 8, 4)) + " instance " +
         std::to_string(get_be(piece, 12, 4));
}

std::uint32_t crc32_of(std::string_view bytes, std::uint32_t crc = 0) {
  // zlib's length is a uInt: feed it at most 1 GiB at a time
  constexpr std::size_t step = std::size_t{1} << 30;
  auto c = static_cast<uLong>(crc);
  for (std::size_t at = 0; at < bytes.size(); at += step) {
    auto n = std::min(step, bytes.size() - at);
    c = crc32(c, reinterpret_cast<const Bytef*>(bytes.data() + at), static_cast<uInt>(n));
  }
  return static_cast<std::uint32_t>(c);
}

// What checkpoint.records holds per checkpoint: the record and the (stage, instance) of each piece.
struct stored_record {
  std::uint8_t format = record_format;
  checkpoint_record record;
  std::vector<std::pair<std::uint32_t, std::uint32_t>> pieces;
  TIDEMARK_FIELDS(format, record, pieces)
};

std::string encode(const stored_record& s) {
  std::vector<std::uint8_t> out;
  byte_writer w{out};
  codec<stored_record>::encode(w, s);
  return {reinterpret_cast<const char*>(out.data()), out.size()};
}

stored_record decode(std::string_view key, std::string_view value) {
  stored_record s;
  try {
    byte_reader r{reinterpret_cast<const std::uint8_t*>(value.data()), value.size()};
    codec<stored_record>::decode(r, s);
    if (s.format != record_format) throw wire_error("format " + std::to_string(s.format));
  } catch (const wire_error& e) {
    throw storage_error(EIO, "checkpoint store: the record of checkpoint " +
                                 std::to_string(get_be(key, 0, 8)) + " is damaged (" + e.what() +
                                 "); remove the data directory's checkpoints to start afresh");
  }
  return s;
}

std::shared_ptr<wt_connection> open_logged(const std::string& dir) {
  // The log would grow without bound if WiredTiger never checkpointed: checkpoint every 30 s or
  // 512 MB of log, whichever comes first, so old log files are removed.
  return wt_connection::open(dir, "log=(enabled=true),checkpoint=(wait=30,log_size=512MB)");
}

}  // namespace

checkpoint_store::checkpoint_store(const std::string& dir, std::uint32_t retain)
    : checkpoint_store(open_logged(dir), retain) {}

checkpoint_store::checkpoint_store(std::shared_ptr<wt_connection> conn, std::uint32_t retain)
    : retain_(retain),
      session_(conn->open_session()),
      records_(detail::open_bytes_table(session_, "checkpoint store", "table:checkpoint.records",
                                        level)),
      pieces_(
          detail::open_bytes_table(session_, "checkpoint store", "table:checkpoint.pieces", level)),
      chunks_(
          detail::open_bytes_table(session_, "checkpoint store", "table:checkpoint.chunks", level)),
      meta_(
          detail::open_bytes_table(session_, "checkpoint store", "table:checkpoint.meta", level)) {
  if (retain_ == 0)
    throw std::invalid_argument("checkpoint store in '" + conn->home() +
                                "': retain must be at least 1 (the checkpoint a restore needs)");
}

std::map<std::string, checkpoint_store::piece_header> checkpoint_store::pieces_with_prefix(
    std::string_view prefix) {
  std::map<std::string, piece_header> result;
  pieces_.set_key(prefix);
  for (bool more = pieces_.seek_at_or_after(); more; more = pieces_.next()) {
    auto k = pieces_.key();
    if (k.substr(0, prefix.size()) != prefix) break;
    auto v = pieces_.value();
    if (k.size() != 16 || v.size() != 20)
      throw storage_error(EIO, "checkpoint store: piece header " + quote_bytes(k) + " has " +
                                   std::to_string(v.size()) +
                                   " bytes, expected 20 (store damaged)");
    result.emplace(std::string{k},
                   piece_header{get_be(v, 0, 8), static_cast<std::uint32_t>(get_be(v, 8, 4)),
                                get_be(v, 12, 8)});
  }
  pieces_.reset();
  return result;
}

void checkpoint_store::remove_piece(std::string_view key, const piece_header& h) {
  for (std::uint64_t i = 0; i < h.chunks; ++i) {
    auto k = chunk_key(key, i);
    chunks_.set_key(k);
    chunks_.remove();
  }
  pieces_.set_key(key);
  pieces_.remove();
}

void checkpoint_store::put_piece(std::uint64_t id, std::uint32_t stage, std::uint32_t instance,
                                 std::string_view bytes) {
  const auto key = piece_key(id, stage, instance);
  {
    // a piece put again (a retried checkpoint) replaces the old one; its header goes first
    wt_transaction tx{session_};
    for (const auto& [k, h] : pieces_with_prefix(key)) remove_piece(k, h);
    tx.commit();
  }
  const std::uint64_t count = (bytes.size() + chunk_size - 1) / chunk_size;
  for (std::uint64_t first = 0; first < count; first += chunks_per_transaction) {
    wt_transaction tx{session_};
    for (auto i = first; i < std::min<std::uint64_t>(count, first + chunks_per_transaction); ++i) {
      auto k = chunk_key(key, i);
      chunks_.set_key(k);
      chunks_.set_value(bytes.substr(i * chunk_size, chunk_size));
      chunks_.insert();
    }
    tx.commit();  // not synced: the header's synced commit below flushes the log up to here
  }
  std::string header;
  put_be(header, bytes.size(), 8);
  put_be(header, crc32_of(bytes), 4);
  put_be(header, count, 8);
  wt_transaction tx{session_};
  pieces_.set_key(key);
  pieces_.set_value(header);
  pieces_.insert();
  detail::commit_at(tx, session_, level);
}

void checkpoint_store::complete(const checkpoint_record& r) {
  const auto prefix = id_key(r.id);
  stored_record s;
  s.record = r;
  s.record.bytes = 0;
  for (const auto& [k, h] : pieces_with_prefix(prefix)) {
    s.pieces.emplace_back(static_cast<std::uint32_t>(get_be(k, 8, 4)),
                          static_cast<std::uint32_t>(get_be(k, 12, 4)));
    s.record.bytes += h.size;
  }
  if (s.pieces.size() != r.pieces)
    throw std::invalid_argument("checkpoint store: checkpoint " + std::to_string(r.id) +
                                " announces " + std::to_string(r.pieces) + " pieces but " +
                                std::to_string(s.pieces.size()) + " were put; not recorded");
  {
    const auto value = encode(s);
    wt_transaction tx{session_};
    records_.set_key(prefix);
    records_.set_value(value);
    records_.insert();
    detail::commit_at(tx, session_, level);
  }

  // Retention. Not synced: a crash before these commits leaves garbage that the next complete()
  // removes, never a missing piece of a kept checkpoint. A failed write here (a full or failing
  // disk) is the same as such a crash: the checkpoint is recorded all the same.
  try {
    remove_old_checkpoints();
  } catch (const storage_error&) {
  }
}

void checkpoint_store::remove_old_checkpoints() {
  auto kept = list();
  std::set<std::uint64_t> completed;
  for (const auto& rec : kept) completed.insert(rec.id);
  const std::uint64_t newest = kept.back().id;
  std::set<std::uint64_t> dropped;
  for (std::size_t i = 0; i + retain_ < kept.size(); ++i) dropped.insert(kept[i].id);
  wt_transaction tx{session_};
  for (auto id : dropped) {
    auto k = id_key(id);
    records_.set_key(k);
    records_.remove();
  }
  for (const auto& [k, h] : pieces_with_prefix({})) {
    const auto id = get_be(k, 0, 8);
    const bool abandoned = id < newest && completed.count(id) == 0;
    if (abandoned || dropped.count(id) != 0) remove_piece(k, h);
  }
  tx.commit();
}

std::vector<checkpoint_record> checkpoint_store::list() {
  std::vector<checkpoint_record> result;
  for (auto& h : held()) result.push_back(std::move(h.record));
  return result;
}

std::vector<held_checkpoint> checkpoint_store::held() {
  std::vector<held_checkpoint> result;
  records_.reset();
  while (records_.next()) {
    auto s = decode(records_.key(), records_.value());
    result.push_back({std::move(s.record), std::move(s.pieces)});
  }
  records_.reset();
  return result;
}

bool checkpoint_store::read_piece(std::string_view key, std::string& bytes, std::string& why) {
  auto headers = pieces_with_prefix(key);
  if (headers.empty()) {
    why = "is missing";
    return false;
  }
  const auto& h = headers.begin()->second;
  bytes.clear();
  bytes.reserve(h.size);
  for (std::uint64_t i = 0; i < h.chunks; ++i) {
    auto k = chunk_key(key, i);
    chunks_.set_key(k);
    if (!chunks_.search()) {
      chunks_.reset();
      why = "is incomplete (chunk " + std::to_string(i) + " of " + std::to_string(h.chunks) +
            " is missing)";
      return false;
    }
    bytes += chunks_.value();
  }
  chunks_.reset();
  if (bytes.size() != h.size) {
    why = "is corrupt (" + std::to_string(bytes.size()) + " bytes, expected " +
          std::to_string(h.size) + ")";
    return false;
  }
  if (crc32_of(bytes) != h.crc) {
    why = "is corrupt (CRC-32 mismatch)";
    return false;
  }
  return true;
}

loaded_checkpoint checkpoint_store::latest(std::string_view job, std::string_view plan,
                                           std::uint64_t newest) {
  loaded_checkpoint result;
  wt_transaction tx{session_};  // records and pieces from one snapshot
  std::vector<stored_record> records;
  records_.reset();
  while (records_.next()) records.push_back(decode(records_.key(), records_.value()));
  records_.reset();
  for (auto it = records.rbegin(); it != records.rend(); ++it) {
    if (it->record.job != job || it->record.id > newest) continue;
    const std::string name = "checkpoint " + std::to_string(it->record.id);
    if (it->record.plan != plan) {
      result.rejected.push_back(name + ": written for another plan or other job options (fingerprint " +
                                quote_bytes(it->record.plan) + ", the job's is " +
                                quote_bytes(plan) + ")");
      continue;
    }
    std::map<std::pair<std::uint32_t, std::uint32_t>, std::string> pieces;
    std::string why;
    for (const auto& [stage, instance] : it->pieces) {
      const auto key = piece_key(it->record.id, stage, instance);
      std::string bytes;
      if (!read_piece(key, bytes, why)) {
        result.rejected.push_back(name + ": " + piece_name(key) + " " + why);
        break;
      }
      pieces.emplace(std::pair{stage, instance}, std::move(bytes));
    }
    if (!why.empty()) continue;
    result.record = it->record;
    result.pieces = std::move(pieces);
    break;
  }
  tx.commit();
  return result;
}

std::uint64_t checkpoint_store::last_id(wt_cursor& c) {
  c.reset();
  std::uint64_t id = 0;
  if (c.prev()) id = get_be(c.key(), 0, 8);
  c.reset();
  return id;
}

std::uint64_t checkpoint_store::next_id() {
  std::uint64_t next = std::max(last_id(records_), last_id(pieces_)) + 1;
  meta_.set_key(next_id_key);
  if (meta_.search()) next = std::max(next, get_be(meta_.value(), 0, 8));
  meta_.reset();
  return next;
}

void checkpoint_store::clear() {
  const auto next = next_id();
  wt_transaction tx{session_};
  for (auto* c : {&records_, &pieces_, &chunks_}) {
    std::vector<std::string> keys;
    c->reset();
    while (c->next()) keys.emplace_back(c->key());
    c->reset();
    for (const auto& k : keys) {
      c->set_key(k);
      c->remove();
    }
  }
  const auto value = id_key(next);
  meta_.set_key(next_id_key);
  meta_.set_value(value);
  meta_.insert();
  detail::commit_at(tx, session_, level);
}

}  // namespace tidemark::persistence
