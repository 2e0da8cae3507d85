// The in-memory window_store (append, lazy iteration, merge, purge, memory accounting),
// window_events over a cursor with several blocks, and the open-addressing table's erase.
#define BOOST_TEST_MODULE window_store
#include <boost/test/unit_test.hpp>

#include <random>
#include <unordered_map>

#include "tidemark/core/window_store.hpp"

using namespace tidemark;

namespace {

std::vector<int> all(window_store<int, int>& s, const window_id& w, std::uint64_t h, int k) {
  window_events<int> events{s.events(w, h, k)};
  return {events.begin(), events.end()};
}

/// A cursor that hands out a vector in blocks of `n`, as a tiered store hands out its buckets.
class blocks_cursor final : public event_cursor<int> {
 public:
  blocks_cursor(std::vector<int> xs, std::size_t n) : xs_(std::move(xs)), n_(n) {}
  event_block<int> next() override {
    auto len = std::min(n_, xs_.size() - pos_);
    event_block<int> b{xs_.data() + pos_, len};
    pos_ += len;
    return b;
  }

 private:
  std::vector<int> xs_;
  std::size_t n_;
  std::size_t pos_ = 0;
};

}  // namespace

BOOST_AUTO_TEST_CASE(memory_store_keeps_events_per_window_and_key_in_arrival_order) {
  memory_window_store<int, int> s;
  const window_id a{0, 10};
  const window_id b{10, 20};
  s.append(a, 1, 1, 5);
  s.append(a, 2, 2, 6);
  s.append(a, 1, 1, 7);
  s.append(b, 1, 1, 8);
  BOOST_TEST(all(s, a, 1, 1) == (std::vector<int>{5, 7}));
  BOOST_TEST(all(s, a, 2, 2) == (std::vector<int>{6}));
  BOOST_TEST(all(s, b, 1, 1) == (std::vector<int>{8}));
  BOOST_TEST(all(s, b, 2, 2).empty());
  BOOST_TEST(s.memory_events() == 4u);
  BOOST_TEST(s.memory_bytes() >= 4 * sizeof(int));

  s.merge(b, a, 1, 1);
  BOOST_TEST(all(s, a, 1, 1) == (std::vector<int>{5, 7, 8}));
  BOOST_TEST(all(s, b, 1, 1).empty());
  BOOST_TEST(s.memory_events() == 4u);

  s.purge(a, 1, 1);
  BOOST_TEST(all(s, a, 1, 1).empty());
  BOOST_TEST(s.memory_events() == 1u);
  s.purge(a, 2, 2);
  BOOST_TEST(s.memory_events() == 0u);
  BOOST_TEST(s.memory_bytes() == 0u);
}

BOOST_AUTO_TEST_CASE(window_events_walks_every_block_and_skips_nothing) {
  std::vector<int> xs(23);
  for (int i = 0; i < 23; ++i) xs[static_cast<std::size_t>(i)] = i;
  window_events<int> events{std::make_unique<blocks_cursor>(xs, 5)};
  std::vector<int> seen(events.begin(), events.end());
  BOOST_TEST(seen == xs);
  window_events<int> none{std::make_unique<blocks_cursor>(std::vector<int>{}, 5)};
  BOOST_TEST((none.begin() == none.end()));
}

BOOST_AUTO_TEST_CASE(flat_hash_map_erase_keeps_every_other_key_reachable) {
  // Hashes with few distinct low bits force long probe chains and wrap-around.
  std::mt19937_64 rng{7};
  detail::flat_hash_map<int, int> map;
  std::unordered_map<int, int> reference;
  auto hash = [](int k) { return static_cast<std::uint64_t>(k % 5) * 3 + (k % 2 ? 0xF0 : 0); };
  for (int step = 0; step < 20000; ++step) {
    int k = static_cast<int>(rng() % 200);
    if (rng() % 3 == 0) {
      map.erase(hash(k), k);
      reference.erase(k);
    } else {
      map.find_or_insert(hash(k), k, [] { return 0; }) += 1;
      reference[k] += 1;
    }
    if (step % 97 == 0)
      for (int q = 0; q < 200; ++q) {
        auto* v = map.find(hash(q), q);
        auto it = reference.find(q);
        BOOST_REQUIRE_EQUAL(v != nullptr, it != reference.end());
        if (v) BOOST_REQUIRE_EQUAL(*v, it->second);
      }
  }
  BOOST_TEST(map.size() == reference.size());
}

BOOST_AUTO_TEST_CASE(a_flat_hash_map_moved_from_is_empty_and_takes_new_keys) {
  // Window operators hand a purged window's table on to the next window and reuse the emptied
  // one: both sides must be whole tables afterwards.
  detail::flat_hash_map<int, int> first;
  for (int k = 0; k < 100; ++k) first.find_or_insert(static_cast<std::uint64_t>(k) * 7, k, [k] { return k; });
  detail::flat_hash_map<int, int> second{std::move(first)};
  BOOST_TEST(first.size() == 0u);
  BOOST_TEST(first.find(0, 0) == nullptr);
  for (int k = 0; k < 100; ++k) first.find_or_insert(static_cast<std::uint64_t>(k) * 7, k, [k] { return -k; });
  detail::flat_hash_map<int, int> third;
  third = std::move(second);
  BOOST_TEST(second.size() == 0u);
  second.find_or_insert(3, 3, [] { return 33; });
  BOOST_TEST(*second.find(3, 3) == 33);
  BOOST_TEST(first.size() == 100u);
  BOOST_TEST(third.size() == 100u);
  for (int k = 0; k < 100; ++k) {
    const auto h = static_cast<std::uint64_t>(k) * 7;
    BOOST_TEST(*first.find(h, k) == -k);
    BOOST_TEST(*third.find(h, k) == k);
  }
}
