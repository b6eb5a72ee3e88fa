// SPDX-License-Identifier: GPL-2.0-or-later
#include "capture_state.h"

#include <algorithm>
#include <cinttypes>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <exception>
#include <new>
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
         answered_by.empty() && raw.empty() && released_frame == 0 && held_missing == 0 &&
         slices.empty() && !ddp && messages_completed.empty() && messages_delivered.empty() &&
         findings.empty() && operations.empty();  // Terminate names come with a Terminate
}

const PduDetail& PduRecord::more() const {
  static const PduDetail none;
  return detail_ != nullptr ? *detail_ : none;
}

const Bytes& PduRecord::raw() const {
  static const Bytes none;
  return detail_ != nullptr ? detail_->raw : none;
}

std::optional<wire::DdpHeader> PduRecord::ddp() const {
  if (!has(flag_ddp)) return std::nullopt;
  if (!has(flag_ddp_packed)) return detail_ != nullptr ? detail_->ddp : std::nullopt;
  wire::DdpHeader h;
  h.control = wire::DdpControl::from_byte(ddp_control_);
  h.rsvd_ulp0 = rsvd_ulp0_;
  if (h.control.tagged) {
    h.stag = ddp_words_[0];
    h.to = std::uint64_t{ddp_words_[1]} << 32 | ddp_words_[2];
  } else {
    h.rsvd_ulp1 = ddp_words_[0];
    h.qn = ddp_words_[1];
    h.msn = ddp_words_[2];
    h.mo = ddp_words_[3];
  }
  return h;
}

SegmentFacts PduRecord::analysis() const {
  if (facts_ != nullptr) return facts_->facts;
  SegmentFacts a;
  a.placed = has(flag_placed);
  if (has(flag_expected_msn)) a.expected_msn = expected_msn_;
  if (has(flag_message)) a.message = message_;
  return a;
}

std::span<const std::size_t> PduRecord::messages_completed() const {
  if (has(flag_completes_message)) return {&message_, 1};
  return detail_ != nullptr ? detail_->messages_completed : std::span<const std::size_t>();
}

std::span<const std::size_t> PduRecord::messages_delivered() const {
  if (has(flag_delivers_message)) return {&message_, 1};
  return detail_ != nullptr ? detail_->messages_delivered : std::span<const std::size_t>();
}

bool PduRecord::reassembled() const {
  const std::span<const FrameSlice> s = slices();
  if (s.size() != 1) return true;
  return s.front().frame != completed_frame();
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
      t.add("Unframed %zu octets", std::size_t{p.raw_size});
      return;
    case PduKind::fpdu:
      break;
  }
  const std::optional<wire::DdpHeader> ddp = p.ddp();
  if (!ddp) {
    t.add("FPDU len=%u", static_cast<unsigned>(p.ulpdu_length));
    return;
  }
  const wire::DdpHeader& h = *ddp;
  const wire::OpcodeInfo& op = wire::opcode_info(wire::RdmapControl::from_byte(h.rsvd_ulp0).opcode);
  const std::string_view name = op.defined ? op.name : std::string_view("Reserved opcode");
  t.add("%.*s", static_cast<int>(name.size()), name.data());
  if (h.control.tagged) {
    t.add(" STag=0x%08" PRIx32 " TO=0x%" PRIx64 " len=%zu", h.stag, h.to,
          std::size_t{p.payload_size});
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
      t.add(" len=%zu", std::size_t{p.payload_size});
    }
  }
  if (h.control.last) t.add(" L");
  if (p.not_placed()) t.add(" [CRC error: not placed]");
  if (p.held_missing() != 0) t.add(" [held behind a hole]");
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
    more_of(frame_mut(own)).findings.push_back(arena_, findings_collected_);
    finding_reported_in_.push_back(finished_ ? 0 : current_frame_);
    if (!finished_ && own < current_frame_)
      more_of(frame_mut(current_frame_)).findings_learnt.push_back(arena_, findings_collected_);
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
  PduDetail& d = detail_of(req);
  d.answered_by.push_back(operation);
  // iwarp.rdmap.response_in: the first PDU that answered the Read (its first Response segment)
  // or the Atomic.
  const OperationRecord& op = operations_[operation];
  if (!is_ulp_kind(op.kind) && !d.response_frame) d.response_frame = op.response_frame;
  return &req;
}

PduDetail& CaptureState::detail_of(PduRecord& p) {
  if (p.detail_ == nullptr) p.detail_ = &details_.emplace_back();
  return *p.detail_;
}

FrameMore& CaptureState::more_of(FrameRecord& f) {
  if (f.more == nullptr)
    f.more = new (arena_.allocate(sizeof(FrameMore), alignof(FrameMore))) FrameMore;
  return *f.more;
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

namespace {

// The packed form of the DDP header in a record, when it gives the header back exactly (as for
// every header core's codec decodes: a tagged header's untagged fields are 0, and the reverse).
bool pack_ddp(const wire::DdpHeader& h, std::uint8_t& control, std::uint8_t& rsvd_ulp0,
              std::uint32_t (&words)[4]) {
  control = h.control.byte();
  rsvd_ulp0 = h.rsvd_ulp0;
  if (h.control.tagged) {
    words[0] = h.stag;
    words[1] = static_cast<std::uint32_t>(h.to >> 32);
    words[2] = static_cast<std::uint32_t>(h.to);
    words[3] = 0;
  } else {
    words[0] = h.rsvd_ulp1;
    words[1] = h.qn;
    words[2] = h.msn;
    words[3] = h.mo;
  }
  wire::DdpHeader back;
  back.control = wire::DdpControl::from_byte(control);
  back.rsvd_ulp0 = rsvd_ulp0;
  if (back.control.tagged) {
    back.stag = words[0];
    back.to = std::uint64_t{words[1]} << 32 | words[2];
  } else {
    back.rsvd_ulp1 = words[0];
    back.qn = words[1];
    back.msn = words[2];
    back.mo = words[3];
  }
  return back == h;
}

// True when the facts are what PduRecord keeps packed: whether placed, the expected MSN and the
// message (an untagged segment's, or a dropped FPDU's empty analysis); anything else (a
// region, Read/Atomic links, a Terminate's quoted frame) goes to a PduFacts.
bool facts_packable(const SegmentFacts& a) {
  // Every field of SegmentFacts is named below: one added there must be added here.
  static_assert(sizeof(SegmentFacts) == 128, "SegmentFacts changed: update facts_packable");
  return !a.region && a.region_source == RegionSource::observed && !a.region_bounds_known &&
         a.offset_in_region == 0 && a.region_bytes_placed == 0 && !a.request_frame &&
         !a.response_time_ns && !a.quoted_frame;
}

}  // namespace

void CaptureState::on_pdu(const PduEvent& e) {
  PduRecord p;
  PduDetail d;
  p.kind = e.kind;
  p.set(PduRecord::flag_sctp, e.llp == Llp::sctp);
  p.stream = e.stream;
  p.direction = static_cast<std::uint8_t>(e.direction);
  p.stream_offset = e.stream_offset;
  std::uint64_t completed = current_frame_;
  if (finished_) p.set(PduRecord::flag_end_of_capture);
  // A PDU none of whose octets came in the frame being fed was held behind a hole that this
  // frame (an ACK past it, a full window) or the end of the capture declared capture loss: it
  // is drawn where its last octet arrived, not in the frame that released it.
  if (!e.slices.empty() && (finished_ || e.slices.back().frame < current_frame_)) {
    if (!finished_) d.released_frame = current_frame_;
    completed = e.slices.back().frame;
  }
  // Wireshark numbers frames with 32 bits (frame_data::num): so does the plugin when it feeds.
  p.completed_frame_ = static_cast<std::uint32_t>(completed);
  p.raw_size = static_cast<std::uint32_t>(e.raw.size());
  if (!in_current_payload(e)) d.raw.assign(e.raw.begin(), e.raw.end());
  if (e.slices.size() == 1) {
    p.slice_ = e.slices.front();
    p.set(PduRecord::flag_one_slice);
  } else {
    d.slices = keep(e.slices);
  }
  p.ulpdu_length = e.ulpdu_length;
  p.crc_field = e.crc_field;
  if (e.crc_expected) {
    p.crc_expected_ = *e.crc_expected;
    p.set(PduRecord::flag_crc_expected);
  }
  p.set(PduRecord::flag_crc_ok, e.crc_ok);
  if (e.ddp) {
    p.set(PduRecord::flag_ddp);
    if (pack_ddp(e.ddp->header, p.ddp_control_, p.rsvd_ulp0_, p.ddp_words_))
      p.set(PduRecord::flag_ddp_packed);
    else
      d.ddp = e.ddp->header;
    p.payload_size = static_cast<std::uint32_t>(e.ddp->payload.size());
  }
  const SegmentAnalysis& a = e.analysis;
  if (a.message) p.message_ = *a.message;
  if (facts_packable(a)) {
    p.set(PduRecord::flag_placed, a.placed);
    if (a.expected_msn) {
      p.expected_msn_ = *a.expected_msn;
      p.set(PduRecord::flag_expected_msn);
    }
    p.set(PduRecord::flag_message, a.message.has_value());
  } else {
    PduFacts& f = facts_.emplace_back();
    f.facts = a;
    if (a.region) {
      // Consecutive segments mostly name the region the one before named: no text built for
      // them.
      if (!last_region_ || *last_region_ != *a.region) {
        last_region_ = a.region;
        last_region_text_ = intern(a.region->owner.to_string() + " STag " + hex32(a.region->stag));
      }
      f.region_text = last_region_text_;
      // The upper-layer command the region serves, as it is at this segment (issue 14).
      if (const ShadowBuffer* b = analyzer_.model().memory.find(*a.region)) {
        if (!b->ulp.empty()) f.region_ulp = intern(b->ulp);
        if (!b->command.empty()) f.region_command = intern(b->command);
      }
    }
    p.facts_ = &f;
  }
  // The messages this segment completed and delivered: mostly none, or just its own.
  const auto own_message = [&](const std::vector<std::size_t>& v) {
    return a.message && v.size() == 1 && v.front() == *a.message;
  };
  if (own_message(a.messages_completed))
    p.set(PduRecord::flag_completes_message);
  else
    d.messages_completed = keep(a.messages_completed);
  if (own_message(a.messages_delivered))
    p.set(PduRecord::flag_delivers_message);
  else
    d.messages_delivered = keep(a.messages_delivered);
  d.findings = keep(e.findings);
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

  std::vector<std::uint32_t> answered;
  for (const CompletedOperation& o : e.operations) {
    OperationRecord r;
    r.kind = o.kind;
    r.direction = o.direction;
    r.stream = e.stream;
    r.request_frame = o.request_frame;
    r.response_frame = completed;
    r.ns = o.ns;
    if (!o.operation.empty()) r.operation = intern(o.operation);
    if (!o.command.empty()) r.command = intern(o.command);
    const auto at = static_cast<std::uint32_t>(operations_.size());
    operations_.push_back(r);
    answered.push_back(at);
    if (!finished_) more_of(frame_mut(current_frame_)).operations_learnt.push_back(arena_, at);
    if (const PduRecord* req = link_request(at, o.request_pdu))
      operations_[at].request_frame = req->completed_frame();
  }
  d.operations = keep(answered);
  if (!d.empty()) p.detail_ = &details_.emplace_back(std::move(d));

  const auto index = static_cast<std::uint32_t>(pdus_.size());
  if (e.id >= record_of_pdu_.size())
    record_of_pdu_.resize(std::max<std::size_t>(e.id + 1, 2 * record_of_pdu_.size()));
  record_of_pdu_[e.id] = index + 1;
  frame_mut(completed).pdus_complete.push_back(arena_, index);
  for (const FrameSlice& s : p.slices()) {
    if (s.frame == completed) continue;
    auto& cont = more_of(frame_mut(s.frame)).pdus_continued;
    if (std::find(cont.begin(), cont.end(), index) == cont.end()) cont.push_back(arena_, index);
  }
  pdus_.push_back(p);
}

void CaptureState::on_held_fpdu(const HeldFpdu& h) {
  PduRecord p;
  PduDetail& d = detail_of(p);  // held_missing is never 0
  p.kind = PduKind::fpdu;
  p.stream = h.stream;
  p.direction = static_cast<std::uint8_t>(h.direction);
  p.stream_offset = h.stream_offset;
  p.completed_frame_ = static_cast<std::uint32_t>(h.frame);
  d.held_missing = std::max<std::uint64_t>(h.missing_before, 1);
  p.raw_size = static_cast<std::uint32_t>(h.raw.size());
  // Drawn from the frame's own payload when it lies there (as in_current_payload decides).
  const FrameSlice& s = h.slice;
  const bool in_payload =
      h.frame == current_frame_ && s.offset <= current_payload_.size() &&
      s.length <= current_payload_.size() - s.offset &&
      std::memcmp(current_payload_.data() + s.offset, h.raw.data(), h.raw.size()) == 0;
  if (!in_payload) d.raw.assign(h.raw.begin(), h.raw.end());
  p.slice_ = h.slice;
  p.set(PduRecord::flag_one_slice);
  p.ulpdu_length = h.ulpdu_length;
  p.crc_field = h.crc_field;
  if (h.crc_expected) {
    p.crc_expected_ = *h.crc_expected;
    p.set(PduRecord::flag_crc_expected);
  }
  p.set(PduRecord::flag_ddp);
  if (pack_ddp(h.ddp.header, p.ddp_control_, p.rsvd_ulp0_, p.ddp_words_))
    p.set(PduRecord::flag_ddp_packed);
  else
    d.ddp = h.ddp.header;
  p.payload_size = static_cast<std::uint32_t>(h.ddp.payload.size());
  const auto index = static_cast<std::uint32_t>(pdus_.size());
  more_of(frame_mut(h.frame)).pdus_held.push_back(arena_, index);
  pdus_.push_back(p);
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
