// SPDX-License-Identifier: GPL-2.0-or-later
// What each capped collection costs with the default Limits: one scenario per run (peak RSS is
// per process), fed in memory through the hostile builders. Prints one line: the scenario, the
// items fed, seconds, peak RSS, RSS before feeding and what the model kept.
//   ddpscope_caps_cost SCENARIO [ITEMS]     (ctest -L bench -R caps_cost -V runs them all)
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "hostile_builders.h"

namespace {

using namespace ddpscope;
using namespace ddpscope::hostile;

double peak_rss_mib() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) / 1024.0;
}

std::string kept(const Model& m) {
  char buf[256];
  std::snprintf(buf, sizeof buf,
                "streams %zu, regions %zu, message records %zu, findings %zu (+%llu counted), "
                "retained %llu octets",
                m.streams.size(), m.memory.buffers().size(), m.messages.size(), m.findings.size(),
                static_cast<unsigned long long>(m.findings_dropped),
                static_cast<unsigned long long>(m.memory.bytes_retained()));
  return buf;
}

// Each scenario feeds `n` items into `an` (default Limits).
using Scenario = std::function<void(Analyzer& an, std::uint32_t n)>;

void one_connection(Analyzer& an, const std::function<void(Wire&)>& body) {
  Wire w(an);
  w.crc = false;
  w.handshake();
  body(w);
}

const std::map<std::string, Scenario>& scenarios() {
  static const std::map<std::string, Scenario> s{
      // Tagged Writes to distinct STags: a shadow buffer and a message record each.
      {"stags",
       [](Analyzer& an, std::uint32_t n) {
         one_connection(an, [n](Wire& w) {
           const Bytes p(4, 9);
           for (std::uint32_t stag = 1; stag <= n; ++stag)
             w.fpdu(0, wire::tagged_header(Opcode::rdma_write, stag, 0, true), p);
         });
       }},
      // Sends, every MSN a gap: a finding and a message record each.
      {"msn-gaps",
       [](Analyzer& an, std::uint32_t n) {
         one_connection(an, [n](Wire& w) {
           const Bytes p(4, 9);
           for (std::uint32_t k = 0; k < n; ++k)
             w.fpdu(0, wire::untagged_header(Opcode::send, 0, 2 + 2 * k, 0, true), p);
         });
       }},
      // Disjoint 1-octet Writes to one STag: a placed range each.
      {"disjoint",
       [](Analyzer& an, std::uint32_t n) {
         one_connection(an, [n](Wire& w) {
           const Bytes p(1, 9);
           for (std::uint64_t i = 0; i < n; ++i)
             w.fpdu(0, wire::tagged_header(Opcode::rdma_write, 0x100, i * 2, true), p);
         });
       }},
      // Read Requests never answered: an outstanding read and two learned regions each.
      {"reads",
       [](Analyzer& an, std::uint32_t n) {
         one_connection(an, [n](Wire& w) {
           for (std::uint32_t i = 0; i < n; ++i) {
             Bytes rr;
             ByteWriter rw(rr);
             wire::encode_read_request(wire::ReadRequest{0x1000 + i, 0, 64, 0x100, 0}, rw);
             w.fpdu(
                 0,
                 wire::untagged_header(Opcode::read_request, wire::kQnReadRequest, i + 1, 0, true),
                 rr);
           }
         });
       }},
      // Sends behind a Write that never completes: undelivered messages.
      {"pending-messages",
       [](Analyzer& an, std::uint32_t n) {
         one_connection(an, [n](Wire& w) {
           const Bytes p(4, 9);
           w.fpdu(0, wire::tagged_header(Opcode::rdma_write, 0x100, 0, false), p);
           for (std::uint32_t msn = 1; msn <= n; ++msn)
             w.fpdu(0, wire::untagged_header(Opcode::send, 0, msn, 0, true), p);
         });
       }},
      // Connections: SYNs and the MPA handshake only.
      {"streams",
       [](Analyzer& an, std::uint32_t n) {
         std::uint64_t frames = 0;
         for (std::uint32_t i = 0; i < n; ++i) {
           Wire w(an, static_cast<std::uint16_t>(1024 + i % 60000), 1 + i / 60000);
           w.frame_counter = &frames;
           w.handshake();
         }
       }},
      // Connections that each carry a 2000-octet Send both ways (history, framing state).
      {"streams-data",
       [](Analyzer& an, std::uint32_t n) {
         std::uint64_t frames = 0;
         Bytes fpdu;  // the same FPDU on every connection: encoded once
         for (std::uint32_t i = 0; i < n; ++i) {
           Wire w(an, static_cast<std::uint16_t>(1024 + i % 60000), 1 + i / 60000);
           w.frame_counter = &frames;
           w.crc = false;
           w.handshake();
           if (fpdu.empty())
             fpdu =
                 w.fpdu_bytes(wire::untagged_header(Opcode::send, 0, 1, 0, true), Bytes(2000, 3));
           w.send(0, fpdu);
           w.send(1, fpdu);
         }
       }},
      // Connections that each leave a one-octet hole with 60000 octets waiting behind it.
      {"pending-total",
       [](Analyzer& an, std::uint32_t n) {
         std::uint64_t frames = 0;
         const Bytes chunk(60000, 7);
         for (std::uint32_t i = 0; i < n; ++i) {
           Wire w(an, static_cast<std::uint16_t>(1024 + i % 60000), 1 + i / 60000);
           w.frame_counter = &frames;
           w.crc = false;
           w.handshake();
           w.segment(0, w.seq[0] + 1, chunk);
         }
       }},
  };
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || scenarios().count(argv[1]) == 0) {
    std::fprintf(stderr, "usage: %s SCENARIO [ITEMS]; scenarios:", argv[0]);
    for (const auto& [name, _] : scenarios())
      std::fprintf(stderr, " %s", name.c_str());
    std::fprintf(stderr, "\n");
    return 2;
  }
  const auto n = static_cast<std::uint32_t>(argc > 2 ? std::strtoul(argv[2], nullptr, 0) : 1000000);
  auto an = std::make_unique<Analyzer>();  // default Limits
  const double before = peak_rss_mib();
  const auto t0 = std::chrono::steady_clock::now();
  scenarios().at(argv[1])(*an, n);
  an->finish();
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const double peak = peak_rss_mib();
  std::printf("%-16s %8u items %6.2f s  peak RSS %7.1f MiB (%.1f before)  kept: %s\n", argv[1], n,
              s, peak, before, kept(an->model()).c_str());
  return 0;
}
