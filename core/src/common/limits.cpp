// SPDX-License-Identifier: GPL-2.0-or-later
#include "ddpscope/common/limits.h"

#include <array>
#include <limits>

namespace ddpscope {

namespace {

constexpr std::array kFields{
    LimitField{"reassembly_window", &Limits::reassembly_window, true,
               "out-of-order octets held per TCP direction before a hole is capture loss"},
    LimitField{"max_pending_total", &Limits::max_pending_total, true,
               "out-of-order octets held by all TCP directions together"},
    LimitField{"retransmission_history", &Limits::retransmission_history, true,
               "delivered octets kept per TCP direction to compare retransmissions against"},
    LimitField{"max_history_total", &Limits::max_history_total, true,
               "retransmission history of all TCP directions together"},
    LimitField{"resync_buffer", &Limits::resync_buffer, true,
               "octets held per direction while searching for an FPDU boundary"},
    LimitField{"max_resync_total", &Limits::max_resync_total, true,
               "octets held by all directions together while looking for an FPDU boundary"},
    LimitField{"payload_retention", &Limits::payload_retention, true,
               "placed payload kept in shadow buffers, all regions together (0 = none)"},
    LimitField{"max_streams", &Limits::max_streams, false, "TCP streams analysed"},
    LimitField{"max_regions", &Limits::max_regions, false, "shadow buffers, all streams together"},
    LimitField{"max_ranges_per_region", &Limits::max_ranges_per_region, false,
               "distinct placed ranges kept per shadow buffer"},
    LimitField{"max_pending_messages", &Limits::max_pending_messages, false,
               "undelivered messages per direction"},
    LimitField{"max_message_records", &Limits::max_message_records, false,
               "message records kept for views (GUI MSN chart, plugin; analyze keeps none)"},
    LimitField{"max_findings", &Limits::max_findings, false,
               "findings kept; later ones are only counted"},
    LimitField{"max_outstanding_reads", &Limits::max_outstanding_reads, false,
               "Read Requests awaiting their Response, per direction"},
    LimitField{"max_outstanding_atomics", &Limits::max_outstanding_atomics, false,
               "Atomic Requests awaiting their Response, per direction"},
    LimitField{"max_ulp_outstanding", &Limits::max_ulp_outstanding, false,
               "upper-layer commands awaiting their completion, and their regions, per stream"},
    LimitField{"max_timing_samples", &Limits::max_timing_samples, false,
               "operation latencies kept exactly (--timing); past it, percentiles are estimated"},
};

// Every std::size_t member of Limits is listed once.
static_assert(sizeof(Limits) == kFields.size() * sizeof(std::size_t));

}  // namespace

std::span<const LimitField> limit_fields() {
  return kFields;
}

const LimitField* find_limit_field(std::string_view name) {
  for (const auto& f : kFields)
    if (f.name == name) return &f;
  return nullptr;
}

std::optional<std::size_t> parse_limit_value(std::string_view text) {
  std::size_t value = 0;
  std::size_t i = 0;
  for (; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i) {
    const std::size_t digit = static_cast<std::size_t>(text[i] - '0');
    if (value > (std::numeric_limits<std::size_t>::max() - digit) / 10) return std::nullopt;
    value = value * 10 + digit;
  }
  if (i == 0) return std::nullopt;
  std::string_view suffix = text.substr(i);
  unsigned shift = 0;
  if (!suffix.empty()) {
    switch (suffix[0]) {
      case 'K':
      case 'k':
        shift = 10;
        break;
      case 'M':
      case 'm':
        shift = 20;
        break;
      case 'G':
      case 'g':
        shift = 30;
        break;
      default:
        return std::nullopt;
    }
    suffix.remove_prefix(1);
    if (suffix != "" && suffix != "B" && suffix != "iB") return std::nullopt;
  }
  if (shift && value > (std::numeric_limits<std::size_t>::max() >> shift)) return std::nullopt;
  return value << shift;
}

std::string format_limit_value(const LimitField& field, std::size_t value) {
  if (field.octets && value != 0) {
    for (auto [shift, unit] : {std::pair{30u, 'G'}, std::pair{20u, 'M'}, std::pair{10u, 'K'}})
      if (value % (std::size_t{1} << shift) == 0) return std::to_string(value >> shift) + unit;
  }
  return std::to_string(value);
}

bool set_limit(Limits& limits, std::string_view assignment, std::string& error) {
  const auto eq = assignment.find('=');
  const std::string_view name = assignment.substr(0, eq);
  if (eq == std::string_view::npos) {
    error = "a limit is set as NAME=VALUE, not '" + std::string(assignment) + "'";
    return false;
  }
  const LimitField* field = find_limit_field(name);
  if (field == nullptr) {
    error = "unknown limit '" + std::string(name) + "' (`ddpscope list-limits` shows the names)";
    return false;
  }
  const std::string_view text = assignment.substr(eq + 1);
  const auto value = parse_limit_value(text);
  if (!value) {
    error = "bad value '" + std::string(text) + "' for limit " + std::string(name) +
            " (want a number, optionally with K, M or G)";
    return false;
  }
  limits.*(field->member) = *value;
  return true;
}

}  // namespace ddpscope
