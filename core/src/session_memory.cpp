// SPDX-License-Identifier: GPL-2.0-or-later
// Protection domains and registered regions for the endpoint engine (RFC 5040 §5.3,
// RFC 5041 §5.1). STags are laid out as Linux siw's: 24-bit index, 8-bit consumer key.
#include "ddpscope/session.h"

namespace ddpscope::session {

std::uint32_t MemoryTable::alloc_pd() {
  if (pds_ >= limits_.max_protection_domains) return 0;
  return ++pds_;
}

std::optional<std::uint32_t> MemoryTable::register_region(std::uint32_t pd,
                                                          std::span<std::uint8_t> mem,
                                                          std::uint64_t base, std::uint8_t access,
                                                          std::optional<std::uint64_t> stream) {
  if (pd == 0 || pd > pds_) return std::nullopt;
  if (count_ >= limits_.max_regions) return std::nullopt;
  if (mem.size() > limits_.max_registered_bytes - registered_bytes_) return std::nullopt;
  if (mem.size() > 0 && base + mem.size() - 1 < base) return std::nullopt;  // TO range wraps
  std::size_t slot = slots_.size();
  for (std::size_t i = 0; i < slots_.size(); ++i) {
    if (!slots_[i]) {
      slot = i;
      break;
    }
  }
  if (slot == slots_.size()) {
    if (slot >= 0xFFFFFE) return std::nullopt;  // 24-bit index space (index 0 unused)
    slots_.emplace_back();
    keys_.push_back(0);
  }
  // A fresh key per registration, so a stale STag of an earlier registration never matches.
  keys_[slot] = static_cast<std::uint8_t>(keys_[slot] + 0x5B);
  Region r;
  r.stag = (static_cast<std::uint32_t>(slot + 1) << 8) | keys_[slot];
  r.pd = pd;
  r.base = base;
  r.mem = mem;
  r.access = access;
  r.stream = stream;
  slots_[slot] = r;
  ++count_;
  registered_bytes_ += mem.size();
  return r.stag;
}

Region* MemoryTable::find(std::uint32_t stag) {
  const std::uint32_t index = stag >> 8;
  if (index == 0 || index > slots_.size()) return nullptr;
  auto& slot = slots_[index - 1];
  if (!slot || slot->stag != stag) return nullptr;
  return &*slot;
}

const Region* MemoryTable::find(std::uint32_t stag) const {
  return const_cast<MemoryTable*>(this)->find(stag);
}

bool MemoryTable::deregister(std::uint32_t stag) {
  Region* r = find(stag);
  if (!r) return false;
  registered_bytes_ -= r->mem.size();
  --count_;
  slots_[(stag >> 8) - 1].reset();
  return true;
}

bool MemoryTable::invalidate(std::uint32_t stag) {
  Region* r = find(stag);
  if (!r) return false;
  r->valid = false;
  return true;
}

bool MemoryTable::revalidate(std::uint32_t stag) {
  Region* r = find(stag);
  if (!r) return false;
  r->valid = true;
  return true;
}

bool MemoryTable::associate(std::uint32_t stag, std::optional<std::uint64_t> stream) {
  Region* r = find(stag);
  if (!r) return false;
  r->stream = stream;
  return true;
}

}  // namespace ddpscope::session
