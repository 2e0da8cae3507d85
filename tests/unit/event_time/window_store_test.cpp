// The in-memory window_store (append, lazy iteration, merge, purge, memory accounting),
// window_events over a cursor with several blocks, and the open-addressing table's erase and
// growth.
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

/// A value that counts how often any of its kind is moved.
struct counted {
  static inline std::size_t moves = 0;
  int n = 0;
  counted() = default;
  explicit counted(int v) : n(v) {}
  counted(const counted&) = default;
  counted& operator=(const counted&) = default;
  counted(counted&& o) noexcept : n(o.n) { ++moves; }
  counted& operator=(counted&& o) noexcept {
    n = o.n;
    ++moves;
    return *this;
  }
};

BOOST_AUTO_TEST_CASE(a_growing_flat_hash_map_moves_few_entries_per_insertion) {
  // A table that moved all its entries at once when it grew stalled a keyed operator with
  // millions of keys for a second. Its documented bound: 8 old slots moved on per insertion.
  detail::flat_hash_map<int, counted> map;
  std::size_t most = 0;
  for (int k = 0; k < 100000; ++k) {
    const auto before = counted::moves;
    map.find_or_add(detail::mix_hash(static_cast<std::uint64_t>(k)), k).first.n = k;
    most = std::max(most, counted::moves - before);
  }
  BOOST_TEST(most <= 8u);
  BOOST_TEST(map.size() == 100000u);
  for (int k = 0; k < 100000; ++k) {
    auto* v = map.find(detail::mix_hash(static_cast<std::uint64_t>(k)), k);
    BOOST_REQUIRE(v != nullptr);
    BOOST_REQUIRE_EQUAL(v->n, k);
  }
}

BOOST_AUTO_TEST_CASE(a_flat_hash_map_finds_erases_and_visits_every_key_while_it_grows) {
  // Inserts outnumber erases, so the table grows again and again with entries left in its old
  // array; weak hashes make long probe chains that wrap around in both arrays. Checked against
  // std::unordered_map after every operation that could break a chain.
  std::mt19937_64 rng{11};
  detail::flat_hash_map<int, int> map;
  std::unordered_map<int, int> reference;
  auto hash = [](int k) { return static_cast<std::uint64_t>(k % 61) * 7 + (k % 2 ? 0xF00 : 0); };
  auto check_all = [&] {
    for (const auto& [k, v] : reference) {
      auto* found = map.find(hash(k), k);
      BOOST_REQUIRE(found != nullptr);
      BOOST_REQUIRE_EQUAL(*found, v);
    }
    std::size_t visited = 0;
    map.for_each([&](int k, int v) {
      ++visited;
      BOOST_REQUIRE_EQUAL(reference.at(k), v);
    });
    BOOST_REQUIRE_EQUAL(visited, reference.size());
  };
  for (int step = 0; step < 40000; ++step) {
    int k = static_cast<int>(rng() % 30000);
    if (rng() % 4 == 0) {
      map.erase(hash(k), k);
      reference.erase(k);
      BOOST_REQUIRE(map.find(hash(k), k) == nullptr);
    } else {
      map.find_or_insert(hash(k), k, [] { return 0; }) += 1;
      reference[k] += 1;
    }
    BOOST_REQUIRE_EQUAL(map.size(), reference.size());
    if (step % 1000 == 0) check_all();
  }
  check_all();
  // Reading the layout (as a checkpoint does) finishes a growth and keeps every entry.
  std::size_t in_slots = 0;
  map.for_each_slot([&](std::size_t i, std::uint64_t, int, int) {
    BOOST_REQUIRE_LT(i, map.slot_count());
    ++in_slots;
  });
  BOOST_TEST(in_slots == reference.size());
  check_all();
}

BOOST_AUTO_TEST_CASE(a_copy_of_a_growing_flat_hash_map_holds_every_entry_on_its_own) {
  // 800 entries: the table doubled to 2048 slots at its 769th and has moved 8 x 32 of its 1024 old
  // slots since, so entries are in both arrays. Heap-owning keys and values, so that sanitizers see
  // every entry built, moved and destroyed once.
  detail::flat_hash_map<std::string, std::string> map;
  auto hash = [](const std::string& k) { return detail::mix_hash(std::hash<std::string>{}(k)); };
  auto key = [](int i) { return "sensor-" + std::to_string(i) + "-with-a-long-name"; };
  for (int i = 0; i < 800; ++i)
    map.find_or_insert(hash(key(i)), key(i), [&] { return "value of " + key(i); });
  auto copy = map;
  for (int i = 0; i < 800; i += 2) copy.erase(hash(key(i)), key(i));
  for (int i = 800; i < 900; ++i)
    map.find_or_insert(hash(key(i)), key(i), [&] { return "value of " + key(i); });
  BOOST_TEST(map.size() == 900u);
  BOOST_TEST(copy.size() == 400u);
  for (int i = 0; i < 900; ++i) {
    auto* in_map = map.find(hash(key(i)), key(i));
    BOOST_REQUIRE(in_map != nullptr);
    BOOST_REQUIRE_EQUAL(*in_map, "value of " + key(i));
    auto* in_copy = copy.find(hash(key(i)), key(i));
    BOOST_REQUIRE_EQUAL(in_copy != nullptr, i < 800 && i % 2 == 1);
    if (in_copy) BOOST_REQUIRE_EQUAL(*in_copy, "value of " + key(i));
  }
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
