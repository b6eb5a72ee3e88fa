// SPDX-License-Identifier: GPL-2.0-or-later
#include "capture_state.h"

#include <algorithm>
#include <cinttypes>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <exception>
#include <type_traits>

#include "ddpscope/wire/terminate_error.h"

namespace ddpscope::plugin {

namespace {

std::string hex32(std::uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08" PRIx32, v);
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

bool PduDetail::empty() const {
  return !reqrep && fpdu.empty() && markers.empty() && marker_offsets.empty() && !leading_marker &&
         !framing_resumed && !resumed_after_gap && resync_skipped == 0 && !read_request &&
         !terminate && !atomic_request && !atomic_response && !immediate_data && !response_frame &&
         answered_by.empty();  // Terminate names come with a Terminate
}

const PduDetail& PduRecord::more() const {
  static const PduDetail none;
  return detail ? *detail : none;
}

bool PduRecord::reassembled() const {
  if (slices.size() != 1) return true;
  return slices.front().frame != completed_frame;
}

namespace {

// Appends printf-formatted text to a fixed buffer, truncating (never allocating: the drawing
// code calls it between Wireshark calls that may longjmp).
class TextOut {
 public:
  TextOut(char* out, std::size_t size) : out_(out), left_(size) {
    if (left_ > 0) out_[0] = '\0';
  }
  [[gnu::format(printf, 2, 3)]] void add(const char* format, ...) {
    if (left_ <= 1) return;
    va_list args;
    va_start(args, format);
    const int n = std::vsnprintf(out_, left_, format, args);
    va_end(args);
    if (n < 0) return;
    const std::size_t used = std::min<std::size_t>(static_cast<std::size_t>(n), left_ - 1);
    out_ += used;
    left_ -= used;
  }

 private:
  char* out_;
  std::size_t left_;
};

}  // namespace

void describe_pdu(const PduRecord& p, char* out, std::size_t size) noexcept {
  TextOut t(out, size);
  switch (p.kind) {
    case PduKind::mpa_request:
    case PduKind::mpa_reply: {
      t.add("%s", p.kind == PduKind::mpa_request ? "MPA Request" : "MPA Reply");
      if (const auto& rr = p.more().reqrep) {
        t.add(" rev=%u", static_cast<unsigned>(rr->revision));
        if (rr->markers) t.add(" M");
        if (rr->crc) t.add(" C");
        if (rr->reject) t.add(" R(reject)");
        if (rr->enhanced_pd) {
          t.add(" IRD=%u ORD=%u", static_cast<unsigned>(rr->enhanced_pd->ird),
                static_cast<unsigned>(rr->enhanced_pd->ord));
        }
      }
      return;
    }
    case PduKind::unframed:
      t.add("Unframed %zu octets", p.raw_size);
      return;
    case PduKind::fpdu:
      break;
  }
  if (!p.ddp) {
    t.add("FPDU len=%u", static_cast<unsigned>(p.ulpdu_length));
    return;
  }
  const wire::DdpHeader& h = *p.ddp;
  const wire::OpcodeInfo& op = wire::opcode_info(wire::RdmapControl::from_byte(h.rsvd_ulp0).opcode);
  const std::string_view name = op.defined ? op.name : std::string_view("Reserved opcode");
  t.add("%.*s", static_cast<int>(name.size()), name.data());
  if (h.control.tagged) {
    t.add(" STag=0x%08" PRIx32 " TO=0x%" PRIx64 " len=%zu", h.stag, h.to, p.payload_size);
  } else {
    if (h.qn != op.qn.value_or(h.qn)) t.add(" QN=%" PRIu32, h.qn);
    t.add(" MSN=%" PRIu32, h.msn);
    if (h.mo != 0) t.add(" MO=%" PRIu32, h.mo);
    const PduDetail& d = p.more();
    if (d.read_request) {
      t.add(" sink=0x%08" PRIx32 " src=0x%08" PRIx32 " len=%" PRIu32, d.read_request->sink_stag,
            d.read_request->source_stag, d.read_request->size);
    } else if (d.terminate) {
      t.add(" %s", d.quoted_term_name.c_str());
    } else {
      t.add(" len=%zu", p.payload_size);
    }
  }
  if (h.control.last) t.add(" L");
  if (p.not_placed()) t.add(" [CRC error: not placed]");
  if (p.held_missing != 0) t.add(" [held behind a hole]");
}

CaptureState::CaptureState(PluginOptions options)
    : options_(std::move(options)), analyzer_(options_.analyzer) {
  analyzer_.set_observer(this);
  if (options_.regions) analyzer_.add_regions(*options_.regions);
}

CaptureState::~CaptureState() = default;

FrameRecord& CaptureState::frame_mut(std::uint64_t n) {
  if (n >= frame_index_.size())
    frame_index_.resize(
        std::max<std::size_t>(n + 1, frame_index_.size() + frame_index_.size() / 2));
  std::uint32_t& at = frame_index_[n];
  if (at == 0) {
    frames_.emplace_back();
    at = static_cast<std::uint32_t>(frames_.size());
  }
  return frames_[at - 1];
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

void CaptureState::feed_sctp(std::uint64_t frame, std::int64_t ts_ns,
                             const net::SctpDatagram& packet) noexcept {
  if (finished_ || frame <= last_frame_) return;
  current_frame_ = frame;
  current_ts_ns_ = ts_ns;
  current_payload_ = {};
  last_frame_ = frame;
  try {
    net::FrameDecode d;
    d.status = net::FrameStatus::sctp;
    d.sctp = packet;
    analyzer_.feed_decoded(frame, ts_ns, packet.packet.size(), d);
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
    const std::uint64_t own = findings[findings_collected_].frame;
    frame_mut(own).findings.push_back(arena_, findings_collected_);
    finding_reported_in_.push_back(finished_ ? 0 : current_frame_);
    if (!finished_ && own < current_frame_)
      frame_mut(current_frame_).findings_learnt.push_back(arena_, findings_collected_);
  }
}

void CaptureState::on_finding(std::size_t /*finding_index*/) {
  // Collected in order after each feed from Model::findings, which holds every finding.
}

// The request core paired the operation with (the ORQ for Reads and Atomics, RFC 5040 §5.2, RFC
// 7306; a ULP command by its identifier): its record is named by core's PduEvent::id, which
// observers see before the answer's.
PduRecord* CaptureState::link_request(std::uint32_t operation, std::uint64_t request_pdu) {
  if (request_pdu >= record_of_pdu_.size() || record_of_pdu_[request_pdu] == 0) return nullptr;
  PduRecord& req = pdus_[record_of_pdu_[request_pdu] - 1];
  if (!req.detail) req.detail = std::make_unique<PduDetail>();
  req.detail->answered_by.push_back(operation);
  // iwarp.rdmap.response_in: the first PDU that answered the Read (its first Response segment)
  // or the Atomic.
  const OperationRecord& op = operations_[operation];
  if (!is_ulp_kind(op.kind) && !req.detail->response_frame)
    req.detail->response_frame = op.response_frame;
  return &req;
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
  p.slices = keep(e.slices);
  p.ulpdu_length = e.ulpdu_length;
  p.crc_field = e.crc_field;
  p.crc_expected = e.crc_expected;
  p.crc_ok = e.crc_ok;
  if (e.ddp) {
    p.ddp = e.ddp->header;
    p.payload_size = e.ddp->payload.size();
  }
  p.analysis = static_cast<const SegmentFacts&>(e.analysis);
  p.messages_completed = keep(e.analysis.messages_completed);
  p.messages_delivered = keep(e.analysis.messages_delivered);
  p.findings = keep(e.findings);
  PduDetail d;
  if (e.reqrep) d.reqrep = *e.reqrep;
  d.markers = e.markers;
  d.marker_offsets = e.marker_offsets;
  d.leading_marker = e.leading_marker;
  d.framing_resumed = e.framing_resumed;
  d.resumed_after_gap = e.resumed_after_gap;
  d.resync_skipped = e.resync_skipped;
  // The FPDU without its markers (the framer's walk): what the length, ULPDU, pad and CRC
  // fields are drawn on. Without markers they are the raw octets.
  if (e.kind == PduKind::fpdu && !e.marker_offsets.empty())
    d.fpdu.assign(e.plain.begin(), e.plain.end());
  d.read_request = e.read_request;
  d.terminate = e.terminate;
  d.atomic_request = e.atomic_request;
  d.atomic_response = e.atomic_response;
  d.immediate_data = e.immediate_data;
  if (d.terminate) {
    const wire::TerminateControl& c = d.terminate->control;
    d.term_layer_name = std::string(term_layer_name(c.layer));
    d.term_etype_name = std::string(term_etype_name(c.layer, c.etype));
    d.term_code_name = std::string(term_code_name(c.layer, c.etype, c.code));
    d.quoted_term_name = terminate_error_name(c.layer, c.etype, c.code);
  }
  if (!d.empty()) p.detail = std::make_unique<PduDetail>(std::move(d));
  if (p.analysis.region) {
    // Consecutive segments mostly name the region the one before named: no text built for them.
    if (!last_region_ || *last_region_ != *p.analysis.region) {
      last_region_ = p.analysis.region;
      last_region_text_ =
          intern(p.analysis.region->owner.to_string() + " STag " + hex32(p.analysis.region->stag));
    }
    p.region_text = last_region_text_;
    // The upper-layer command the region serves, as it is at this segment (issue 14).
    if (const ShadowBuffer* b = analyzer_.model().memory.find(*p.analysis.region)) {
      if (!b->ulp.empty()) p.region_ulp = intern(b->ulp);
      if (!b->command.empty()) p.region_command = intern(b->command);
    }
  }

  std::vector<std::uint32_t> answered;
  for (const CompletedOperation& o : e.operations) {
    OperationRecord r;
    r.kind = o.kind;
    r.direction = o.direction;
    r.stream = e.stream;
    r.request_frame = o.request_frame;
    r.response_frame = p.completed_frame;
    r.ns = o.ns;
    if (!o.operation.empty()) r.operation = intern(o.operation);
    if (!o.command.empty()) r.command = intern(o.command);
    const auto at = static_cast<std::uint32_t>(operations_.size());
    operations_.push_back(r);
    answered.push_back(at);
    if (!finished_) frame_mut(current_frame_).operations_learnt.push_back(arena_, at);
    if (const PduRecord* req = link_request(at, o.request_pdu))
      operations_[at].request_frame = req->completed_frame;
  }
  p.operations = keep(answered);

  const auto index = static_cast<std::uint32_t>(pdus_.size());
  if (e.id >= record_of_pdu_.size())
    record_of_pdu_.resize(std::max<std::size_t>(e.id + 1, 2 * record_of_pdu_.size()));
  record_of_pdu_[e.id] = index + 1;
  frame_mut(p.completed_frame).pdus_complete.push_back(arena_, index);
  for (const FrameSlice& s : p.slices) {
    if (s.frame == p.completed_frame) continue;
    auto& cont = frame_mut(s.frame).pdus_continued;
    if (std::find(cont.begin(), cont.end(), index) == cont.end()) cont.push_back(arena_, index);
  }
  pdus_.push_back(std::move(p));
}

void CaptureState::on_held_fpdu(const HeldFpdu& h) {
  PduRecord p;
  p.kind = PduKind::fpdu;
  p.stream = h.stream;
  p.direction = h.direction;
  p.stream_offset = h.stream_offset;
  p.completed_frame = h.frame;
  p.held_missing = std::max<std::uint64_t>(h.missing_before, 1);
  p.ts_ns = current_ts_ns_;
  p.raw_size = h.raw.size();
  // Drawn from the frame's own payload when it lies there (as in_current_payload decides).
  const FrameSlice& s = h.slice;
  const bool in_payload =
      h.frame == current_frame_ && s.offset <= current_payload_.size() &&
      s.length <= current_payload_.size() - s.offset &&
      std::memcmp(current_payload_.data() + s.offset, h.raw.data(), h.raw.size()) == 0;
  if (!in_payload) p.raw.assign(h.raw.begin(), h.raw.end());
  p.slices = keep(std::vector<FrameSlice>{h.slice});
  p.ulpdu_length = h.ulpdu_length;
  p.crc_field = h.crc_field;
  p.crc_expected = h.crc_expected;
  p.ddp = h.ddp.header;
  p.payload_size = h.ddp.payload.size();
  const auto index = static_cast<std::uint32_t>(pdus_.size());
  frame_mut(h.frame).pdus_held.push_back(arena_, index);
  pdus_.push_back(std::move(p));
}

template <class T>
std::span<const T> CaptureState::keep(const std::vector<T>& v) {
  static_assert(std::is_trivially_copyable_v<T>);
  if (v.empty()) return {};
  void* at = arena_.allocate(v.size() * sizeof(T), alignof(T));
  std::memcpy(at, v.data(), v.size() * sizeof(T));
  return {static_cast<const T*>(at), v.size()};
}

const std::string* CaptureState::intern(std::string text) {
  return &*texts_.insert(std::move(text)).first;
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
