// The table lookup join (the patent's "database joiner"): joins each element of a stream with
// the row of a WiredTiger table under the element's key. Lookups run on a pool of `concurrency`
// threads, each with its own table handle, and complete out of order, so the operator is delayed
// and what follows it is a synchronized timezone (docs/timezones.md).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <type_traits>
#include <vector>

#include "tidemark/core/job.hpp"
#include "tidemark/persistence/table_store.hpp"

namespace tidemark::persistence {

struct lookup_options {
  /// Lookups in flight per instance (one worker thread and table handle each).
  std::uint32_t concurrency = 16;
  /// Extra latency per lookup, spent on the worker thread after the lookup: simulates a remote
  /// database. Called with the looked-up key; empty means none.
  std::function<std::chrono::microseconds(std::string_view key)> latency;
  /// The durability the table was created with (table_store refuses another).
  durability level = durability::process_crash;
};

/// Emits `combine(x, row)` for each element x, where row is the value stored under `key(x)` in
/// `table` (nullopt when absent). `key(const T&)` returns something convertible to std::string.
template <class T, class KeyFn, class Combine>
auto table_lookup_join(const stream<T>& in, std::shared_ptr<wt_connection> conn, std::string table,
                       KeyFn key, Combine combine, lookup_options opts = {}, std::string name = "") {
  static_assert(std::is_convertible_v<std::invoke_result_t<KeyFn&, const T&>, std::string>,
                "table_lookup_join(..., key, ...): key must be callable as key(const T&) and "
                "return the row key (convertible to std::string)");
  static_assert(std::is_invocable_v<Combine&, const T&, std::optional<std::string>>,
                "table_lookup_join(..., combine): combine must be callable as "
                "combine(const T&, std::optional<std::string> row)");
  using U = std::decay_t<std::invoke_result_t<Combine&, const T&, std::optional<std::string>>>;
  const auto concurrency = opts.concurrency;
  auto s = in.template transform<U>(
      "table_lookup_join",
      [conn, table, key, combine, opts](const instance_info&) {
        // one handle per worker: a table_store serves one thread at a time
        auto stores = std::make_shared<std::vector<std::unique_ptr<table_store>>>();
        for (std::uint32_t w = 0; w < std::max<std::uint32_t>(1, opts.concurrency); ++w)
          stores->push_back(std::make_unique<table_store>(conn, table, opts.level));
        auto call = [stores, key, combine, latency = opts.latency](const T& x, std::size_t worker) {
          std::string k = key(x);
          auto row = (*stores)[worker]->lookup(k);
          if (latency) std::this_thread::sleep_for(latency(k));
          return std::optional<U>{combine(x, std::move(row))};
        };
        return ops::make_pooled<T, U>(std::move(call), opts.concurrency);
      },
      std::move(name));
  s.delayed(concurrency);
  return s;
}

}  // namespace tidemark::persistence
