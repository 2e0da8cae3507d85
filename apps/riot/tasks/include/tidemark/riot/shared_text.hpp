// An immutable string whose copies share one buffer: the fields that every observation of a
// message carries (its sensor id and meta fields) are made once per message, not once per field.
#pragma once

#include <memory>
#include <ostream>
#include <string>
#include <string_view>
#include <type_traits>

#include "tidemark/core/codec.hpp"

namespace tidemark::riot {

/// Immutable text shared by reference. The SenML fan-out gives each of a message's observations
/// (10 on TAXI) its sensor id and meta; as std::string each was an allocation and a copy per
/// observation, and every copy of an observation downstream (a batch going to two receivers, a
/// task taking its input by value) made another, on a buffer written by another core. A copy of
/// shared_text takes a reference instead. To change the text, assign a new one.
class shared_text {
 public:
  shared_text() = default;
  shared_text(std::string s)  // NOLINT: implicit, text is text
      : text_(s.empty() ? nullptr : std::make_shared<const std::string>(std::move(s))) {}
  shared_text(std::string_view s) : shared_text(std::string{s}) {}  // NOLINT
  shared_text(const char* s) : shared_text(std::string{s}) {}       // NOLINT

  const std::string& str() const noexcept { return text_ ? *text_ : none(); }
  std::string_view view() const noexcept { return str(); }
  std::size_t size() const noexcept { return str().size(); }

  // with text of any kind that views as a std::string_view (a literal, a std::string, a view)
  template <class Text>
  using if_text = std::enable_if_t<std::is_convertible_v<const Text&, std::string_view>, bool>;
  friend bool operator==(const shared_text& a, const shared_text& b) {
    return a.view() == b.view();
  }
  friend bool operator!=(const shared_text& a, const shared_text& b) {
    return a.view() != b.view();
  }
  template <class Text, if_text<Text> = true>
  friend bool operator==(const shared_text& a, const Text& b) {
    return a.view() == std::string_view{b};
  }
  template <class Text, if_text<Text> = true>
  friend bool operator==(const Text& a, const shared_text& b) {
    return std::string_view{a} == b.view();
  }
  template <class Text, if_text<Text> = true>
  friend bool operator!=(const shared_text& a, const Text& b) {
    return !(a == b);
  }
  template <class Text, if_text<Text> = true>
  friend bool operator!=(const Text& a, const shared_text& b) {
    return !(a == b);
  }
  friend std::ostream& operator<<(std::ostream& out, const shared_text& s) {
    return out << s.view();
  }

 private:
  static const std::string& none() noexcept {
    static const std::string empty;
    return empty;
  }
  std::shared_ptr<const std::string> text_;
};

}  // namespace tidemark::riot

namespace tidemark {

/// On the wire as a string: each decoded value has its own buffer.
template <>
struct codec<riot::shared_text> {
  static void encode(byte_writer& w, const riot::shared_text& s) {
    codec<std::string>::encode(w, s.str());
  }
  static void decode(byte_reader& r, riot::shared_text& s) {
    std::string text;
    codec<std::string>::decode(r, text);
    s = riot::shared_text{std::move(text)};
  }
};

}  // namespace tidemark
