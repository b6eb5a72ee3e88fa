// SPDX-License-Identifier: GPL-2.0-or-later
#include "stats.h"

#include <epan/packet.h>
#include <epan/stat_tap_ui.h>
#include <epan/tap.h>

#include <cinttypes>
#include <cstdio>
#include <string>

namespace ddpscope::plugin {

namespace {

CaptureState* stats_state = nullptr;
int stats_tap = -1;

tap_packet_status stats_packet(void*, packet_info*, epan_dissect_t*, const void*, tap_flags_t) {
  return TAP_PACKET_DONT_REDRAW;  // everything is read from core's Model when drawing
}

void print_model(const Model& m, std::uint64_t segments, std::uint64_t last_frame) {
  std::printf("\n==================================================================\n");
  std::printf("ddpscope iWARP statistics\n");
  const auto sev = [&](Severity s) { return m.severity_counts[static_cast<std::size_t>(s)]; };
  std::printf("TCP segments analysed: %" PRIu64 " (up to frame %" PRIu64
              ")  streams: %zu  messages: %" PRIu64 "  findings: %" PRIu64 " errors, %" PRIu64
              " warnings, %" PRIu64 " notes\n",
              segments, last_frame, m.streams.size(), m.message_count, sev(Severity::error),
              sev(Severity::warning), sev(Severity::note));
  for (const StreamModel& s : m.streams) {
    if (s.state == StreamState::unknown || s.state == StreamState::not_iwarp) continue;
    std::printf("\nStream %u: %s <-> %s  state=%s%s", s.id, s.client.to_string().c_str(),
                s.server.to_string().c_str(), std::string(to_string(s.state)).c_str(),
                s.mid_stream ? " (mid-stream)" : "");
    if (s.revision) std::printf("  rev=%u", unsigned{*s.revision});
    if (!s.rtr.empty()) std::printf("  rtr=%s", s.rtr.c_str());
    std::printf("  frames %" PRIu64 "-%" PRIu64 "\n", s.first_frame, s.last_frame);
    for (int d = 0; d < 2; ++d) {
      const DirectionModel& dm = s.dirs[static_cast<std::size_t>(d)];
      std::printf("  %s -> %s: tcp_bytes=%" PRIu64 " fpdus=%" PRIu64
                  " crc=%s markers=%s"
                  " crc_errors=%" PRIu64 " lost=%" PRIu64 " unframed=%" PRIu64 " placed=%" PRIu64
                  "\n",
                  dm.from.to_string().c_str(), dm.to.to_string().c_str(), dm.tcp_bytes, dm.fpdus,
                  dm.mpa.crc ? "yes" : "no", dm.mpa.markers ? "yes" : "no", dm.crc_errors,
                  dm.bytes_lost, dm.bytes_unframed, dm.bytes_placed);
      for (std::size_t op = 0; op < dm.opcodes.size(); ++op) {
        const OpcodeCounters& c = dm.opcodes[op];
        if (c.segments == 0 && c.messages == 0) continue;
        const wire::OpcodeInfo& info = wire::opcode_info(static_cast<std::uint8_t>(op));
        std::printf("    %-28s segments=%-8" PRIu64 " messages=%-8" PRIu64 " bytes=%" PRIu64 "\n",
                    std::string(info.defined ? info.name : "reserved").c_str(), c.segments,
                    c.messages, c.bytes);
      }
      for (const auto& [qn, q] : dm.queues) {
        std::printf("    QN %-3u MSN %u..%u  messages=%" PRIu64 " segments=%" PRIu64 "\n", qn,
                    q.first_msn, q.last_msn, q.messages, q.segments);
      }
    }
  }
  if (!m.memory.buffers().empty()) {
    std::printf("\nSTag regions:\n");
    for (const auto& [key, buf] : m.memory.buffers()) {
      std::printf("  %s STag 0x%08x  source=%s", key.owner.to_string().c_str(), key.stag,
                  std::string(to_string(buf.source)).c_str());
      if (buf.base && buf.length) {
        std::printf("  bounds=[0x%" PRIx64 ", +%" PRIu64 ")", *buf.base, *buf.length);
      }
      std::printf("  placed=%" PRIu64 "%s\n", buf.bytes_placed(),
                  buf.invalidated ? "  invalidated" : "");
    }
  }
  std::printf("\nFindings by code:\n");
  bool any = false;
  for (const FindingSpec& spec : finding_catalog()) {
    const std::uint64_t n = m.finding_counts[static_cast<std::size_t>(spec.id)];
    if (n == 0) continue;
    any = true;
    std::printf("  %-40s %-8s %" PRIu64 "\n", std::string(spec.code).c_str(),
                std::string(to_string(spec.severity)).c_str(), n);
  }
  if (!any) std::printf("  (none)\n");
  if (m.findings_dropped != 0) std::printf("  (%" PRIu64 " not kept)\n", m.findings_dropped);
  std::printf("==================================================================\n");
}

void stats_draw(void*) {
  if (stats_state == nullptr) return;
  stats_state->finish();
  print_model(stats_state->model(), stats_state->segments_fed(), stats_state->last_fed_frame());
}

void stats_init(const char* /*opt_arg*/, void* /*userdata*/) {
  static int listener_data = 0;
  GString* error = register_tap_listener("ddpscope", &listener_data, nullptr, TL_REQUIRES_NOTHING,
                                         nullptr, stats_packet, stats_draw, nullptr);
  if (error != nullptr) {
    std::fprintf(stderr, "ddpscope: could not register the statistics tap: %s\n", error->str);
    g_string_free(error, TRUE);
  }
}

stat_tap_ui stats_ui = {REGISTER_STAT_GROUP_GENERIC,
                        "ddpscope iWARP statistics",
                        "ddpscope,stat",
                        stats_init,
                        0,
                        nullptr};

}  // namespace

void register_stats(int tap_id) {
  stats_tap = tap_id;
  register_stat_tap_ui(&stats_ui, nullptr);
}

void set_stats_state(CaptureState* state) {
  stats_state = state;
}

const CaptureState* current_stats_state() {
  return stats_state;
}

}  // namespace ddpscope::plugin
