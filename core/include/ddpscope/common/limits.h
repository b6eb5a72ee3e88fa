// SPDX-License-Identifier: GPL-2.0-or-later
// Every per-connection collection has a cap; hitting one is an engine.limit-reached finding and
// the analysis goes on degraded. The CLI shows these as flags (`--limit NAME=VALUE`, listed by
// `ddpscope list-limits`), the plugin as preferences (`iwarp.mpa.NAME`): limit_fields() below
// names each field once for both.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace ddpscope {

// The defaults bound what the capped collections can hold to about 450 MiB in all (measured
// per item by tests/hostile/caps_cost_bench.cpp; bench/RESULTS.md, "Hostile captures").
struct Limits {
  // Out-of-order bytes held per TCP direction before the hole is declared capture loss.
  std::size_t reassembly_window = 4u << 20;
  // Out-of-order bytes held by all directions together; past it, the direction that grew
  // declares its holes capture loss at once.
  std::size_t max_pending_total = 64u << 20;
  // Delivered bytes remembered per TCP direction to compare retransmissions against.
  std::size_t retransmission_history = 256u << 10;
  // Retransmission history of all directions together: past it, histories stop growing (fewer
  // octets of later retransmissions are compared).
  std::size_t max_history_total = 64u << 20;
  // Octets held while searching for an FPDU boundary (resync) or waiting for the MPA Reply.
  std::size_t resync_buffer = 256u << 10;
  // Octets held by all directions together while resynchronising or waiting for the MPA Reply;
  // past it, the direction that grew gives up framing (its octets are reported unframed).
  std::size_t max_resync_total = 64u << 20;
  // Placed payload kept in shadow buffers, all regions together. 0 = keep no content.
  std::size_t payload_retention = 64u << 20;
  std::size_t max_streams = 8192;
  std::size_t max_regions = 1u << 18;            // shadow buffers, all streams
  std::size_t max_ranges_per_region = 1u << 16;  // distinct placed ranges kept per region
  std::size_t max_pending_messages = 4096;       // undelivered messages per direction
  std::size_t max_message_records = 1u << 19;    // message records kept for views (GUI, plugin)
  std::size_t max_findings = 100000;             // findings kept; later ones are only counted
  // Requests awaiting their Response, per direction: the oldest is forgotten at the cap (a
  // later Response may then be reported unmatched). IRD/ORD are 14 bits, so a conforming
  // peer stays below these.
  std::size_t max_outstanding_reads = 1u << 14;
  std::size_t max_outstanding_atomics = 1u << 14;
  // Upper-layer commands awaiting their completion and the regions they advertised, per stream
  // (each counts one; NVMe queues are at most 65535 deep, Linux uses 128, a command up to 252
  // keyed descriptors): past it, a new command's regions are still learned (bounded by
  // max_regions) but its completion is not checked.
  std::size_t max_ulp_outstanding = 4096;
  // Operation latencies kept exactly for `analyze --timing` / `ddpscope timing` (8 octets each),
  // all kinds and streams together: past it, a kind's median and p99 are estimated from its
  // log-scale histogram (analysis/timing.h). Not used when timing is off.
  std::size_t max_timing_samples = 1u << 20;
  // Bounded by design, not configurable: untagged queues (only the QNs RDMAP defines are
  // tracked), recently seen DDP headers (256 per direction, for Terminate quoting), the octets
  // kept of an untagged message's body (4096).
};

// One configurable field of Limits, by the name hosts show it under.
struct LimitField {
  std::string_view name;  // the member's name, e.g. "max_regions"
  std::size_t Limits::*member;
  bool octets;  // a size in octets (shown with K/M/G), else a count
  std::string_view meaning;
};

// Every field of Limits, in declaration order.
std::span<const LimitField> limit_fields();
const LimitField* find_limit_field(std::string_view name);

// "123", "64K", "4M", "1G" (binary multiples; a trailing "iB" or "B" is allowed). nullopt on
// anything else or on overflow.
std::optional<std::size_t> parse_limit_value(std::string_view text);
// The value as parse_limit_value reads it back: "4M" for 4 MiB, "65536" for a count.
std::string format_limit_value(const LimitField& field, std::size_t value);

// Applies "NAME=VALUE" to `limits`. On an unknown name or a bad value, returns false and says
// why in `error` (limits is then unchanged).
bool set_limit(Limits& limits, std::string_view assignment, std::string& error);

}  // namespace ddpscope
