// SPDX-License-Identifier: GPL-2.0-or-later
// Registration and the dissection glue of the ddpscope Wireshark plugin.
//
// How frames flow:
//  * A postdissector sees every frame after TCP. On Wireshark's first (sequential) pass it
//    decodes the TCP header the IP dissector handed TCP (noted by a wrapper, LayerSeen) with
//    core and feeds core's Analyzer in frame order; on every visit it draws what the first pass
//    stored for the frame (draw.cpp). It wants no fields, so tshark builds no tree for it.
//  * A small "claim" dissector takes the TCP payload of iWARP connections so that no other
//    dissector (data, NVMe/TCP on 4420, ...) decodes it. It is reached through our TCP
//    heuristic (the MPA Request key), through Decode As on a TCP port, and as the conversation
//    dissector the postdissector puts on every TCP conversation (conversation dissectors run
//    before port-based ones, which is how an MPA handshake on port 4420 wins). It returns 0
//    for anything that is not iWARP, so TCP then tries ports and heuristics as usual.
//  * Wireshark's own iwarp_mpa_tcp heuristic is turned off while ours is active (preference
//    "use_builtin" brings it back).
#include <epan/conversation.h>
#include <epan/packet.h>
#include <epan/prefs.h>
#include <epan/proto.h>
#include <epan/proto_data.h>
#include <epan/tap.h>
#include <ws_version.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <new>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "capture_state.h"
#include "ddpscope/analysis/regions_file.h"
#include "ddpscope/common/limits.h"
#include "ddpscope/wire/sctp.h"
#include "draw.h"
#include "fields.h"
#include "menu.h"
#include "stats.h"

using namespace ddpscope;
using namespace ddpscope::plugin;

namespace {

// Preferences.
gboolean pref_check_crc = TRUE;
gboolean pref_use_builtin = FALSE;
// Decode As streams' CRC: StreamHint::crc. An enum whose names are the old boolean
// preference's values, so saved preferences and `-o iwarp.mpa.midstream_crc:FALSE` still work.
enum HintCrc : gint { hint_crc_false = 0, hint_crc_true = 1, hint_crc_auto = 2 };
gint pref_hint_crc = hint_crc_auto;
const enum_val_t hint_crc_values[] = {
    {"auto", "Find it (CRC on if a CRC matches, else off when FPDUs chain)", hint_crc_auto},
    {"true", "CRC in use", hint_crc_true},
    {"false", "No CRC", hint_crc_false},
    {nullptr, nullptr, 0}};
gboolean pref_hint_markers = FALSE;
// The Data Sink whose answers the findings show (findings/sink_profile.h): RFC's or Linux siw's.
gint pref_sink_profile = static_cast<gint>(SinkProfile::rfc);
const enum_val_t sink_profile_values[] = {
    {"rfc", "RFC 5040/5041/5044/6581/7306", static_cast<gint>(SinkProfile::rfc)},
    {"siw", "Linux siw 6.1 as observed", static_cast<gint>(SinkProfile::siw)},
    {nullptr, nullptr, 0}};
const char* pref_regions_file = "";

// The engine's caps (limits.h), one uint preference each, named after the Limits field
// (tshark -o iwarp.mpa.max_regions:1000). Sized once at registration: Wireshark keeps
// pointers to the values and to the title and description strings.
struct LimitPref {
  guint value = 0;
  std::string title;
  std::string description;
};
std::vector<LimitPref> pref_limits;

void register_limit_preferences(module_t* prefs) {
  const Limits defaults;
  pref_limits.resize(limit_fields().size());
  std::size_t i = 0;
  for (const auto& f : limit_fields()) {
    LimitPref& p = pref_limits[i++];
    p.value = static_cast<guint>(std::min<std::size_t>(defaults.*(f.member), G_MAXUINT));
    p.title = "Cap: " + std::string(f.name);
    p.description = std::string(f.meaning) + (f.octets ? ", in octets" : "") +
                    ". Hitting it raises engine.limit-reached; the analysis goes on degraded.";
    // Field names are string literals: NUL-terminated.
    prefs_register_uint_preference(prefs, f.name.data(), p.title.c_str(), p.description.c_str(), 10,
                                   &p.value);
  }
}

void apply_limit_preferences(Limits& limits) {
  std::size_t i = 0;
  for (const auto& f : limit_fields()) {
    if (i >= pref_limits.size()) break;
    limits.*(f.member) = pref_limits[i++].value;
  }
}

dissector_handle_t claim_handle = nullptr;
dissector_handle_t post_handle = nullptr;
dissector_handle_t data_handle = nullptr;
heur_dissector_list_t upper_heuristics = nullptr;
heur_dtbl_entry_t* our_heuristic = nullptr;
dissector_table_t tcp_port_table = nullptr;
int tap_id = -1;

// TCP's and SCTP's own handles, which the IP dissector (ip.proto 6 and 132) and UDP (port 9899,
// RFC 6951) reach through our wrappers (see LayerSeen).
dissector_handle_t tcp_handle = nullptr;
dissector_handle_t sctp_handle = nullptr;
dissector_handle_t sctp_udp_handle = nullptr;
// SCTP's handle for SCTP in UDP on other ports (our heuristic, and Decode As).
dissector_handle_t sctp_any_udp_handle = nullptr;

// Per-capture state (created by the init routine, destroyed by the cleanup routine).
CaptureState* state = nullptr;
bool active = false;  // our dissection is on for this capture
std::uint8_t hinted_ports[65536 / 8];

bool is_hinted(std::uint32_t port) {
  return port < 65536 && (hinted_ports[port >> 3] & (1u << (port & 7))) != 0;
}

// The regions file preference, in core's format (regions_file.h). A file that does not parse
// gives no regions file (and the analysis does not take unknown STags as invalid).
std::optional<RegionsFile> load_regions(const char* path) noexcept {
  if (path == nullptr || *path == '\0') return std::nullopt;
  try {
    RegionsFile out;
    std::string error;
    if (!load_regions_file(path, out, error)) return std::nullopt;
    return out;
  } catch (...) {
    return std::nullopt;
  }
}

std::optional<net::Address> to_address(const address& a) {
  net::Address out;
  if (a.type == AT_IPv4 && a.len == 4) {
    std::memcpy(out.bytes.data(), a.data, 4);
    return out;
  }
  if (a.type == AT_IPv6 && a.len == 16) {
    out.v6 = true;
    std::memcpy(out.bytes.data(), a.data, 16);
    return out;
  }
  return std::nullopt;
}

bool heuristic_enabled() {
  return our_heuristic == nullptr || our_heuristic->enabled;
}

bool looks_like_mpa_request(tvbuff_t* tvb) {
  if (tvb_captured_length(tvb) < wire::kMpaKeySize) return false;
  const guint8* p = tvb_get_ptr(tvb, 0, static_cast<gint>(wire::kMpaKeySize));
  return wire::decode_mpa_reqrep(ByteView(p, wire::kMpaKeySize)).status() !=
         DecodeStatus::malformed;
}

// Decides whether this TCP payload is ours. First pass: from core's view of the connection
// (or the MPA key, or a Decode As port); later passes: what the first pass decided.
bool claim(tvbuff_t* tvb, packet_info* pinfo, bool from_heuristic) {
  if (!active || state == nullptr) return false;
  if (PINFO_FD_VISITED(pinfo)) {
    const FrameRecord* rec = state->frame(pinfo->num);
    // Also frames the first pass learnt later hold octets of a PDU (its start, before the
    // handshake was known, or continuation octets): no other dissector should show them.
    return rec != nullptr &&
           (rec->claimed || !rec->pdus_complete.empty() || !rec->pdus_continued().empty());
  }
  bool ours = is_hinted(pinfo->srcport) || is_hinted(pinfo->destport);
  if (!ours && (from_heuristic || heuristic_enabled())) {
    const auto src = to_address(pinfo->src);
    const auto dst = to_address(pinfo->dst);
    if (src && dst) {
      ours = state->is_iwarp(net::Endpoint{*src, static_cast<std::uint16_t>(pinfo->srcport)},
                             net::Endpoint{*dst, static_cast<std::uint16_t>(pinfo->destport)});
    }
    if (!ours) ours = looks_like_mpa_request(tvb);
  }
  if (ours) state->frame_mut(pinfo->num).claimed = true;
  return ours;
}

int dissect_claim(tvbuff_t* tvb, packet_info* pinfo, proto_tree* /*tree*/, void* /*data*/) {
  if (!claim(tvb, pinfo, false)) return 0;
  col_set_str(pinfo->cinfo, COL_PROTOCOL, "iWARP");
  return static_cast<int>(tvb_captured_length(tvb));
}

gboolean dissect_heur(tvbuff_t* tvb, packet_info* pinfo, proto_tree* tree, void* data) {
  if (!active || state == nullptr || PINFO_FD_VISITED(pinfo)) {
    return dissect_claim(tvb, pinfo, tree, data) > 0;
  }
  if (!looks_like_mpa_request(tvb) || !claim(tvb, pinfo, true)) return FALSE;
  conversation_t* conv = find_or_create_conversation(pinfo);
  conversation_set_dissector(conv, claim_handle);
  col_set_str(pinfo->cinfo, COL_PROTOCOL, "iWARP");
  return TRUE;
}

// DDP over SCTP (RFC 5043): Wireshark's SCTP dissector reassembles each user message and hands
// it on by PPID. PPID 16 is claimed (drawn by the postdissector from core's analysis); PPID 17
// is decoded by core's codec on the first pass (capture_state). The n-th message of a PPID in
// the frame names the record on later visits (a counter per dissection, in the packet's scope).
std::size_t next_message_index(packet_info* pinfo, std::uint32_t ppid) {
  auto* n = static_cast<std::size_t*>(p_get_proto_data(pinfo->pool, pinfo, proto.ddp, ppid));
  if (n == nullptr) {
    n = wmem_new0(pinfo->pool, std::size_t);
    p_add_proto_data(pinfo->pool, pinfo, proto.ddp, ppid, n);
  }
  return (*n)++;
}

ByteView tvb_bytes(tvbuff_t* tvb) {
  const guint n = tvb_captured_length(tvb);
  return n == 0 ? ByteView() : ByteView(tvb_get_ptr(tvb, 0, static_cast<gint>(n)), n);
}

int dissect_sctp_ddp(tvbuff_t* tvb, packet_info* pinfo, proto_tree* /*tree*/, void* /*data*/) {
  // Ours, drawn by the postdissector from the Analyzer's SCTP LLP (as TCP payload is claimed).
  if (!active || state == nullptr) return 0;
  col_set_str(pinfo->cinfo, COL_PROTOCOL, "iWARP");
  return static_cast<int>(tvb_captured_length(tvb));
}

int dissect_sctp_session(tvbuff_t* tvb, packet_info* pinfo, proto_tree* tree, void* /*data*/) {
  if (!active || state == nullptr) return 0;
  const std::size_t nth = next_message_index(pinfo, wire::kPpidDdpSessionControl);
  const SessionControlRecord* r = state->sctp_session(pinfo->num, nth, tvb_bytes(tvb));
  if (r == nullptr) return 0;
  draw_sctp_session(*r, tvb, pinfo, tree);
  return static_cast<int>(tvb_captured_length(tvb));
}

// Where this frame's innermost TCP header (or SCTP packet) lies, noted by thin wrappers that the
// IP dissector (ip.proto 6 and 132) and UDP (port 9899) call in place of TCP's and SCTP's own
// handles, before those run: the postdissector learns the segment without asking for a single
// field. (A postdissector that wants fields makes tshark build a protocol tree for every frame,
// which cost more than all of our analysis on a capture of small messages.) Kept per packet.
struct LayerSeen {
  tvbuff_t* tvb = nullptr;  // from the TCP header (or SCTP's common header) on
  net::Address src, dst;    // the IP header's addresses (pinfo->net_src/dst then)
  bool addresses = false;   // both IPv4 or IPv6
  bool over_udp = false;    // SCTP in UDP (RFC 6951)
  std::uint16_t udp_src_port = 0, udp_dst_port = 0;
};
static_assert(std::is_trivially_destructible_v<LayerSeen>);
enum : guint32 { seen_tcp = 1, seen_sctp = 2 };

void note_layer(guint32 key, tvbuff_t* tvb, packet_info* pinfo, bool over_udp) {
  if (!active || state == nullptr) return;
  auto* seen = static_cast<LayerSeen*>(p_get_proto_data(pinfo->pool, pinfo, proto.mpa, key));
  if (seen == nullptr) {
    // Packet scope: freed with the dissection, never destroyed (nothing to destroy).
    seen = new (wmem_alloc(pinfo->pool, sizeof(LayerSeen))) LayerSeen{};
    p_add_proto_data(pinfo->pool, pinfo, proto.mpa, key, seen);
  }
  // The innermost layer wins (a tunnel's inner TCP header is dissected after the outer one).
  seen->tvb = tvb;
  const auto src = to_address(pinfo->net_src);
  const auto dst = to_address(pinfo->net_dst);
  seen->addresses = src && dst && src->v6 == dst->v6;
  if (seen->addresses) {
    seen->src = *src;
    seen->dst = *dst;
  }
  seen->over_udp = over_udp;
  seen->udp_src_port = over_udp ? static_cast<std::uint16_t>(pinfo->srcport) : 0;
  seen->udp_dst_port = over_udp ? static_cast<std::uint16_t>(pinfo->destport) : 0;
}

// The wrappers are handles of TCP's and SCTP's own protocols (so that disabling either acts as
// before), which Wireshark enters into the frame's layers as it calls them: that entry is taken
// back before the real handle enters its own. (Decode As on ip.proto lists them beside the real
// handles; choosing the real one there bypasses the wrapper.)
void forget_wrapper_layer(packet_info* pinfo) {
  if (wmem_list_frame_t* tail = wmem_list_tail(pinfo->layers)) {
    wmem_list_remove_frame(pinfo->layers, tail);
    pinfo->curr_layer_num--;
  }
}

// Notes the layer, then calls the real handle (*Real) as the table would have.
template <guint32 Key, bool OverUdp, dissector_handle_t* Real>
int wrapper(tvbuff_t* tvb, packet_info* pinfo, proto_tree* tree, void* data) {
  note_layer(Key, tvb, pinfo, OverUdp);
  forget_wrapper_layer(pinfo);
  return call_dissector_only(*Real, tvb, pinfo, tree, data);
}

// SCTP in UDP on a port other than 9899 (RFC 6951 §5.1 lets it be configured): a datagram whose
// SCTP checksum is right, as core's frame decode recognises it (net/packet.cpp), is handed to
// SCTP as port 9899's are. The checksum must be filled in: one left to an offloading NIC (0)
// says nothing.
gboolean heur_sctp_udp(tvbuff_t* tvb, packet_info* pinfo, proto_tree* tree, void* data) {
  constexpr guint kCommonAndChunkHeader = 16;
  const guint len = tvb_captured_length(tvb);
  if (sctp_any_udp_handle == nullptr || len < kCommonAndChunkHeader ||
      len != tvb_reported_length(tvb) || tvb_get_ntohl(tvb, 8) == 0)
    return FALSE;
  if (!wire::sctp_checksum_ok(ByteView(tvb_get_ptr(tvb, 0, static_cast<gint>(len)), len)))
    return FALSE;
  note_layer(seen_sctp, tvb, pinfo, true);
  forget_wrapper_layer(pinfo);  // the heuristic's entry: SCTP enters its own
  call_dissector_only(sctp_any_udp_handle, tvb, pinfo, tree, data);
  return TRUE;
}

// Puts `wrapper` in `table` at `key` in place of the handle there (of protocol `protocol`),
// which it calls: nullptr when that is not what is registered there.
dissector_handle_t wrap_entry(const char* table, guint32 key, const char* protocol,
                              dissector_t wrapper, const char* name, const char* description) {
  dissector_table_t t = find_dissector_table(table);
  const int proto_id = proto_get_id_by_filter_name(protocol);
  if (t == nullptr || proto_id < 0) return nullptr;
  dissector_handle_t original = dissector_get_uint_handle(t, key);
  if (original == nullptr || dissector_handle_get_protocol_index(original) != proto_id)
    return nullptr;
  dissector_add_uint(
      table, key,
      create_dissector_handle_with_name_and_description(wrapper, proto_id, name, description));
  return original;
}

std::int64_t frame_time_ns(const packet_info* pinfo) {
  return static_cast<std::int64_t>(pinfo->abs_ts.secs) * 1000000000 + pinfo->abs_ts.nsecs;
}

bool quoted_in_icmp(packet_info* pinfo) {
  return proto_is_frame_protocol(pinfo->layers, "icmp") ||
         proto_is_frame_protocol(pinfo->layers, "icmpv6");
}

// Builds the TCP segment of this frame: core's TCP decoder on the innermost TCP header's octets,
// with the segment length the IP header gives (the tvb's reported length). Returns false when
// the frame has no TCP (or only a TCP header quoted inside an ICMP error), or when core does not
// decode the header (TCP marks such frames itself). `*in_frame`: the payload lies in the frame's
// own octets (`frame_tvb`), at `*payload_offset`.
bool read_tcp(packet_info* pinfo, tvbuff_t* frame_tvb, net::TcpSegment& seg, tvbuff_t** payload_tvb,
              bool* in_frame, std::uint32_t* payload_offset) {
  *payload_tvb = nullptr;
  *in_frame = false;
  *payload_offset = 0;
  const auto* seen =
      static_cast<const LayerSeen*>(p_get_proto_data(pinfo->pool, pinfo, proto.mpa, seen_tcp));
  if (seen == nullptr || !seen->addresses || quoted_in_icmp(pinfo)) return false;
  const gint have = static_cast<gint>(tvb_captured_length(seen->tvb));
  if (have <= 0) return false;
  const ByteView octets(tvb_get_ptr(seen->tvb, 0, have), static_cast<std::size_t>(have));
  {
    // Destroyed before any Wireshark call (which may longjmp past it).
    const net::FrameDecode d =
        net::decode_tcp_segment(octets, tvb_reported_length(seen->tvb), seen->src, seen->dst);
    if (d.status != net::FrameStatus::tcp) return false;
    seg = d.tcp;
  }
  const std::size_t n = seg.payload.size();
  if (n == 0) return true;
  const auto header_length = static_cast<gint>(seg.payload.data() - octets.data());
  *payload_tvb = tvb_new_subset_length(seen->tvb, header_length, static_cast<gint>(n));
  seg.payload = ByteView(tvb_get_ptr(*payload_tvb, 0, static_cast<gint>(n)), n);
  // In the frame's own octets (not IP-reassembled, not decrypted): drawn from there on visits
  // that need no copy of it.
  const gint frame_have = static_cast<gint>(tvb_captured_length(frame_tvb));
  if (frame_have > 0) {
    const auto base = reinterpret_cast<std::uintptr_t>(tvb_get_ptr(frame_tvb, 0, frame_have));
    const auto at = reinterpret_cast<std::uintptr_t>(seg.payload.data());
    if (at >= base && at - base <= static_cast<std::uintptr_t>(frame_have) &&
        n <= static_cast<std::uintptr_t>(frame_have) - (at - base)) {
      *in_frame = true;
      *payload_offset = static_cast<std::uint32_t>(at - base);
    }
  }
  return true;
}

// The connection probe_conversation saw last (first pass): its next segments, up to a SYN
// (which may start a new conversation on the same ports), need no conversation lookup.
struct LastProbe {
  bool valid = false;
  net::Endpoint src, dst;
};
LastProbe last_probe;

// Puts the claim dissector on the TCP conversation, unless it already has a dissector.
void probe_conversation(packet_info* pinfo, const net::TcpSegment& seg) {
  if (last_probe.valid && (seg.flags & net::tcp_flag::syn) == 0 &&
      ((last_probe.src == seg.src && last_probe.dst == seg.dst) ||
       (last_probe.src == seg.dst && last_probe.dst == seg.src))) {
    return;
  }
  conversation_t* conv = find_conversation(pinfo->num, &pinfo->net_src, &pinfo->net_dst,
                                           CONVERSATION_TCP, seg.src.port, seg.dst.port, 0);
  last_probe = {};
  if (conv == nullptr) return;
  if (conversation_get_dissector(conv, pinfo->num) == nullptr) {
    conversation_set_dissector(conv, claim_handle);
  }
  last_probe = {true, seg.src, seg.dst};
}

// An SCTP packet goes to the Analyzer whole, native or over UDP (RFC 6951): core's SCTP LLP
// reassembles the user messages and runs the DDP/RDMAP rules.
void feed_sctp_packet(packet_info* pinfo) {
  const auto* seen =
      static_cast<const LayerSeen*>(p_get_proto_data(pinfo->pool, pinfo, proto.mpa, seen_sctp));
  if (seen == nullptr || !seen->addresses || quoted_in_icmp(pinfo)) return;
  const gint have = static_cast<gint>(tvb_captured_length(seen->tvb));
  if (have <= 0) return;
  net::SctpDatagram d;
  d.src = seen->src;
  d.dst = seen->dst;
  d.packet = ByteView(tvb_get_ptr(seen->tvb, 0, have), static_cast<std::size_t>(have));
  d.packet_length =
      std::max<std::uint32_t>(tvb_reported_length(seen->tvb), static_cast<std::uint32_t>(have));
  d.over_udp = seen->over_udp;
  d.udp_src_port = seen->udp_src_port;
  d.udp_dst_port = seen->udp_dst_port;
  state->feed_sctp(pinfo->num, frame_time_ns(pinfo), d);
}

int dissect_post(tvbuff_t* tvb, packet_info* pinfo, proto_tree* tree, void* /*data*/) {
  if (pref_use_builtin || !active || state == nullptr) return 0;
  net::TcpSegment seg;  // trivially destructible: safe across Wireshark's longjmps
  tvbuff_t* payload_tvb = nullptr;
  bool in_frame = false;
  std::uint32_t payload_offset = 0;
  const bool tcp = read_tcp(pinfo, tvb, seg, &payload_tvb, &in_frame, &payload_offset);
  if (!PINFO_FD_VISITED(pinfo) && tcp) {
    if (heuristic_enabled() || is_hinted(seg.src.port) || is_hinted(seg.dst.port)) {
      probe_conversation(pinfo, seg);
      // PDUs in the frame's own octets are drawn from there on any visit: not copied.
      state->feed(pinfo->num, frame_time_ns(pinfo), seg, in_frame);
      if (in_frame && state->frame(pinfo->num) != nullptr) {
        FrameRecord& r = state->frame_mut(pinfo->num);
        r.payload_offset = payload_offset;
        r.payload_length = static_cast<std::uint32_t>(seg.payload.size());
      }
    }
  }
  if (!tcp && !PINFO_FD_VISITED(pinfo)) feed_sctp_packet(pinfo);
  const FrameRecord* rec = state->frame(pinfo->num);
  if (rec == nullptr) return 0;
  DrawContext ctx;
  ctx.state = state;
  ctx.frame_tvb = tvb;
  ctx.payload_tvb = payload_tvb;
  ctx.upper_heuristics = upper_heuristics;
  ctx.data_handle = data_handle;
  ctx.first_visit = !PINFO_FD_VISITED(pinfo);
  draw_frame(ctx, *rec, pinfo, tree);
  if (tap_id >= 0 && !rec->pdus_complete.empty()) {
    tap_queue_packet(tap_id, pinfo, rec);
  }
  queue_srt(pinfo, state, rec);
  return 0;
}

void apply_builtin_choice() {
  const bool ours = proto_is_protocol_enabled(find_protocol_by_id(proto.mpa)) && !pref_use_builtin;
  if (heur_dtbl_entry_t* builtin = find_heur_dissector_by_unique_short_name("iwarp_mpa_tcp")) {
    builtin->enabled = ours ? FALSE : TRUE;
  }
  active = ours;
}

void init_capture() {
  apply_builtin_choice();
  delete state;
  state = nullptr;
  std::memset(hinted_ports, 0, sizeof hinted_ports);
  last_probe = {};
  PluginOptions options;
  options.analyzer.check_crc = pref_check_crc != FALSE;
  options.analyzer.sink_profile = pref_sink_profile == static_cast<gint>(SinkProfile::siw)
                                      ? SinkProfile::siw
                                      : SinkProfile::rfc;
  // Operation response times (iwarp.rdmap.read.rtt, ..., -z ddpscope,srt) come from core's
  // timing model: one place pairs and times operations for every host.
  options.analyzer.timing = TimingOptions{};
  apply_limit_preferences(options.analyzer.limits);
  if (tcp_port_table != nullptr) {
    for (std::uint32_t port = 1; port < 65536; ++port) {
      if (dissector_get_uint_handle(tcp_port_table, port) == claim_handle) {
        hinted_ports[port >> 3] =
            static_cast<std::uint8_t>(hinted_ports[port >> 3] | (1u << (port & 7)));
        StreamHint hint;
        hint.port = static_cast<std::uint16_t>(port);
        if (pref_hint_crc != hint_crc_auto) hint.crc = pref_hint_crc == hint_crc_true;
        hint.markers = pref_hint_markers != FALSE;
        options.analyzer.hints.push_back(hint);
      }
    }
  }
  if (auto file = load_regions(pref_regions_file)) {
    options.regions = std::move(file->regions);
    options.analyzer.protection_domains = std::move(file->protection_domains);
  }
  try {
    state = new CaptureState(std::move(options));
  } catch (...) {
    state = nullptr;
  }
  set_stats_state(state);
}

void cleanup_capture() {
  set_stats_state(nullptr);
  delete state;
  state = nullptr;
}

// End of the sequential pass: end-of-capture findings become known (and are drawn on the
// second pass of tshark -2 and on any later visit in Wireshark).
void finish_capture() {
  if (state != nullptr) state->finish();
}

void register_protocols() {
  proto.mpa = proto_register_protocol("iWARP Marker PDU Aligned Framing (ddpscope)", "iWARP-MPA",
                                      "iwarp.mpa");
  proto.ddp =
      proto_register_protocol("iWARP Direct Data Placement (ddpscope)", "iWARP-DDP", "iwarp.ddp");
  proto.rdmap = proto_register_protocol("iWARP Remote Direct Memory Access Protocol (ddpscope)",
                                        "iWARP-RDMAP", "iwarp.rdmap");
  proto.sctp_session =
      proto_register_protocol("iWARP DDP over SCTP (ddpscope)", "iWARP-SCTP", "iwarp.sctp");
  register_fields();

  module_t* prefs = prefs_register_protocol(proto.mpa, nullptr);
  prefs_register_bool_preference(prefs, "check_crc", "Verify MPA CRCs",
                                 "Check the CRC of every FPDU when CRC was negotiated",
                                 &pref_check_crc);
  prefs_register_filename_preference(
      prefs, "regions_file", "Regions file (JSON)",
      "Memory regions the analysis should know: {\"regions\": [{\"stag\": \"0x1234\", "
      "\"base\": 0, \"length\": 4096, \"sink\": \"10.0.0.2\"}]}",
      &pref_regions_file, FALSE);
  prefs_register_enum_preference(prefs, "midstream_crc", "Decode As: CRC in use",
                                 "For streams decoded with Decode As (no MPA handshake in the "
                                 "capture): whether CRC was negotiated; auto finds it and says "
                                 "which (iwarp.mpa.crc-detected)",
                                 &pref_hint_crc, hint_crc_values, FALSE);
  prefs_register_bool_preference(prefs, "midstream_markers", "Decode As: markers in use",
                                 "For streams decoded with Decode As: assume both directions "
                                 "carry markers",
                                 &pref_hint_markers);
  prefs_register_enum_preference(
      prefs, "sink_profile", "Data Sink profile",
      "Whose Data Sink the findings' verdicts are for: rfc (a Terminate as the RFCs say) or siw "
      "(Linux siw 6.1: its Terminate, or a close, a wait, or going on). The findings are the "
      "same; iwarp.mpa.finding.verdict shows the profile's answer and .rfc_verdict RFC's where "
      "they differ",
      &pref_sink_profile, sink_profile_values, FALSE);
  prefs_register_bool_preference(
      prefs, "use_builtin", "Use Wireshark's built-in iWARP dissectors instead",
      "Turn this plugin's decoding off and re-enable iwarp_mpa_tcp", &pref_use_builtin);
  register_limit_preferences(prefs);

  claim_handle = register_dissector("iwarp.mpa", dissect_claim, proto.mpa);
  post_handle = create_dissector_handle(dissect_post, proto.mpa);
  register_init_routine(init_capture);
  register_cleanup_routine(cleanup_capture);
  register_postseq_cleanup_routine(finish_capture);
  tap_id = register_tap("ddpscope");
  register_stats(tap_id);
  register_stats_tables();
  proto.srt =
      proto_register_protocol_in_name_only("iWARP operation response times (ddpscope)", "ddpscope",
                                           "ddpscope", proto.rdmap, FT_PROTOCOL);
  register_srt(proto.srt);
  register_menu(proto.mpa);
}

void handoff() {
  heur_dissector_add("tcp", dissect_heur, "iWARP MPA over TCP (ddpscope)", "ddpscope_mpa_tcp",
                     proto.mpa, HEURISTIC_ENABLE);
  our_heuristic = find_heur_dissector_by_unique_short_name("ddpscope_mpa_tcp");
  dissector_add_for_decode_as("tcp.port", claim_handle);
  tcp_port_table = find_dissector_table("tcp.port");
  register_postdissector(post_handle);
  // RFC 5043's two PPIDs (Wireshark 4.0 names them and decodes neither).
  dissector_add_uint("sctp.ppi", wire::kPpidDdpSegment,
                     create_dissector_handle(dissect_sctp_ddp, proto.ddp));
  dissector_add_uint("sctp.ppi", wire::kPpidDdpSessionControl,
                     create_dissector_handle(dissect_sctp_session, proto.sctp_session));
  data_handle = find_dissector("data");
  upper_heuristics = find_heur_dissector_list("iwarp_ddp_rdmap");

  // The postdissector wants no fields (so tshark builds no tree for it): it learns each
  // frame's TCP header and SCTP packet from these wrappers (LayerSeen).
  tcp_handle = wrap_entry("ip.proto", 6, "tcp", wrapper<seen_tcp, false, &tcp_handle>,
                          "ddpscope_tcp", "TCP (ddpscope)");
  sctp_handle = wrap_entry("ip.proto", 132, "sctp", wrapper<seen_sctp, false, &sctp_handle>,
                           "ddpscope_sctp", "SCTP (ddpscope)");
  sctp_udp_handle = wrap_entry("udp.port", 9899, "sctp", wrapper<seen_sctp, true, &sctp_udp_handle>,
                               "ddpscope_sctp_udp", "SCTP over UDP (ddpscope)");
  // Other UDP ports: by the checksum, or by Decode As (udp.port == N as "SCTP over UDP,
  // any port (ddpscope)"; SCTP's own entry there bypasses our analysis).
  sctp_any_udp_handle = find_dissector("sctp");
  const int sctp_proto = proto_get_id_by_filter_name("sctp");
  if (sctp_any_udp_handle != nullptr && sctp_proto >= 0) {
    heur_dissector_add("udp", heur_sctp_udp,
                       "SCTP over UDP on any port, by its checksum (ddpscope)",
                       "ddpscope_sctp_udp_any", sctp_proto, HEURISTIC_ENABLE);
    dissector_add_for_decode_as("udp.port",
                                create_dissector_handle_with_name_and_description(
                                    wrapper<seen_sctp, true, &sctp_any_udp_handle>, sctp_proto,
                                    "ddpscope_sctp_udp_any", "SCTP over UDP, any port (ddpscope)"));
  }
  apply_builtin_choice();
}

}  // namespace

extern "C" {
__attribute__((visibility("default"))) extern const char plugin_version[];
__attribute__((visibility("default"))) extern const int plugin_want_major;
__attribute__((visibility("default"))) extern const int plugin_want_minor;
__attribute__((visibility("default"))) void plugin_register(void);

const char plugin_version[] = DDPSCOPE_VERSION;
const int plugin_want_major = WIRESHARK_VERSION_MAJOR;
const int plugin_want_minor = WIRESHARK_VERSION_MINOR;

void plugin_register(void) {
  static proto_plugin plug;
  plug.register_protoinfo = register_protocols;
  plug.register_handoff = handoff;
  proto_register_plugin(&plug);
}
}
