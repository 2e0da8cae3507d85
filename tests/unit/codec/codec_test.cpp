// tidemark::codec<T>: round trips of every ready codec, aggregates with TIDEMARK_FIELDS, batch
// codecs, and malformed bytes rejected with wire_error instead of read past the end.
#define BOOST_TEST_MODULE codec
#include <boost/test/unit_test.hpp>

#include <map>
#include <unordered_map>

#include "tidemark/core/codec.hpp"
#include "tidemark/core/job.hpp"

using namespace tidemark;

namespace {

struct reading {
  std::string sensor;
  double value = 0;
  std::optional<std::int32_t> quality;
  std::vector<std::uint16_t> samples;
  TIDEMARK_FIELDS(sensor, value, quality, samples)
  bool operator==(const reading& o) const {
    return sensor == o.sensor && value == o.value && quality == o.quality && samples == o.samples;
  }
};

struct opaque {
  std::unordered_map<int, int> m;  // std::unordered_map has no codec: opaque has none either
};

struct nested {
  reading r;
  std::pair<std::string, bool> tag;
  TIDEMARK_FIELDS(r, tag)
};

template <class T>
T round_trip(const T& x) {
  std::vector<std::uint8_t> bytes;
  encode(x, bytes);
  return decode<T>(bytes.data(), bytes.size());
}

}  // namespace

static_assert(has_codec_v<int> && has_codec_v<std::string> && has_codec_v<std::vector<double>>);
static_assert(has_codec_v<reading> && has_codec_v<nested>);
static_assert(!has_codec_v<opaque> && !has_codec_v<std::vector<opaque>> &&
              !has_codec_v<std::pair<int, opaque>> && !has_codec_v<std::optional<opaque>> &&
              !has_codec_v<std::array<opaque, 2>> && !has_codec_v<std::map<int, opaque>> &&
              !has_codec_v<std::shared_ptr<const opaque>>);
static_assert(has_codec_v<window_result<std::string, std::uint64_t>>);

BOOST_AUTO_TEST_CASE(scalars_strings_and_containers_round_trip) {
  BOOST_TEST(round_trip(std::int64_t{-5}) == -5);
  BOOST_TEST(round_trip(3.25) == 3.25);
  BOOST_TEST(round_trip(true) == true);
  BOOST_TEST(round_trip(std::string{"héllo"}) == "héllo");
  BOOST_TEST(round_trip(std::vector<int>{1, 2, 3}) == (std::vector<int>{1, 2, 3}));
  BOOST_TEST(round_trip(std::vector<bool>{true, false}) == (std::vector<bool>{true, false}));
  BOOST_TEST(!round_trip(std::optional<int>{}).has_value());
  BOOST_TEST(*round_trip(std::optional<int>{7}) == 7);
  auto t = round_trip(std::make_tuple(1, std::string{"a"}, 2.5));
  BOOST_TEST(std::get<1>(t) == "a");
  BOOST_TEST(std::get<2>(t) == 2.5);
  auto p = round_trip(std::make_pair(std::string{"k"}, std::uint64_t{9}));
  BOOST_TEST(p.first == "k");
  BOOST_TEST(p.second == 9u);
}

BOOST_AUTO_TEST_CASE(arrays_maps_and_shared_pointers_round_trip) {
  std::array<std::int32_t, 3> a{7, -1, 4};
  BOOST_TEST((round_trip(a) == a));
  std::map<std::string, std::vector<double>, std::less<>> m{{"b", {1.5}}, {"a", {}}, {"c", {2, 3}}};
  BOOST_TEST((round_trip(m) == m));
  BOOST_TEST(round_trip(std::map<int, int>{}).empty());
  auto shared = std::make_shared<const reading>(reading{"s", 2, {}, {9}});
  auto back = round_trip(shared);
  BOOST_REQUIRE(back != nullptr);
  BOOST_TEST(back != shared);  // a copy, not the sender's object
  BOOST_TEST((*back == *shared));
  BOOST_TEST(round_trip(std::shared_ptr<const reading>{}) == nullptr);
  // two entries with the same key: what a corrupted map looks like
  std::vector<std::uint8_t> twice;
  encode(std::map<int, int>{{1, 2}, {3, 4}}, twice);
  twice[4 + 8] = 1;  // the second entry's key (after the count and the first entry) becomes 1
  BOOST_CHECK_THROW((decode<std::map<int, int>>(twice.data(), twice.size())), wire_error);
}

BOOST_AUTO_TEST_CASE(aggregates_declaring_fields_round_trip) {
  reading r{"s-1", 21.5, 3, {1, 2}};
  BOOST_TEST((round_trip(r) == r));
  nested n{r, {"x", true}};
  auto back = round_trip(n);
  BOOST_TEST((back.r == r));
  BOOST_TEST(back.tag.first == "x");
  window_result<std::string, std::uint64_t> w{{0, 10}, "k", 2, true, pane_timing::late, 42};
  auto wb = round_trip(w);
  BOOST_TEST(wb.window.end == 10);
  BOOST_TEST(wb.key == "k");
  BOOST_TEST(wb.revision == 2u);
  BOOST_TEST(wb.value == 42u);
  BOOST_TEST((wb.timing == pane_timing::late));
}

BOOST_AUTO_TEST_CASE(truncated_and_bad_bytes_are_rejected) {
  std::vector<std::uint8_t> bytes;
  encode(reading{"sensor", 1, 2, {3}}, bytes);
  for (std::size_t n = 0; n < bytes.size(); ++n)
    BOOST_CHECK_THROW(decode<reading>(bytes.data(), n), wire_error);
  bytes.push_back(0);
  BOOST_CHECK_THROW(decode<reading>(bytes.data(), bytes.size()), wire_error);
  // a length far past the end must not allocate or read
  std::vector<std::uint8_t> huge{0xff, 0xff, 0xff, 0x7f};
  BOOST_CHECK_THROW(decode<std::string>(huge.data(), huge.size()), wire_error);
  BOOST_CHECK_THROW(decode<std::vector<std::int64_t>>(huge.data(), huge.size()), wire_error);
  std::uint8_t bad_bool = 2;
  BOOST_CHECK_THROW(decode<bool>(&bad_bool, 1), wire_error);
}

BOOST_AUTO_TEST_CASE(streams_record_their_batch_codec_and_type) {
  job j{"codec"};
  auto numbers = j.from_container(std::vector<reading>{{"a", 1, {}, {}}});
  auto opaques = numbers.map([](const reading&) { return opaque{}; });
  opaques.count();
  const auto& g = j.graph();
  BOOST_TEST(g.node(numbers.id()).outputs[0].codec == batch_codec_for<reading>());
  BOOST_TEST(g.node(opaques.id()).outputs[0].codec == nullptr);
  BOOST_TEST(g.node(opaques.id()).outputs[0].value_type == "(anonymous namespace)::opaque");

  batch<reading> b{{{"a", 1, 2, {4}}, {"b", 2, {}, {}}}};
  std::vector<std::uint8_t> bytes;
  batch_codec_for<reading>()->encode_values(b, bytes);
  auto back = batch_codec_for<reading>()->decode_values(bytes.data(), bytes.size());
  BOOST_TEST((static_cast<batch<reading>&>(*back).values == b.values));
}
