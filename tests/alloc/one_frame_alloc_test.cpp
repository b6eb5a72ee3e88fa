// SPDX-License-Identifier: GPL-2.0-or-later
// What an analysis of a one-frame capture costs in memory, as the hosts that keep message
// records run it (the plugin, the GUI, the fuzz targets): a small, fixed amount, whatever the
// caps allow it to grow to (issue 39: the records reserved up to Limits::max_message_records at
// the first one were 48 MiB of heap for every analysis, which AddressSanitizer cleared on every
// fuzz input). Counted two ways: every octet asked of the heap (this binary replaces the global
// operator new), and the memory the kernel gave the process for data (VmData: writable private
// mappings and the heap, which address space reserved without access is not).
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <new>
#include <optional>
#include <string>

#include "ddpscope/analysis/analyzer.h"
#include "ddpscope/common/bytes.h"
#include "ddpscope/common/page_arena.h"
#include "ddpscope/net/packet.h"
#include "ddpscope/wire/ddp.h"
#include "ddpscope/wire/mpa.h"
#include "ddpscope/wire/rdmap.h"

namespace {

std::atomic<std::uint64_t> g_heap_requested{0};

void* counted(std::size_t n) {
  g_heap_requested.fetch_add(n, std::memory_order_relaxed);
  return std::malloc(n == 0 ? 1 : n);
}

void* counted_aligned(std::size_t n, std::align_val_t al) {
  g_heap_requested.fetch_add(n, std::memory_order_relaxed);
  const auto a = static_cast<std::size_t>(al);
  return std::aligned_alloc(a, (n + a - 1) / a * a + (n == 0 ? a : 0));
}

}  // namespace

// Every form of the global operator new, counted; every delete gives the block back to malloc.
// These are the replacements themselves, so malloc and free are the matching pair: at -O1 GCC
// inlines this file's operator new[] into a caller of operator delete[] and takes the free
// below for a mismatch (-Wmismatched-new-delete, a false positive here).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif
void* operator new(std::size_t n) {
  if (void* p = counted(n)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t n) {
  if (void* p = counted(n)) return p;
  throw std::bad_alloc();
}
void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
  return counted(n);
}
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept {
  return counted(n);
}
void* operator new(std::size_t n, std::align_val_t a) {
  if (void* p = counted_aligned(n, a)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t n, std::align_val_t a) {
  if (void* p = counted_aligned(n, a)) return p;
  throw std::bad_alloc();
}
void* operator new(std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  return counted_aligned(n, a);
}
void* operator new[](std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  return counted_aligned(n, a);
}
void operator delete(void* p) noexcept {
  std::free(p);
}
void operator delete[](void* p) noexcept {
  std::free(p);
}
void operator delete(void* p, std::size_t) noexcept {
  std::free(p);
}
void operator delete[](void* p, std::size_t) noexcept {
  std::free(p);
}
void operator delete(void* p, std::align_val_t) noexcept {
  std::free(p);
}
void operator delete[](void* p, std::align_val_t) noexcept {
  std::free(p);
}
void operator delete(void* p, std::size_t, std::align_val_t) noexcept {
  std::free(p);
}
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept {
  std::free(p);
}
void operator delete(void* p, const std::nothrow_t&) noexcept {
  std::free(p);
}
void operator delete[](void* p, const std::nothrow_t&) noexcept {
  std::free(p);
}
void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept {
  std::free(p);
}
void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept {
  std::free(p);
}

namespace ddpscope {
namespace {

// The process's VmData in octets (Linux /proc/self/status), if known.
std::optional<std::uint64_t> vm_data() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("VmData:", 0) == 0) return std::stoull(line.substr(7)) * 1024;  // "N kB"
  }
  return std::nullopt;
}

// One Ethernet frame: a TCP segment from 10.0.0.1:40000 to 10.0.0.2:4791 carrying one FPDU
// (CRC on) with a whole Send of 64 octets, MSN 1 on QN 0 (RFC 5040 §5.3).
Bytes one_send_frame() {
  const Bytes payload(64, 0x5a);
  Bytes ulpdu;
  ByteWriter w(ulpdu);
  wire::encode_ddp_header(wire::untagged_header(wire::Opcode::send, 0, 1, 0, true), w);
  w.bytes(payload);
  wire::FpduEncodeOptions fo;
  fo.crc = true;
  net::TcpFrameSpec spec;
  spec.src = {*net::Address::parse("10.0.0.1"), 40000};
  spec.dst = {*net::Address::parse("10.0.0.2"), 4791};
  spec.seq = 1000;
  spec.flags = net::tcp_flag::ack | net::tcp_flag::psh;
  return net::encode_tcp_frame(spec, wire::encode_fpdu(ulpdu, fo));
}

// What the analysis keeps for one frame: stream and direction state, one message record, a
// finding or two. Far more than that is a reservation sized by a cap.
constexpr std::uint64_t kHeapBound = 256u << 10;
constexpr std::uint64_t kVmDataBound = 1u << 20;

TEST(Allocation, AnalysisOfAOneFrameCaptureAllocatesLittle) {
  const Bytes frame = one_send_frame();
  AnalyzerOptions o;  // default caps: up to half a million message records
  ASSERT_TRUE(o.message_records);
  o.hints.push_back(StreamHint{4791, std::nullopt, true});  // no handshake in the capture
  const std::optional<std::uint64_t> data_before = vm_data();
  const std::uint64_t heap_before = g_heap_requested.load();
  {
    Analyzer an(o);
    an.feed_frame(1, 1'000'000, 1 /* Ethernet */, frame, static_cast<std::uint32_t>(frame.size()));
    an.finish();
    const std::uint64_t heap = g_heap_requested.load() - heap_before;
    const Model& m = an.model();
    // The frame was analysed through to a message record: what the cost is about.
    ASSERT_EQ(m.streams.size(), 1u);
    ASSERT_EQ(m.messages.size(), 1u);
    EXPECT_EQ(m.messages[0].msn, 1u);
    EXPECT_TRUE(m.messages[0].complete);
    EXPECT_LE(heap, kHeapBound) << "octets asked of the heap by the analysis";
    // Under AddressSanitizer the heap is its allocator's, which maps memory for itself.
    if (!PageArena::kHeapOnly && data_before) {
      const std::optional<std::uint64_t> data = vm_data();
      ASSERT_TRUE(data);
      EXPECT_LE(*data - std::min(*data, *data_before), kVmDataBound)
          << "data memory the process gained for the analysis";
    }
  }
}

}  // namespace
}  // namespace ddpscope
