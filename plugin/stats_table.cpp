// SPDX-License-Identifier: GPL-2.0-or-later
// The plugin's statistics as stat-tap tables (epan/stat_tap_ui.h): Wireshark lists them under
// Statistics › iWARP (ddpscope) Findings / Opcodes per Stream and opens each in a table dialog;
// tshark prints them with -z ddpscope,opcodes and -z ddpscope,findings. Their values are read from
// core's Model (the one the dissection fed), never counted here: each tapped frame brings the
// tables up to date with what the model holds. In Wireshark the first pass has finished the model
// before a dialog taps, so the tables are the whole capture's; in a one-pass tshark run they hold
// what the model held at the last analysed frame (end-of-capture findings come with
// -z ddpscope,stat).
#include <epan/packet.h>
#include <epan/stat_tap_ui.h>
#include <epan/tap.h>

#include <algorithm>
#include <climits>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "stats.h"

namespace ddpscope::plugin {
namespace {

enum OpcodeColumn { op_direction, op_opcode, op_segments, op_messages, op_octets };
stat_tap_table_item opcode_fields[] = {
    {TABLE_ITEM_STRING, TAP_ALIGN_LEFT, "Direction", "%s"},
    {TABLE_ITEM_STRING, TAP_ALIGN_LEFT, "Opcode", "%s"},
    {TABLE_ITEM_UINT, TAP_ALIGN_RIGHT, "Segments", "%u"},
    {TABLE_ITEM_UINT, TAP_ALIGN_RIGHT, "Messages", "%u"},
    {TABLE_ITEM_UINT, TAP_ALIGN_RIGHT, "Octets", "%u"},
};
enum FindingColumn { fi_code, fi_severity, fi_count, fi_first_frame };
stat_tap_table_item finding_fields[] = {
    {TABLE_ITEM_STRING, TAP_ALIGN_LEFT, "Finding", "%s"},
    {TABLE_ITEM_STRING, TAP_ALIGN_LEFT, "Severity", "%s"},
    {TABLE_ITEM_UINT, TAP_ALIGN_RIGHT, "Count", "%u"},
    {TABLE_ITEM_UINT, TAP_ALIGN_RIGHT, "First frame", "%u"},
};

guint clamp32(std::uint64_t v) {
  return static_cast<guint>(std::min<std::uint64_t>(v, UINT_MAX));
}

// Rows by key in each table, so a frame updates the row it already made.
std::map<const stat_tap_table*, std::map<std::string, guint>> row_index;

stat_tap_table* table_named(stat_tap_table_ui* ui, const std::string& name, int nfields,
                            const char* filter) {
  if (stat_tap_table* t = stat_tap_find_table(ui, name.c_str())) return t;
  // The table keeps the title's pointer, not a copy: titles live as long as the plugin.
  static std::set<std::string> titles;
  const char* title = titles.insert(name).first->c_str();
  stat_tap_table* t = stat_tap_init_table(title, nfields, 0, filter);
  stat_tap_add_table(ui, t);
  row_index[t].clear();
  return t;
}

// The row of `key`, made with `labels` in its first columns when new.
guint row_for(stat_tap_table* t, const std::string& key, std::initializer_list<std::string> labels,
              const stat_tap_table_item* fields, int nfields) {
  auto& rows = row_index[t];
  if (auto it = rows.find(key); it != rows.end()) return it->second;
  std::vector<stat_tap_table_item_type> items(static_cast<std::size_t>(nfields));
  std::size_t i = 0;
  for (auto& item : items) {
    item.type = fields[i].type;
    if (item.type == TABLE_ITEM_STRING) item.value.string_value = "";
    ++i;
  }
  i = 0;
  for (const auto& l : labels)
    items[i++].value.string_value = g_strdup(l.c_str());
  const guint row = t->num_elements;
  stat_tap_init_table_row(t, row, static_cast<guint>(nfields), items.data());
  rows.emplace(key, row);
  return row;
}

void set_uint(stat_tap_table* t, guint row, guint col, std::uint64_t v) {
  stat_tap_table_item_type* item = stat_tap_get_field_data(t, row, col);
  item->value.uint_value = clamp32(v);
  stat_tap_set_field_data(t, row, col, item);
}

std::string stream_title(const StreamModel& s) {
  return "Stream " + std::to_string(s.id) + ": " + s.client.to_string() + " \u2194 " +
         s.server.to_string();
}

bool shown(const StreamModel& s) {
  return s.state != StreamState::unknown && s.state != StreamState::not_iwarp;
}

// What a statistic has taken from the model so far. A tapped frame costs what it changed: the
// streams its PDUs belong to and the findings added since the last frame (Model::findings
// only grows during an analysis), not a walk of the whole model per frame.
struct Seen {
  std::uint64_t segments = UINT64_MAX;
  bool finished = false;
  bool full = true;          // next update writes every row (new statistic, or a reset)
  std::size_t findings = 0;  // Model::findings[0, findings) are tallied below
  std::map<std::string, std::uint64_t> first;  // code -> first frame, every stream
  std::map<std::pair<std::uint32_t, FindingId>, std::pair<std::uint64_t, std::uint64_t>>
      by_stream;  // (stream, finding) -> (count, first frame)
};
std::map<const stat_tap_table_ui*, Seen> seen;

// The streams a frame's PDUs belong to; every stream when `rec` is null.
std::vector<std::uint32_t> streams_of(const Model& m, const CaptureState& st,
                                      const FrameRecord* rec) {
  std::vector<std::uint32_t> ids;
  if (rec == nullptr) {
    for (const StreamModel& s : m.streams)
      ids.push_back(s.id);
    return ids;
  }
  for (const std::uint32_t i : rec->pdus_complete)
    ids.push_back(st.pdu(i).stream);
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  return ids;
}

void update_opcodes(stat_tap_table_ui* ui, const CaptureState& st, const FrameRecord* rec) {
  const Model& m = st.model();
  for (const std::uint32_t id : streams_of(m, st, rec)) {
    if (id >= m.streams.size() || !shown(m.streams[id])) continue;
    const StreamModel& s = m.streams[id];
    stat_tap_table* t = table_named(ui, stream_title(s), G_N_ELEMENTS(opcode_fields), nullptr);
    for (const DirectionModel& d : s.dirs) {
      const std::string dir = d.from.to_string() + " \u2192 " + d.to.to_string();
      for (std::size_t op = 0; op < d.opcodes.size(); ++op) {
        const OpcodeCounters& c = d.opcodes[op];
        if (c.segments == 0 && c.messages == 0) continue;
        const wire::OpcodeInfo& info = wire::opcode_info(static_cast<std::uint8_t>(op));
        const guint row = row_for(t, dir + "/" + std::to_string(op),
                                  {dir, std::string(info.defined ? info.name : "reserved")},
                                  opcode_fields, G_N_ELEMENTS(opcode_fields));
        set_uint(t, row, op_segments, c.segments);
        set_uint(t, row, op_messages, c.messages);
        set_uint(t, row, op_octets, c.bytes);
      }
    }
  }
}

void update_findings(stat_tap_table_ui* ui, const CaptureState& st, const FrameRecord* rec) {
  const Model& m = st.model();
  Seen& sn = seen[ui];
  if (m.findings.size() < sn.findings) {  // another analysis: tally again
    sn.findings = 0;
    sn.first.clear();
    sn.by_stream.clear();
  }
  std::set<std::pair<std::uint32_t, FindingId>> touched;
  for (std::size_t i = sn.findings; i < m.findings.size(); ++i) {
    const Finding& f = m.findings[i];
    const std::string code(f.code());
    if (!sn.first.count(code) || f.frame < sn.first[code]) sn.first[code] = f.frame;
    if (f.stream == UINT32_MAX) continue;
    auto& [count, frame] = sn.by_stream[{f.stream, f.id}];
    if (count++ == 0 || f.frame < frame) frame = f.frame;
    touched.insert({f.stream, f.id});
  }
  sn.findings = m.findings.size();
  // Every stream together: every finding reported, kept or past max_findings.
  stat_tap_table* all = table_named(ui, "All streams", G_N_ELEMENTS(finding_fields), nullptr);
  for (const FindingSpec& spec : finding_catalog()) {
    const std::uint64_t n = m.finding_counts[static_cast<std::size_t>(spec.id)];
    if (n == 0) continue;
    const std::string code(spec.code);
    const guint row = row_for(all, code, {code, std::string(to_string(spec.severity))},
                              finding_fields, G_N_ELEMENTS(finding_fields));
    set_uint(all, row, fi_count, n);
    if (sn.first.count(code)) set_uint(all, row, fi_first_frame, sn.first[code]);
  }
  for (const auto& [key, value] : sn.by_stream) {
    if (rec != nullptr && !touched.count(key)) continue;
    const auto& [stream, id] = key;
    if (stream >= m.streams.size()) continue;
    stat_tap_table* t =
        table_named(ui, stream_title(m.streams[stream]), G_N_ELEMENTS(finding_fields), nullptr);
    const FindingSpec& spec = finding_spec(id);
    const std::string code(spec.code);
    const guint row = row_for(t, code, {code, std::string(to_string(spec.severity))},
                              finding_fields, G_N_ELEMENTS(finding_fields));
    set_uint(t, row, fi_count, value.first);
    set_uint(t, row, fi_first_frame, value.second);
  }
}

using UpdateFn = void (*)(stat_tap_table_ui*, const CaptureState&, const FrameRecord*);

// Brings the tables up to date: every row when asked for (a new statistic, a reset, or the
// analysis having finished since the last update, as when a Wireshark dialog taps an analysed
// capture), else the rows `rec` (the tapped frame) changed.
template <UpdateFn Update>
void bring_up_to_date(stat_tap_table_ui* ui, const CaptureState& st, const FrameRecord* rec) {
  Seen& sn = seen[ui];
  const bool everything = sn.full || (st.finished() && !sn.finished);
  Update(ui, st, everything ? nullptr : rec);
  sn.full = false;
  sn.segments = st.segments_fed();
  sn.finished = st.finished();
}

template <UpdateFn Update>
tap_packet_status table_packet(void* tapdata, packet_info*, epan_dissect_t*, const void* data,
                               tap_flags_t) {
  auto* stat = static_cast<stat_data_t*>(tapdata);
  const CaptureState* st = current_stats_state();
  if (st == nullptr) return TAP_PACKET_DONT_REDRAW;
  const Seen& sn = seen[stat->stat_tap_data];
  if (!sn.full && sn.segments == st->segments_fed() && sn.finished == st->finished())
    return TAP_PACKET_DONT_REDRAW;  // nothing new in the model
  bring_up_to_date<Update>(stat->stat_tap_data, *st, static_cast<const FrameRecord*>(data));
  return TAP_PACKET_REDRAW;
}

// Tables of the streams the model already holds (Wireshark: all of them) exist from the start.
template <UpdateFn Update>
void table_init(stat_tap_table_ui* ui) {
  seen.erase(ui);
  if (const CaptureState* st = current_stats_state()) bring_up_to_date<Update>(ui, *st, nullptr);
}

// A retap begins: counts are zero again, so the next update writes every row.
void table_reset(stat_tap_table* t) {
  for (guint row = 0; row < t->num_elements; ++row)
    for (guint col = 0; col < t->num_fields; ++col) {
      stat_tap_table_item_type* item = stat_tap_get_field_data(t, row, col);
      if (item->type == TABLE_ITEM_UINT) item->value.uint_value = 0;
    }
  for (auto& [ui, sn] : seen)
    sn.full = true;
}

void table_free_item(stat_tap_table*, guint, guint, stat_tap_table_item_type* item) {
  if (item->type == TABLE_ITEM_STRING && item->value.string_value &&
      item->value.string_value[0] != '\0')
    g_free(const_cast<char*>(item->value.string_value));
  item->value.string_value = nullptr;
}

stat_tap_table_ui opcode_ui = {REGISTER_PACKET_STAT_GROUP_UNSORTED,
                               "iWARP (ddpscope) Opcodes per Stream",
                               "ddpscope",
                               "ddpscope,opcodes",
                               table_init<update_opcodes>,
                               table_packet<update_opcodes>,
                               table_reset,
                               table_free_item,
                               nullptr,
                               G_N_ELEMENTS(opcode_fields),
                               opcode_fields,
                               0,
                               nullptr,
                               nullptr,
                               0};

stat_tap_table_ui finding_ui = {REGISTER_PACKET_STAT_GROUP_UNSORTED,
                                "iWARP (ddpscope) Findings",
                                "ddpscope",
                                "ddpscope,findings",
                                table_init<update_findings>,
                                table_packet<update_findings>,
                                table_reset,
                                table_free_item,
                                nullptr,
                                G_N_ELEMENTS(finding_fields),
                                finding_fields,
                                0,
                                nullptr,
                                nullptr,
                                0};

}  // namespace

void register_stats_tables() {
  register_stat_tap_table_ui(&opcode_ui);
  register_stat_tap_table_ui(&finding_ui);
}

}  // namespace ddpscope::plugin
