// The versioned model format (see model_codec.hpp): an envelope (magic, version, kind, size,
// checksum) around the tidemark::codec encoding of the model, so the models use the same codec as
// every value that crosses a process boundary.
#include "tidemark/riot/model_codec.hpp"

#define XXH_INLINE_ALL
#include <xxhash.h>

#include <cstring>
#include <stdexcept>

#include "tidemark/core/codec.hpp"

namespace tidemark::riot::model_codec {

namespace {

constexpr char magic[4] = {'T', 'M', 'R', 'M'};

struct header {
  std::uint16_t format = version;
  model_kind kind = model_kind::decision_tree;
  std::uint64_t size = 0;      ///< of the payload
  std::uint64_t checksum = 0;  ///< XXH64 of the payload
  TIDEMARK_FIELDS(format, kind, size, checksum)
};
constexpr std::size_t header_size = 4 + 2 + 1 + 8 + 8;

/// The Bloom filter's parameters and bit array (the filter itself keeps derived fields).
struct bloom_payload {
  std::uint64_t capacity = 0;
  double fpp = 0;
  std::vector<std::uint64_t> words;
  TIDEMARK_FIELDS(capacity, fpp, words)
};

const char* kind_name(model_kind k) {
  switch (k) {
    case model_kind::decision_tree: return "decision_tree";
    case model_kind::linear_regression: return "linear_regression";
    case model_kind::bloom_filter: return "bloom_filter";
  }
  return "unknown";
}

error bad(std::string why) { return error{"model_codec: " + std::move(why)}; }

template <class T>
std::string seal(model_kind kind, const T& model) {
  std::vector<std::uint8_t> payload;
  tidemark::encode(model, payload);
  std::vector<std::uint8_t> bytes(magic, magic + 4);
  tidemark::encode(header{version, kind, payload.size(), XXH64(payload.data(), payload.size(), 0)}, bytes);
  bytes.insert(bytes.end(), payload.begin(), payload.end());
  return {bytes.begin(), bytes.end()};
}

// Checks the envelope, then decodes the payload as a T; a wire_error becomes an error naming the
// payload byte where decoding stopped.
template <class T>
expected<T> open(std::string_view bytes, model_kind expected_kind) {
  if (bytes.size() < header_size)
    return bad("too short for a model (" + std::to_string(bytes.size()) + " bytes, the header alone is " +
               std::to_string(header_size) + ")");
  if (std::memcmp(bytes.data(), magic, 4) != 0) return bad("not a Tidemark model (bad magic)");
  const auto* data = reinterpret_cast<const std::uint8_t*>(bytes.data());
  auto h = tidemark::decode<header>(data + 4, header_size - 4);  // cannot fail: the size is checked
  if (h.format != version)
    return bad("format version " + std::to_string(h.format) + " is not supported (this build reads " +
               std::to_string(version) + ")");
  if (h.kind != expected_kind)
    return bad(std::string("the bytes hold a ") + kind_name(h.kind) + " model, expected " + kind_name(expected_kind));
  auto payload = bytes.substr(header_size);
  if (payload.size() != h.size)
    return bad("payload is " + std::to_string(payload.size()) + " bytes, the header says " + std::to_string(h.size));
  if (XXH64(payload.data(), payload.size(), 0) != h.checksum) return bad("checksum mismatch: the model bytes are corrupt");
  byte_reader r{data + header_size, payload.size()};
  T model{};
  try {
    codec<T>::decode(r, model);
    if (r.remaining()) return bad("unexpected bytes after the model");
  } catch (const wire_error& e) {
    return bad(std::string(e.what()) + " (payload byte " + std::to_string(payload.size() - r.remaining()) + ")");
  }
  return model;
}

}  // namespace

std::string encode(const decision_tree_model& m) { return seal(model_kind::decision_tree, m); }

expected<decision_tree_model> decode_decision_tree(std::string_view bytes) {
  auto m = open<decision_tree_model>(bytes, model_kind::decision_tree);
  if (!m) return m;
  if (m->nodes.empty()) return bad("the tree has no nodes");
  const auto count = m->nodes.size();
  for (std::size_t i = 0; i < count; ++i) {
    const auto& n = m->nodes[i];
    auto where = "node " + std::to_string(i);
    // Children come after their parent (preorder), which also rules out cycles.
    if (n.leaf && n.index >= m->classes.size())
      return bad(where + ": class " + std::to_string(n.index) + " out of range");
    if (!n.leaf && n.index >= m->attributes.size())
      return bad(where + ": attribute " + std::to_string(n.index) + " out of range");
    if (!n.leaf && (n.left <= i || n.right <= i || n.left >= count || n.right >= count))
      return bad(where + ": child index out of range");
  }
  return m;
}

std::string encode(const linear_regression_model& m) { return seal(model_kind::linear_regression, m); }

expected<linear_regression_model> decode_linear_regression(std::string_view bytes) {
  auto m = open<linear_regression_model>(bytes, model_kind::linear_regression);
  if (m && m->coefficients.size() != m->attributes.size())
    return bad(std::to_string(m->coefficients.size()) + " coefficients for " + std::to_string(m->attributes.size()) +
               " attributes");
  return m;
}

std::string encode(const bloom_filter& f) {
  return seal(model_kind::bloom_filter, bloom_payload{f.capacity(), f.fpp(), f.words()});
}

expected<bloom_filter> decode_bloom_filter(std::string_view bytes) {
  auto p = open<bloom_payload>(bytes, model_kind::bloom_filter);
  if (!p) return p.error();
  try {
    return bloom_filter::from_words(p->capacity, p->fpp, std::move(p->words));
  } catch (const std::invalid_argument& e) {
    return bad(e.what());
  }
}

}  // namespace tidemark::riot::model_codec
