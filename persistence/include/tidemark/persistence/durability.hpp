// How much of a store's acknowledged writes survive a crash. Chosen per store, because it costs
// per write: a table of derived results may rebuild after a crash, a model blob may not.
#pragma once

namespace tidemark::persistence {

/// What a store promises once a write call has returned. Every level survives a clean close.
enum class durability {
  /// The table is not logged. Writes survive a crash (kill -9 or power loss) only once a
  /// checkpoint has run after them (the store's checkpoint(), or closing the database). The
  /// cheapest level: for data that can be rebuilt.
  checkpoint,
  /// Logged; each commit hands its log records to the operating system before returning
  /// (log_flush sync=off). Survives kill -9 of the process; a power loss or kernel crash may lose
  /// the writes of roughly the last second that the OS had not yet written back.
  process_crash,
  /// Logged; each commit fsyncs the log (commit sync=on). Survives kill -9 and power loss, at the
  /// cost of one fsync per write call (batch writes to amortize it).
  power_loss,
};

/// "checkpoint", "process_crash" or "power_loss".
const char* to_string(durability level) noexcept;

}  // namespace tidemark::persistence
