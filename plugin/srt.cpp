// SPDX-License-Identifier: GPL-2.0-or-later
// The service response time table (epan/srt_table.h): tshark -z ddpscope,srt, and in Wireshark
// Statistics › Service Response Time › ddpscope. Two tables: one row per operation kind of
// core's timing model (rdma-read, rdma-read-first, atomic, nvme-command, ...), one row per
// ULP command ("NVMe Read", "SCSI READ(10)", "NFSv3 READ", "SMB2 WRITE"). Each response time is
// core's (OperationRecord::ns, the timing model's latency) given to Wireshark's time statistics
// as it is: no time is computed here.
//
// What a tapped frame brings: on Wireshark's first, sequential visit (a one-pass tshark run)
// the operations core paired while that frame was fed (FrameRecord::operations_learnt); on any
// later visit (tshark -2, Wireshark's dialogs, which tap a loaded capture again) the operations
// answered by the PDUs drawn in the frame. Either way each operation is counted once; a one-pass
// run misses only those paired at the end of the capture (PDUs flushed by Analyzer::finish()).
#include <epan/packet.h>
#include <epan/srt_table.h>
#include <epan/tap.h>
#include <epan/timestats.h>

#include <map>
#include <string>

#include "stats.h"

namespace ddpscope::plugin {
namespace {

int srt_tap = -1;

struct SrtTapData {
  const CaptureState* state;
  const FrameRecord* frame;
  bool first_visit;
};

enum SrtTable : guint { table_kinds = 0, table_ulp = 1 };

// The ULP table's row of each command name (rows are added as commands are seen).
std::map<const srt_stat_table*, std::map<std::string, int>> ulp_rows;

void srt_init(struct register_srt* /*srt*/, GArray* srt_array) {
  srt_stat_table* kinds = init_srt_table("iWARP operations (ddpscope)", nullptr, srt_array,
                                         static_cast<int>(kOpKinds), "Operation", nullptr, nullptr);
  for (std::size_t k = 0; k < kOpKinds; ++k)
    init_srt_table_row(kinds, static_cast<int>(k), to_string(static_cast<OpKind>(k)).data());
  srt_stat_table* ulp =
      init_srt_table("ULP commands (ddpscope)", nullptr, srt_array, 0, "Command", nullptr, nullptr);
  ulp_rows[ulp].clear();
}

void add(srt_stat_table* t, int row, std::uint64_t ns, packet_info* pinfo) {
  nstime_t delta;
  delta.secs = static_cast<time_t>(ns / 1000000000);
  delta.nsecs = static_cast<int>(ns % 1000000000);
  time_stat_update(&t->procedures[row].stats, &delta, pinfo);
}

void count(srt_data_t* data, const OperationRecord& o, packet_info* pinfo) {
  if (data->srt_array->len <= table_ulp) return;
  add(g_array_index(data->srt_array, srt_stat_table*, table_kinds), static_cast<int>(o.kind), o.ns,
      pinfo);
  if (!is_ulp_kind(o.kind) || o.operation == nullptr) return;
  srt_stat_table* ulp = g_array_index(data->srt_array, srt_stat_table*, table_ulp);
  auto& rows = ulp_rows[ulp];
  auto it = rows.find(*o.operation);
  if (it == rows.end()) {
    const int row = ulp->num_procs;
    init_srt_table_row(ulp, row, o.operation->c_str());
    it = rows.emplace(*o.operation, row).first;
  }
  add(ulp, it->second, o.ns, pinfo);
}

tap_packet_status srt_packet(void* pss, packet_info* pinfo, epan_dissect_t* /*edt*/,
                             const void* prv, tap_flags_t /*flags*/) {
  auto* data = static_cast<srt_data_t*>(pss);
  const auto* tap = static_cast<const SrtTapData*>(prv);
  if (tap == nullptr || tap->state == nullptr || tap->frame == nullptr)
    return TAP_PACKET_DONT_REDRAW;
  bool any = false;
  if (tap->first_visit) {
    for (std::uint32_t i : tap->frame->operations_learnt()) {
      count(data, tap->state->operation(i), pinfo);
      any = true;
    }
  } else {
    for (std::uint32_t p : tap->frame->pdus_complete) {
      for (std::uint32_t i : tap->state->pdu(p).operations()) {
        count(data, tap->state->operation(i), pinfo);
        any = true;
      }
    }
  }
  return any ? TAP_PACKET_REDRAW : TAP_PACKET_DONT_REDRAW;
}

}  // namespace

void register_srt(int proto_id) {
  srt_tap = register_tap("ddpscope_srt");
  register_srt_table(proto_id, "ddpscope_srt", 2, srt_packet, srt_init, nullptr);
}

void queue_srt(packet_info* pinfo, const CaptureState* state, const FrameRecord* frame) {
  if (srt_tap < 0 || state == nullptr || frame == nullptr || !have_tap_listener(srt_tap)) return;
  const bool first = !PINFO_FD_VISITED(pinfo);
  if (first && frame->operations_learnt().empty()) return;
  if (!first && frame->pdus_complete.empty()) return;
  auto* data = wmem_new(pinfo->pool, SrtTapData);
  data->state = state;
  data->frame = frame;
  data->first_visit = first;
  tap_queue_packet(srt_tap, pinfo, data);
}

}  // namespace ddpscope::plugin
