// SPDX-License-Identifier: GPL-2.0-or-later
// Protection domains and registered regions for the endpoint engine (RFC 5040 §5.3,
// RFC 5041 §5.1). STags are laid out as Linux siw's: 24-bit index, 8-bit consumer key.
#include "ddpscope/session/session.h"

namespace ddpscope::session {

namespace {
constexpr std::uint32_t kMaxIndex = 0xFFFFFF;
}

std::uint32_t MemoryTable::alloc_pd() {
  if (pds_ >= limits_.max_protection_domains) return 0;
  return ++pds_;
}

std::optional<std::uint32_t> MemoryTable::register_region(std::uint32_t pd,
                                                          std::span<std::uint8_t> mem,
                                                          std::uint64_t base, std::uint8_t access,
                                                          std::optional<std::uint64_t> stream) {
  if (count_ >= limits_.max_regions) return std::nullopt;
  std::uint32_t index = next_index_;
  for (std::size_t tries = 0; regions_.count(index); ++tries) {
    if (tries > kMaxIndex) return std::nullopt;
    index = index >= kMaxIndex ? 1 : index + 1;
  }
  // A fresh key per registration, so a stale STag of an earlier registration never matches.
  const std::uint8_t key = static_cast<std::uint8_t>(keys_[index] + 0x5B);
  auto stag = register_region_at((index << 8) | key, pd, mem, base, access, stream);
  if (stag) next_index_ = index >= kMaxIndex ? 1 : index + 1;
  return stag;
}

std::optional<std::uint32_t> MemoryTable::register_region_at(std::uint32_t stag, std::uint32_t pd,
                                                             std::span<std::uint8_t> mem,
                                                             std::uint64_t base,
                                                             std::uint8_t access,
                                                             std::optional<std::uint64_t> stream) {
  const std::uint32_t index = stag >> 8;
  if (index == 0) return std::nullopt;
  if (pd == 0 || pd > pds_) return std::nullopt;
  if (count_ >= limits_.max_regions) return std::nullopt;
  if (mem.size() > limits_.max_registered_bytes - registered_bytes_) return std::nullopt;
  if (mem.size() > 0 && base + (mem.size() - 1) < base) return std::nullopt;  // TO range wraps
  if (regions_.count(index)) return std::nullopt;
  keys_[index] = static_cast<std::uint8_t>(stag);
  Region r;
  r.stag = stag;
  r.pd = pd;
  r.base = base;
  r.mem = mem;
  r.access = access;
  r.stream = stream;
  regions_.emplace(index, r);
  ++count_;
  registered_bytes_ += mem.size();
  return stag;
}

Region* MemoryTable::find(std::uint32_t stag) {
  auto it = regions_.find(stag >> 8);
  if (it == regions_.end() || it->second.stag != stag) return nullptr;
  return &it->second;
}

const Region* MemoryTable::find(std::uint32_t stag) const {
  return const_cast<MemoryTable*>(this)->find(stag);
}

bool MemoryTable::deregister(std::uint32_t stag) {
  Region* r = find(stag);
  if (!r) return false;
  registered_bytes_ -= r->mem.size();
  --count_;
  regions_.erase(stag >> 8);
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
