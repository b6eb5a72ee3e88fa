// SPDX-License-Identifier: GPL-2.0-or-later
#include "capture_state.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <exception>

#include "ddpscope/wire/terminate_error.h"

namespace ddpscope::plugin {

namespace {

std::string hex32(std::uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08" PRIx32, v);
  return buf;
}

std::string hex64(std::uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%" PRIx64, v);
  return buf;
}

bool stream_is_iwarp(const StreamModel& s) {
  if (s.mid_stream) return true;
  switch (s.state) {
    case StreamState::handshake:
    case StreamState::full:
    case StreamState::rejected:
    case StreamState::failed:
      return true;
    case StreamState::unknown:
    case StreamState::not_iwarp:
      return false;
  }
  return false;
}

}  // namespace

bool PduRecord::reassembled() const {
  if (slices.size() != 1) return true;
  return slices.front().frame != completed_frame;
}

std::string describe_pdu(const PduRecord& p) {
  switch (p.kind) {
    case PduKind::mpa_request:
    case PduKind::mpa_reply: {
      std::string s = p.kind == PduKind::mpa_request ? "MPA Request" : "MPA Reply";
      if (p.reqrep) {
        s += " rev=" + std::to_string(p.reqrep->revision);
        if (p.reqrep->markers) s += " M";
        if (p.reqrep->crc) s += " C";
        if (p.reqrep->reject) s += " R(reject)";
        if (p.reqrep->enhanced_pd) {
          s += " IRD=" + std::to_string(p.reqrep->enhanced_pd->ird) +
               " ORD=" + std::to_string(p.reqrep->enhanced_pd->ord);
        }
      }
      return s;
    }
    case PduKind::unframed:
      return "Unframed " + std::to_string(p.raw_size) + " octets";
    case PduKind::fpdu:
      break;
  }
  if (!p.ddp) return "FPDU len=" + std::to_string(p.ulpdu_length);
  const wire::DdpHeader& h = *p.ddp;
  const wire::OpcodeInfo& op = wire::opcode_info(wire::RdmapControl::from_byte(h.rsvd_ulp0).opcode);
  std::string s{op.defined ? op.name : std::string_view("Reserved opcode")};
  if (h.control.tagged) {
    s += " STag=" + hex32(h.stag) + " TO=" + hex64(h.to) + " len=" + std::to_string(p.payload_size);
  } else {
    if (h.qn != op.qn.value_or(h.qn)) s += " QN=" + std::to_string(h.qn);
    s += " MSN=" + std::to_string(h.msn);
    if (h.mo != 0) s += " MO=" + std::to_string(h.mo);
    if (p.read_request) {
      s += " sink=" + hex32(p.read_request->sink_stag) +
           " src=" + hex32(p.read_request->source_stag) +
           " len=" + std::to_string(p.read_request->size);
    } else if (p.terminate) {
      s += " " + p.quoted_term_name;
    } else {
      s += " len=" + std::to_string(p.payload_size);
    }
  }
  if (h.control.last) s += " L";
  if (p.not_placed()) s += " [CRC error: not placed]";
  return s;
}

CaptureState::CaptureState(PluginOptions options)
    : options_(std::move(options)), analyzer_(options_.analyzer) {
  analyzer_.set_observer(this);
  if (options_.regions) analyzer_.add_regions(*options_.regions);
}

CaptureState::~CaptureState() = default;

const FrameRecord* CaptureState::frame(std::uint64_t n) const {
  auto it = frames_.find(n);
  return it == frames_.end() ? nullptr : &it->second;
}

void CaptureState::feed(std::uint64_t frame, std::int64_t ts_ns, const net::TcpSegment& segment,
                        bool payload_in_frame) noexcept {
  if (finished_ || frame <= last_frame_) return;
  current_frame_ = frame;
  current_ts_ns_ = ts_ns;
  current_payload_ = payload_in_frame ? segment.payload : ByteView{};
  last_frame_ = frame;
  ++segments_fed_;
  try {
    analyzer_.feed_tcp(frame, ts_ns, segment);
    index_new_streams();
    collect_new_findings();
  } catch (...) {
    ++internal_errors_;
  }
  current_payload_ = {};
}

void CaptureState::feed_ip(std::uint64_t frame, std::int64_t ts_ns, ByteView ip_packet,
                           std::uint32_t wire_length) noexcept {
  if (finished_ || frame <= last_frame_) return;
  current_frame_ = frame;
  current_ts_ns_ = ts_ns;
  current_payload_ = {};
  last_frame_ = frame;
  try {
    analyzer_.feed_frame(frame, ts_ns, static_cast<std::uint32_t>(net::LinkType::raw), ip_packet,
                         wire_length);
    index_new_streams();
    collect_new_findings();
  } catch (...) {
    ++internal_errors_;
  }
}

void CaptureState::finish() noexcept {
  if (finished_) return;
  current_frame_ = last_frame_;
  current_payload_ = {};
  finished_ = true;
  try {
    analyzer_.finish();
    index_new_streams();
    collect_new_findings();
  } catch (...) {
    ++internal_errors_;
  }
}

bool CaptureState::is_iwarp(const net::Endpoint& a, const net::Endpoint& b) const {
  auto it = stream_index_.find({std::min(a, b), std::max(a, b)});
  if (it == stream_index_.end()) return false;
  const auto& streams = analyzer_.model().streams;
  return it->second < streams.size() && stream_is_iwarp(streams[it->second]);
}

void CaptureState::index_new_streams() {
  const auto& streams = analyzer_.model().streams;
  for (; streams_indexed_ < streams.size(); ++streams_indexed_) {
    const StreamModel& s = streams[streams_indexed_];
    stream_index_[{std::min(s.client, s.server), std::max(s.client, s.server)}] =
        static_cast<std::uint32_t>(streams_indexed_);
  }
}

void CaptureState::collect_new_findings() {
  const auto& findings = analyzer_.model().findings;
  for (; findings_collected_ < findings.size(); ++findings_collected_) {
    frames_[findings[findings_collected_].frame].findings.push_back(findings_collected_);
    finding_reported_in_.push_back(finished_ ? 0 : current_frame_);
  }
}

void CaptureState::on_finding(std::size_t /*finding_index*/) {
  // Collected in order after each feed from Model::findings, which holds every finding.
}

void CaptureState::link_response(PduRecord& response) {
  const std::optional<std::uint64_t>& req_frame = response.analysis.request_frame;
  if (!req_frame) return;
  auto it = frames_.find(*req_frame);
  if (it == frames_.end()) return;
  auto try_link = [&](std::uint32_t idx) {
    PduRecord& req = pdus_[idx];
    if (req.stream != response.stream || req.direction == response.direction) return false;
    if (!req.read_request && !req.atomic_request) return false;
    if (req.response_frame) return false;
    req.response_frame = response.completed_frame;
    req.response_time_ns = response.ts_ns - req.ts_ns;
    return true;
  };
  for (std::uint32_t idx : it->second.pdus_complete) {
    if (try_link(idx)) return;
  }
  for (std::uint32_t idx : it->second.pdus_continued) {
    if (try_link(idx)) return;
  }
}

// True when the PDU's octets are exactly those of its only slice in the frame being fed, so
// that drawing (which happens in that frame) can take them from the frame's own TCP payload.
bool CaptureState::in_current_payload(const PduEvent& e) const {
  if (finished_ || e.slices.size() != 1 || !e.markers.empty() || !e.marker_offsets.empty() ||
      e.leading_marker) {
    return false;
  }
  const FrameSlice& s = e.slices.front();
  if (s.frame != current_frame_ || s.length != e.raw.size() || e.raw.empty()) return false;
  if (s.offset > current_payload_.size() || s.length > current_payload_.size() - s.offset) {
    return false;
  }
  const std::uint8_t* here = current_payload_.data() + s.offset;
  return here == e.raw.data() || std::memcmp(here, e.raw.data(), s.length) == 0;
}

void CaptureState::on_pdu(const PduEvent& e) {
  PduRecord p;
  p.kind = e.kind;
  p.sctp = e.llp == Llp::sctp;
  p.stream = e.stream;
  p.direction = e.direction;
  p.stream_offset = e.stream_offset;
  p.completed_frame = current_frame_;
  if (finished_) p.end_of_capture = true;
  // A PDU none of whose octets came in the frame being fed was held behind a hole that this
  // frame (an ACK past it, a full window) or the end of the capture declared capture loss: it
  // is drawn where its last octet arrived, not in the frame that released it.
  if (!e.slices.empty() && (finished_ || e.slices.back().frame < current_frame_)) {
    if (!finished_) p.released_frame = current_frame_;
    p.completed_frame = e.slices.back().frame;
  }
  p.ts_ns = current_ts_ns_;
  p.raw_size = e.raw.size();
  if (!in_current_payload(e)) p.raw.assign(e.raw.begin(), e.raw.end());
  p.slices = e.slices;
  if (e.reqrep) p.reqrep = *e.reqrep;
  p.ulpdu_length = e.ulpdu_length;
  p.crc_field = e.crc_field;
  p.crc_expected = e.crc_expected;
  p.crc_ok = e.crc_ok;
  p.markers = e.markers;
  p.marker_offsets = e.marker_offsets;
  p.leading_marker = e.leading_marker;
  p.framing_resumed = e.framing_resumed;
  p.resumed_after_gap = e.resumed_after_gap;
  p.resync_skipped = e.resync_skipped;
  // The FPDU without its markers (the framer's walk): what the length, ULPDU, pad and CRC
  // fields are drawn on. Without markers they are the raw octets.
  if (e.kind == PduKind::fpdu && !e.marker_offsets.empty())
    p.fpdu.assign(e.plain.begin(), e.plain.end());
  if (e.ddp) {
    p.ddp = e.ddp->header;
    p.payload_size = e.ddp->payload.size();
  }
  p.read_request = e.read_request;
  p.terminate = e.terminate;
  p.atomic_request = e.atomic_request;
  p.atomic_response = e.atomic_response;
  p.immediate_data = e.immediate_data;
  p.analysis = e.analysis;
  p.findings = e.findings;
  if (p.analysis.region) {
    p.region_text =
        p.analysis.region->owner.to_string() + " STag " + hex32(p.analysis.region->stag);
    // The upper-layer command the region serves, as it is at this segment (issue 14).
    if (const ShadowBuffer* b = analyzer_.model().memory.find(*p.analysis.region)) {
      p.region_ulp = b->ulp;
      p.region_command = b->command;
    }
  }
  if (p.terminate) {
    const wire::TerminateControl& c = p.terminate->control;
    p.term_layer_name = std::string(term_layer_name(c.layer));
    p.term_etype_name = std::string(term_etype_name(c.layer, c.etype));
    p.term_code_name = std::string(term_code_name(c.layer, c.etype, c.code));
    p.quoted_term_name = terminate_error_name(c.layer, c.etype, c.code);
  }
  p.info = describe_pdu(p);

  const auto index = static_cast<std::uint32_t>(pdus_.size());
  link_response(p);
  FrameRecord& done = frames_[p.completed_frame];
  if (!done.pdus_complete.empty()) {
    // Frames completing one PDU (most) use that PDU's text: no copy.
    if (done.info.empty()) done.info = pdus_[done.pdus_complete.front()].info;
    done.info += ", ";
    done.info += p.info;
  }
  done.pdus_complete.push_back(index);
  for (const FrameSlice& s : p.slices) {
    if (s.frame == p.completed_frame) continue;
    auto& cont = frames_[s.frame].pdus_continued;
    if (std::find(cont.begin(), cont.end(), index) == cont.end()) cont.push_back(index);
  }
  pdus_.push_back(std::move(p));
}

// One PPID 17 message through core's codec (the analysis keeps its own session records).
const SessionControlRecord* CaptureState::sctp_session(std::uint64_t frame, std::size_t nth,
                                                       ByteView message) noexcept {
  const auto key = std::make_pair(frame, nth);
  if (auto it = sctp_session_index_.find(key); it != sctp_session_index_.end())
    return &sctp_sessions_[it->second];
  try {
    SessionControlRecord r;
    auto d = wire::decode_ddp_session_control(message);
    if (d) {
      r.ok = true;
      r.message = d.value();
      const std::string_view name = wire::ddp_session_function_name(r.message.function_code);
      r.function_name = name.empty() ? "Unknown function" : std::string(name);
      r.info = "DDP Stream " + r.function_name;
      if (r.message.enhanced_pd) {
        r.info += " IRD=" + std::to_string(r.message.enhanced_pd->ird) +
                  " ORD=" + std::to_string(r.message.enhanced_pd->ord);
      }
    } else {
      r.error = d.error().message;
      r.info = "Malformed DDP Stream Session Control: " + r.error;
    }
    sctp_session_index_[key] = sctp_sessions_.size();
    sctp_sessions_.push_back(std::move(r));
    return &sctp_sessions_.back();
  } catch (...) {
    ++internal_errors_;
    return nullptr;
  }
}

}  // namespace ddpscope::plugin
