// SPDX-License-Identifier: GPL-2.0-or-later
// The endpoint's registered memory: protection domains, regions and STags (RFC 5040 §5.3,
// RFC 5041 §5.1). STags are laid out as Linux siw's: 24-bit index, 8-bit consumer key.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>

#include "ddpscope/ddp/rules.h"

namespace ddpscope::session {

// ---------------------------------------------------------------------------------------------
// Memory: protection domains, registered regions, STags (RFC 5040 §5.3, RFC 5041 §5.1)
// ---------------------------------------------------------------------------------------------

namespace access = ddp::access;  // rights, as the rule layer checks them (ddp/rules.h)

struct Region {
  std::uint32_t stag = 0;  // 24-bit index << 8 | 8-bit key (as Linux siw)
  std::uint32_t pd = 0;
  std::uint64_t base = 0;       // TO of mem[0]
  std::span<std::uint8_t> mem;  // owned by the caller; must outlive the registration
  std::uint8_t access = 0;
  std::optional<std::uint64_t> stream;  // when set, valid only on that session (RFC 5041 §8)
  bool valid = true;                    // false after invalidation
  bool invalidatable = true;            // remote invalidation allowed (Send with Invalidate)
};

struct MemoryLimits {
  std::size_t max_regions = 4096;
  std::size_t max_registered_bytes = 1u << 30;
  std::size_t max_protection_domains = 1024;
  // First STag index handed out. Processes sharing one host address (loopback tests) pick
  // different ones so that a capture never shows two hosts' regions under one STag.
  std::uint32_t first_index = 1;
};

// Regions shared by the sessions of one process (or one test). Not thread-safe.
class MemoryTable {
 public:
  explicit MemoryTable(MemoryLimits limits = {})
      : limits_(limits), next_index_(limits.first_index ? limits.first_index : 1) {}
  // 0 when the cap is reached.
  std::uint32_t alloc_pd();
  // A new STag for `mem`, whose first octet is at TO `base`. nullopt when a cap is reached or
  // `pd` is unknown.
  std::optional<std::uint32_t> register_region(std::uint32_t pd, std::span<std::uint8_t> mem,
                                               std::uint64_t base, std::uint8_t access,
                                               std::optional<std::uint64_t> stream = {});
  // The same with an STag chosen by the caller (replay of a capture's STags); nullopt when
  // that index is taken or a cap is reached.
  std::optional<std::uint32_t> register_region_at(std::uint32_t stag, std::uint32_t pd,
                                                  std::span<std::uint8_t> mem, std::uint64_t base,
                                                  std::uint8_t access,
                                                  std::optional<std::uint64_t> stream = {});
  bool deregister(std::uint32_t stag);
  // Local invalidate: the STag stops being valid (RFC 5040 §5.3); false when unknown.
  bool invalidate(std::uint32_t stag);
  // Make a previously invalidated STag valid again (the key is kept: a fresh registration
  // would get a new key).
  bool revalidate(std::uint32_t stag);
  bool associate(std::uint32_t stag, std::optional<std::uint64_t> stream);
  // Exact STag match (index and key), valid or not; nullptr when unknown.
  Region* find(std::uint32_t stag);
  const Region* find(std::uint32_t stag) const;
  std::uint64_t new_stream_id() { return ++streams_; }
  std::size_t registered_bytes() const { return registered_bytes_; }
  std::size_t region_count() const { return count_; }

 private:
  MemoryLimits limits_;
  std::map<std::uint32_t, Region> regions_;     // by 24-bit index
  std::map<std::uint32_t, std::uint8_t> keys_;  // last key used per index
  std::uint32_t next_index_;
  std::size_t count_ = 0;
  std::size_t registered_bytes_ = 0;
  std::uint32_t pds_ = 0;
  std::uint64_t streams_ = 0;
};

}  // namespace ddpscope::session
