// The versioned binary model format (see model_codec.hpp).
#include "tidemark/riot/model_codec.hpp"

#define XXH_INLINE_ALL
#include <xxhash.h>

#include <cstring>
#include <optional>
#include <stdexcept>

namespace tidemark::riot::model_codec {

namespace {

constexpr char magic[4] = {'T', 'M', 'R', 'M'};
constexpr std::size_t header_size = 4 + 2 + 1 + 8 + 8;

const char* kind_name(model_kind k) {
  switch (k) {
    case model_kind::decision_tree: return "decision_tree";
    case model_kind::linear_regression: return "linear_regression";
    case model_kind::bloom_filter: return "bloom_filter";
  }
  return "unknown";
}

class writer {
 public:
  template <class T>
  void put(T x) {
    static_assert(std::is_arithmetic_v<T>);
    char buf[sizeof(T)];
    std::memcpy(buf, &x, sizeof(T));  // the format is little-endian, as every supported host
    out_.append(buf, sizeof(T));
  }
  void put(const std::string& s) {
    put(static_cast<std::uint32_t>(s.size()));
    out_ += s;
  }
  void put(const std::vector<std::string>& xs) {
    put(static_cast<std::uint32_t>(xs.size()));
    for (auto& x : xs) put(x);
  }
  std::string finish(model_kind kind) {
    std::string bytes(magic, 4);
    writer h;
    h.put(version);
    h.put(static_cast<std::uint8_t>(kind));
    h.put(static_cast<std::uint64_t>(out_.size()));
    h.put(static_cast<std::uint64_t>(XXH64(out_.data(), out_.size(), 0)));
    bytes += h.out_;
    bytes += out_;
    return bytes;
  }

 private:
  std::string out_;
};

// Reads the payload; the first failure is kept with its offset and every later read fails.
class reader {
 public:
  explicit reader(std::string_view in) : in_(in) {}

  template <class T>
  T get(const char* what) {
    static_assert(std::is_arithmetic_v<T>);
    T x{};
    if (!need(sizeof(T), what)) return x;
    std::memcpy(&x, in_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return x;
  }
  std::string get_string(const char* what) {
    auto n = get<std::uint32_t>(what);
    if (!need(n, what)) return {};
    std::string s(in_.substr(pos_, n));
    pos_ += n;
    return s;
  }
  std::vector<std::string> get_strings(const char* what) {
    auto n = get<std::uint32_t>(what);
    std::vector<std::string> xs;
    if (!need(std::size_t{n} * 4, what)) return xs;  // each string takes at least its length
    for (std::uint32_t i = 0; i < n && ok(); ++i) xs.push_back(get_string(what));
    return xs;
  }
  /// Counts must fit in what is left (each element takes at least `min_bytes`).
  std::uint64_t get_count(const char* what, std::size_t min_bytes) {
    auto n = get<std::uint64_t>(what);
    if (ok() && n > (in_.size() - pos_) / min_bytes) invalid(std::string(what) + " count " + std::to_string(n) + " exceeds the data");
    return ok() ? n : 0;
  }
  void invalid(std::string why) {
    if (!error_) error_ = why + " (payload byte " + std::to_string(pos_) + ")";
  }
  bool ok() const { return !error_; }
  bool at_end() const { return pos_ == in_.size(); }
  const std::optional<std::string>& error() const { return error_; }

 private:
  bool need(std::size_t n, const char* what) {
    if (error_) return false;
    if (in_.size() - pos_ < n) {
      invalid(std::string("truncated reading ") + what);
      return false;
    }
    return true;
  }

  std::string_view in_;
  std::size_t pos_ = 0;
  std::optional<std::string> error_;
};

// Checks the header; on success returns the payload.
result<std::string_view> open(std::string_view bytes, model_kind expected) {
  auto bad = [](std::string why) { return task_error{"model_codec: " + why}; };
  if (bytes.size() < header_size)
    return bad("too short for a model (" + std::to_string(bytes.size()) + " bytes, the header alone is " +
               std::to_string(header_size) + ")");
  if (std::memcmp(bytes.data(), magic, 4) != 0) return bad("not a Tidemark model (bad magic)");
  reader h(bytes.substr(4, header_size - 4));
  auto v = h.get<std::uint16_t>("version");
  auto kind = h.get<std::uint8_t>("kind");
  auto size = h.get<std::uint64_t>("size");
  auto sum = h.get<std::uint64_t>("checksum");
  if (v != version)
    return bad("format version " + std::to_string(v) + " is not supported (this build reads " +
               std::to_string(version) + ")");
  if (kind != static_cast<std::uint8_t>(expected))
    return bad(std::string("the bytes hold a ") + kind_name(static_cast<model_kind>(kind)) + " model, expected " +
               kind_name(expected));
  auto payload = bytes.substr(header_size);
  if (payload.size() != size)
    return bad("payload is " + std::to_string(payload.size()) + " bytes, the header says " + std::to_string(size));
  if (XXH64(payload.data(), payload.size(), 0) != sum) return bad("checksum mismatch: the model bytes are corrupt");
  return payload;
}

template <class T>
result<T> close(reader& r, T value) {
  if (r.ok() && !r.at_end()) r.invalid("unexpected bytes after the model");
  if (!r.ok()) return task_error{"model_codec: " + *r.error()};
  return value;
}

}  // namespace

std::string encode(const decision_tree_model& m) {
  writer w;
  w.put(m.attributes);
  w.put(m.classes);
  w.put(static_cast<std::uint64_t>(m.nodes.size()));
  for (auto& n : m.nodes) {
    w.put(static_cast<std::uint8_t>(n.leaf));
    w.put(n.index);
    if (!n.leaf) {
      w.put(n.threshold);
      w.put(n.left);
      w.put(n.right);
    }
  }
  return w.finish(model_kind::decision_tree);
}

result<decision_tree_model> decode_decision_tree(std::string_view bytes) {
  auto payload = open(bytes, model_kind::decision_tree);
  if (!payload) return payload.error();
  reader r(*payload);
  decision_tree_model m;
  m.attributes = r.get_strings("attribute names");
  m.classes = r.get_strings("class names");
  auto count = r.get_count("node", 5);
  if (r.ok() && count == 0) r.invalid("the tree has no nodes");
  for (std::uint64_t i = 0; i < count && r.ok(); ++i) {
    decision_tree_model::node n;
    n.leaf = r.get<std::uint8_t>("node kind") != 0;
    n.index = r.get<std::uint32_t>("node index");
    if (!n.leaf) {
      n.threshold = r.get<double>("split threshold");
      n.left = r.get<std::uint32_t>("left child");
      n.right = r.get<std::uint32_t>("right child");
    }
    if (!r.ok()) break;
    auto where = "node " + std::to_string(i);
    // Children come after their parent (preorder), which also rules out cycles.
    if (n.leaf && n.index >= m.classes.size()) r.invalid(where + ": class " + std::to_string(n.index) + " out of range");
    if (!n.leaf && n.index >= m.attributes.size()) r.invalid(where + ": attribute " + std::to_string(n.index) + " out of range");
    if (!n.leaf && (n.left <= i || n.right <= i || n.left >= count || n.right >= count))
      r.invalid(where + ": child index out of range");
    m.nodes.push_back(n);
  }
  return close(r, std::move(m));
}

std::string encode(const linear_regression_model& m) {
  writer w;
  w.put(m.attributes);
  w.put(m.intercept);
  w.put(static_cast<std::uint64_t>(m.coefficients.size()));
  for (auto c : m.coefficients) w.put(c);
  return w.finish(model_kind::linear_regression);
}

result<linear_regression_model> decode_linear_regression(std::string_view bytes) {
  auto payload = open(bytes, model_kind::linear_regression);
  if (!payload) return payload.error();
  reader r(*payload);
  linear_regression_model m;
  m.attributes = r.get_strings("attribute names");
  m.intercept = r.get<double>("intercept");
  auto count = r.get_count("coefficient", sizeof(double));
  for (std::uint64_t i = 0; i < count && r.ok(); ++i) m.coefficients.push_back(r.get<double>("coefficient"));
  if (r.ok() && m.coefficients.size() != m.attributes.size())
    r.invalid(std::to_string(m.coefficients.size()) + " coefficients for " + std::to_string(m.attributes.size()) +
              " attributes");
  return close(r, std::move(m));
}

std::string encode(const bloom_filter& f) {
  writer w;
  w.put(f.capacity());
  w.put(f.fpp());
  w.put(static_cast<std::uint64_t>(f.words().size()));
  for (auto x : f.words()) w.put(x);
  return w.finish(model_kind::bloom_filter);
}

result<bloom_filter> decode_bloom_filter(std::string_view bytes) {
  auto payload = open(bytes, model_kind::bloom_filter);
  if (!payload) return payload.error();
  reader r(*payload);
  auto capacity = r.get<std::uint64_t>("capacity");
  auto fpp = r.get<double>("false-positive rate");
  auto count = r.get_count("bit-array word", sizeof(std::uint64_t));
  std::vector<std::uint64_t> words;
  for (std::uint64_t i = 0; i < count && r.ok(); ++i) words.push_back(r.get<std::uint64_t>("bit-array word"));
  if (r.ok() && !r.at_end()) r.invalid("unexpected bytes after the model");
  if (!r.ok()) return task_error{"model_codec: " + *r.error()};
  try {
    return bloom_filter::from_words(capacity, fpp, std::move(words));
  } catch (const std::invalid_argument& e) {
    return task_error{std::string("model_codec: ") + e.what()};
  }
}

}  // namespace tidemark::riot::model_codec
