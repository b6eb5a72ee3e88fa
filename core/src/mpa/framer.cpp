// SPDX-License-Identifier: GPL-2.0-or-later
#include "ddpscope/mpa/framer.h"

#include <algorithm>

namespace ddpscope {

using wire::kMpaMarkerInterval;
using wire::kMpaMarkerSize;

namespace {
// A buffer this large without a Request/Reply key is not MPA.
constexpr std::size_t kMaxReqRep = wire::kMpaReqRepHeaderSize + 0xFFFF;
}  // namespace

bool MpaFramer::is_marker_at(std::size_t index) const {
  if (!markers_ || !s0_) return false;
  const std::uint64_t pos = pos_of(index);
  return pos >= *s0_ && (pos - *s0_) % kMpaMarkerInterval == 0;
}

void MpaFramer::feed(std::uint64_t offset, ByteView data, std::uint64_t frame,
                     std::uint32_t offset_in_frame, MpaFramerListener& out) {
  if (data.empty()) return;
  if (!buf_started_ || buf_.empty()) {
    buf_offset_ = offset;
    buf_started_ = true;
  }
  slices_.push_back({frame, offset_in_frame, static_cast<std::uint32_t>(data.size())});
  last_frame_ = frame;
  if (buf_.empty() && !in_process_) {
    // Frame straight from the caller's octets; keep only the unframed tail.
    buf_.borrow(data);
    run(out);  // every in-order segment's path: process() folded in
    buf_.own();
    return;
  }
  buf_.append(data);
  process(out);
}

void MpaFramer::gap(std::uint64_t offset, std::uint64_t length, MpaFramerListener& out) {
  // What is buffered before the hole can no longer complete: report it unframed.
  if (!buf_.empty()) emit_unframed(buf_.size(), out, "cut by a gap in the capture");
  buf_offset_ = offset + length;
  buf_started_ = true;
  check_after_bad_crc_ = false;  // framing is searched for after the hole anyway
  resync_ruled_out_ = 0;
  switch (state_) {
    case State::key:
      state_ = State::off;  // the handshake is lost; nothing can be framed
      break;
    case State::fpdu:
    case State::resync:
      state_ = State::resync;
      pending_resync_ = true;
      pending_after_gap_ = true;
      break;
    case State::wait_params:
      pending_resync_ = true;
      pending_after_gap_ = true;
      break;
    case State::off:
      break;
  }
}

void MpaFramer::set_params(bool markers, bool crc, MpaFramerListener& out) {
  markers_ = markers;
  crc_ = crc;
  resync_ruled_out_ = 0;
  if (state_ == State::wait_params) state_ = pending_resync_ ? State::resync : State::fpdu;
  if (!in_process_) process(out);
}

void MpaFramer::start_mid_stream(bool markers, std::optional<bool> crc, MpaFramerListener& out) {
  markers_ = markers;
  crc_ = crc.value_or(true);
  detect_crc_ = !crc.has_value();
  if (detect_crc_ && adopted_crc_) {
    detect_crc_ = false;
    crc_ = *adopted_crc_;
    pending_crc_detected_ = crc_;
    crc_by_peer_ = true;
  }
  state_ = State::resync;
  pending_resync_ = true;
  mid_stream_ = true;
  resync_ruled_out_ = 0;
  if (!in_process_) process(out);
}

void MpaFramer::adopt_crc(bool crc, MpaFramerListener& out) {
  if (state_ == State::key && !detect_crc_) adopted_crc_ = crc;
  if (!detect_crc_) return;
  detect_crc_ = false;
  crc_ = crc;
  pending_crc_detected_ = crc;
  crc_by_peer_ = true;
  resync_ruled_out_ = 0;           // a start the CRC detection ruled out may frame now
  if (!in_process_) process(out);  // what is held may frame now
}

void MpaFramer::stop(MpaFramerListener& out, const char* why) {
  state_ = State::off;
  off_reason_ = why;
  if (!in_process_) process(out);
}

void MpaFramer::finish(MpaFramerListener& out) {
  // No more octets will come: frame what is complete without looking ahead.
  finishing_ = true;
  process(out);
  if (!buf_.empty()) {
    emit_unframed(buf_.size(), out,
                  state_ == State::fpdu ? "incomplete FPDU at end of capture" : "end of capture");
  }
}

void MpaFramer::process(MpaFramerListener& out) {
  run(out);
}

[[gnu::always_inline]] inline void MpaFramer::run(MpaFramerListener& out) {
  in_process_ = true;
  struct Reset {
    bool& flag;
    ~Reset() { flag = false; }
  } reset{in_process_};
  for (;;) {
    bool progressed = false;
    switch (state_) {
      case State::key:
        progressed = try_reqrep(out);
        break;
      case State::wait_params:
        if (buf_.size() > limits_.resync_buffer) {
          emit_unframed(buf_.size(), out, "data before the MPA handshake completed");
        }
        return;
      case State::fpdu:
        progressed = try_fpdu(out);
        break;
      case State::resync:
        progressed = try_resync(out);
        break;
      case State::off:
        if (!buf_.empty()) emit_unframed(buf_.size(), out, off_reason_);
        if (buf_.capacity() > 0 && buf_.empty()) buf_.release();
        return;
    }
    if (!progressed || buf_.empty()) return;
  }
}

bool MpaFramer::try_reqrep(MpaFramerListener& out) {
  auto r = wire::decode_mpa_reqrep(buf_);
  if (r.status() == DecodeStatus::need_more) {
    if (!wire::could_be_mpa_key(ByteView(buf_).first(std::min(buf_.size(), wire::kMpaKeySize)))) {
      RawPdu pdu;
      pdu.kind = RawPdu::Kind::not_mpa;
      pdu.error = DecodeError{"mpa.key-invalid", 0, "stream does not start with an MPA key"};
      state_ = State::off;
      emit_pdu(pdu, 0, out);
      return true;
    }
    if (buf_.size() > kMaxReqRep) state_ = State::off;
    return false;
  }
  if (r.status() == DecodeStatus::malformed) {
    RawPdu pdu;
    pdu.kind = RawPdu::Kind::not_mpa;
    pdu.error = r.error();
    state_ = State::off;
    emit_pdu(pdu, 0, out);
    return true;
  }
  RawPdu pdu;
  pdu.kind = RawPdu::Kind::reqrep;
  pdu.reqrep = r.value();
  s0_ = buf_offset_ + r.consumed();
  state_ = State::wait_params;
  emit_pdu(pdu, r.consumed(), out);
  return true;
}

mpa::FpduWalkParams MpaFramer::walk_params(std::size_t index) const {
  mpa::FpduWalkParams p;
  p.markers = markers_ && s0_.has_value();
  p.stream_pos = p.markers ? pos_of(index) - *s0_ : 0;
  p.crc = crc_;
  return p;
}

// Every FPDU's path, folded into run() (GCC keeps it out of line otherwise: a call per FPDU).
[[gnu::always_inline]] inline bool MpaFramer::try_fpdu(MpaFramerListener& out) {
  if (check_after_bad_crc_) {
    // The FPDU before failed its CRC: is this one where its length said? If not, the length
    // was damaged and framing is lost from here.
    bool need_more = false;
    const bool ok = plausible_at(0, false, &need_more);
    if (need_more && !finishing_ && buf_.size() < 2 * 0x10000 + 64) return false;
    check_after_bad_crc_ = false;
    if (!ok) {
      state_ = State::resync;
      pending_resync_ = true;
      resync_ruled_out_ = 0;
      return true;
    }
  }
  RawPdu& pdu = fpdu_;
  mpa::FpduWalk& w = walk_;
  const mpa::WalkStatus status = mpa::walk_fpdu(buf_, walk_params(0), pdu.plain_storage, w);
  if (!w.ulpdu_length) return false;
  const std::uint16_t len = *w.ulpdu_length;
  if (len < wire::kDdpTaggedHeaderSize) {
    // No DDP segment fits: framing is lost from here.
    const std::size_t n = (w.leading_marker ? wire::kMpaMarkerSize : 0) + wire::kMpaLengthSize;
    RawPdu bad;
    bad.kind = RawPdu::Kind::unframed;
    bad.error =
        DecodeError{"mpa.ulpdu-length-invalid", 0,
                    "ULPDU_Length " + std::to_string(len) + " is shorter than a DDP header"};
    state_ = State::resync;
    pending_resync_ = true;
    resync_ruled_out_ = 0;
    emit_pdu(bad, std::min(n, buf_.size()), out);
    return true;
  }
  if (status == mpa::WalkStatus::need_more) return false;
  const std::size_t raw_len = w.raw_length;
  // Every field emit_pdu and the listener read is set here or in emit_pdu (the vectors keep
  // their storage: the walk's markers are swapped in, and the walk clears what it gets back).
  pdu.kind = RawPdu::Kind::fpdu;
  pdu.slices.clear();
  pdu.plain = w.plain;
  pdu.leading_marker = w.leading_marker;
  if (!w.markers.empty() || !pdu.markers.empty()) {
    pdu.markers.swap(w.markers);
    pdu.marker_offsets.swap(w.marker_offsets);
  }
  pdu.crc_field = w.crc_field;
  pdu.crc_all = w.crc_all;
  pdu.crc_no_lead = w.crc_no_lead;
  pdu.after_resync = false;
  pdu.resync_skipped = 0;
  pdu.resync_after_gap = false;
  pdu.resync_mid_stream = false;
  pdu.crc_detected.reset();
  pdu.crc_detected_by_peer = false;
  const bool bad_crc = crc_ && !w.crc_matches();
  emit_pdu(pdu, raw_len, out);
  // Reported now, in the frame that completes it (a one-pass host shows it there); whether
  // the next FPDU starts where this one's length says is checked when its octets are held.
  if (bad_crc && state_ == State::fpdu) check_after_bad_crc_ = true;
  return true;
}

mpa::Candidate mpa::fpdu_candidate(ByteView raw, const FpduWalkParams& params, Bytes& scratch,
                                   FpduWalk& walk) {
  // The DDP and RDMAP control octets first, so that a damaged length does not wait for octets
  // (judged once the length and a tagged header's octets are held). Without markers they are
  // read in place: a search tries every octet it holds, and this is most of its cost.
  constexpr std::size_t kHead = kCandidateHead;
  std::uint8_t copy[kHead];
  const std::uint8_t* head = copy;
  if (params.markers) {
    if (!peek_fpdu_head(raw, params.stream_pos, true, copy)) return Candidate::need_more;
  } else {
    if (raw.size() < kHead) return Candidate::need_more;
    head = raw.data();
  }
  const std::uint16_t len = load_be16(head);
  if (len < wire::kDdpTaggedHeaderSize) return Candidate::no;
  const auto ddp = wire::DdpControl::from_byte(head[2]);
  const auto rdmap = wire::RdmapControl::from_byte(head[3]);
  if (ddp.version != wire::kDdpVersion || ddp.reserved != 0) return Candidate::no;
  if (rdmap.version != wire::kRdmapVersion || rdmap.reserved != 0) return Candidate::no;
  const auto& info = wire::opcode_info(rdmap.opcode);
  if (!info.defined || info.tagged != ddp.tagged) return Candidate::no;
  if (!ddp.tagged && len < wire::kDdpUntaggedHeaderSize) return Candidate::no;
  if (walk_fpdu(raw, params, scratch, walk) == WalkStatus::need_more) return Candidate::need_more;
  // Without a CRC the sender zeroes the field (RFC 5044 §4.2).
  const bool ok = params.crc ? walk.crc_matches() : walk.crc_field == 0;
  return ok ? Candidate::yes : Candidate::no;
}

MpaFramer::Fit MpaFramer::fpdu_at(std::size_t index, bool crc, std::size_t* raw_len) const {
  const ByteView at = ByteView(buf_).subspan(std::min(index, buf_.size()));
  mpa::FpduWalkParams params = walk_params(index);
  params.crc = crc;
  mpa::FpduWalk& w = probe_walk_;
  switch (mpa::fpdu_candidate(at, params, probe_scratch_, w)) {
    case mpa::Candidate::no:
      return Fit::no;
    case mpa::Candidate::need_more:
      return Fit::need_more;
    case mpa::Candidate::yes:
      break;
  }
  *raw_len = w.raw_length;
  return Fit::yes;
}

bool MpaFramer::plausible_at(std::size_t index, bool need_next, bool* need_more) const {
  std::size_t raw_len = 0;
  const Fit fit = fpdu_at(index, crc_, &raw_len);
  *need_more = fit == Fit::need_more;
  if (fit != Fit::yes) return false;
  if (crc_ || !need_next) return true;
  return plausible_at(index + raw_len, false, need_more) || *need_more;
}

std::size_t MpaFramer::crc_off_chain(std::size_t index, std::size_t want, bool starts_segment,
                                     bool* ran_out, bool* fills_segments) const {
  *ran_out = false;
  std::size_t n = 0;
  while (n < want) {
    std::size_t raw_len = 0;
    const Fit fit = fpdu_at(index, false, &raw_len);
    if (fit == Fit::need_more) *ran_out = true;
    if (fit != Fit::yes) break;
    ++n;
    index += raw_len;
  }
  *fills_segments = n > 0 && starts_segment && index == buf_.size();
  return n;
}

std::size_t MpaFramer::resync_from() const {
  if (resync_ruled_out_ <= buf_offset_) return 0;
  return static_cast<std::size_t>(
      std::min<std::uint64_t>(resync_ruled_out_ - buf_offset_, buf_.size()));
}

bool MpaFramer::try_resync(MpaFramerListener& out) {
  std::optional<std::size_t> found;
  bool need_more = false;
  // Index j ruled out for good (octets held decided it, not the end of input): the next call
  // starts after it (noted once the search ends; the buffer does not move before).
  std::size_t ruled_to = 0;
  auto ruled_out = [&ruled_to](std::size_t j) { ruled_to = j + 1; };
  // Without markers, a start whose control octets fail is no FPDU (fpdu_at's answer, without
  // its walk): most of the octets a search goes through.
  auto insane_at = [this](std::size_t j) {
    return j + mpa::kCandidateHead <= buf_.size() && !mpa::control_octets_sane(buf_.data() + j);
  };
  if (markers_ && s0_) {
    // Markers point back at an FPDU start: use the first one whose target we hold.
    for (std::size_t j = resync_from(); j + kMpaMarkerSize <= buf_.size(); ++j) {
      if (!is_marker_at(j)) continue;
      const std::uint16_t ptr = load_be16(buf_.data() + j + 2);
      if (ptr <= j) {
        const std::size_t cand = j - ptr;
        if (plausible_at(cand, false, &need_more)) {
          found = cand;
          break;
        }
        if (need_more) break;
      }
      ruled_out(j);
      j += kMpaMarkerInterval - 1;
    }
  } else if (detect_crc_) {
    // CRC on first: a 32-bit CRC that matches is proof. A candidate whose CRC fails is taken
    // with CRC off only when FPDUs with zero CRC fields chain by their lengths: kCrcOffChain
    // of them, two reaching the end of input, or any that fill the TCP segments they came in
    // exactly, from a segment's first octet to the last one held (senders align FPDUs with
    // segments, RFC 5044 §8): no waiting for later FPDUs where the capture shows alignment.
    std::size_t slice = 0, slice_at = 0;  // the slice holding buf_[j], and its first index
    for (std::size_t j = resync_from(); j < buf_.size(); ++j) {
      while (slice < slices_.size() && slice_at + slices_[slice].length <= j)
        slice_at += slices_[slice++].length;
      if (s0_ && (pos_of(j) - *s0_) % 4 != 0) continue;
      if (insane_at(j)) {
        ruled_out(j);
        continue;
      }
      std::size_t raw_len = 0;
      const Fit on = fpdu_at(j, true, &raw_len);
      if (on == Fit::yes) {
        found = j;
        crc_ = true;
        break;
      }
      if (on == Fit::need_more && !finishing_) break;
      bool ran_out = false, fills = false;
      const bool starts_segment =
          slice < slices_.size() && slice_at == j && slices_[slice].offset == 0;
      const std::size_t chain = crc_off_chain(j, kCrcOffChain, starts_segment, &ran_out, &fills);
      if (chain == kCrcOffChain || fills || (finishing_ && ran_out && chain >= 2)) {
        found = j;
        crc_ = false;
        break;
      }
      if (ran_out && !finishing_) break;
      // Neither the CRC nor a chain ended by octets held: a longer chain cannot start here
      // later (one reaching the octets' end ran out).
      ruled_out(j);
    }
    if (found) {
      detect_crc_ = false;
      pending_crc_detected_ = crc_;
    }
  } else {
    for (std::size_t j = resync_from(); j < buf_.size(); ++j) {
      if (s0_ && (pos_of(j) - *s0_) % 4 != 0) continue;
      if (insane_at(j)) {
        ruled_out(j);
        continue;
      }
      if (plausible_at(j, true, &need_more)) {
        found = j;
        break;
      }
      // At the end of input no more octets come: a candidate that wants them is not one.
      if (need_more && !finishing_) break;
      ruled_out(j);
    }
  }
  if (ruled_to > 0 && !finishing_) resync_ruled_out_ = pos_of(ruled_to);
  if (!found) {
    if (buf_.size() > limits_.resync_buffer) {
      if (!gave_up_frame_ && !slices_.empty()) gave_up_frame_ = slices_.back().frame;
      emit_unframed(buf_.size() - limits_.resync_buffer / 2, out, "no FPDU boundary found");
      return true;
    }
    return false;
  }
  if (*found > 0) emit_unframed(*found, out, "skipped while looking for an FPDU boundary");
  state_ = State::fpdu;
  return true;
}

std::optional<LostFraming> MpaFramer::lost_framing() const {
  if (state_ != State::resync || pending_skipped_ == 0) return std::nullopt;
  if (!gave_up_frame_ && fpdus_ > 0) return std::nullopt;
  LostFraming l;
  l.frame = gave_up_frame_.value_or(last_frame_);
  l.octets = pending_skipped_;
  l.gave_up = gave_up_frame_.has_value();
  l.never_framed = fpdus_ == 0;
  l.after_gap = pending_after_gap_;
  return l;
}

[[gnu::always_inline]] inline void MpaFramer::emit_pdu(RawPdu& pdu, std::size_t raw_len,
                                                       MpaFramerListener& out) {
  pdu.stream_offset = buf_offset_;
  pdu.raw = ByteView(buf_).first(raw_len);
  // A PDU built for the occasion borrows the spare slice list's storage and gives it back
  // below; try_fpdu's own PDU (fpdu_) keeps its list between FPDUs (swapping it out and back
  // for every FPDU cost two swaps each).
  const bool borrowed = &pdu != &fpdu_ && pdu.slices.capacity() == 0;
  if (borrowed) {
    pdu.slices.swap(spare_slices_);
    pdu.slices.clear();
  }
  std::size_t need = raw_len;
  std::size_t k = 0;
  while (need > 0 && k < slices_.size()) {
    FrameSlice& s = slices_[k];
    const std::uint32_t take = static_cast<std::uint32_t>(std::min<std::size_t>(need, s.length));
    pdu.slices.push_back({s.frame, s.offset, take});
    s.offset += take;
    s.length -= take;
    need -= take;
    if (s.length == 0) ++k;
  }
  if (k == slices_.size())
    slices_.clear();  // the PDU took every slice held (the usual case)
  else
    slices_.erase(slices_.begin(), slices_.begin() + static_cast<std::ptrdiff_t>(k));
  if (pdu.kind == RawPdu::Kind::unframed) {
    pending_skipped_ += raw_len;
  } else if (pdu.kind == RawPdu::Kind::fpdu && pending_resync_) {
    pdu.after_resync = true;
    pdu.resync_skipped = pending_skipped_;
    pdu.resync_after_gap = pending_after_gap_;
    pdu.resync_mid_stream = mid_stream_;
    pdu.crc_detected = pending_crc_detected_;
    pdu.crc_detected_by_peer = pending_crc_detected_ && crc_by_peer_;
    pending_crc_detected_.reset();
    mid_stream_ = false;
    pending_resync_ = false;
    pending_after_gap_ = false;
    pending_skipped_ = 0;
  } else if (pdu.kind == RawPdu::Kind::fpdu) {
    pending_skipped_ = 0;
  }
  if (pdu.kind == RawPdu::Kind::fpdu) {
    ++fpdus_;
    gave_up_frame_.reset();
  }
  out.on_raw_pdu(pdu);
  if (borrowed) spare_slices_.swap(pdu.slices);
  consume(raw_len);
}

void MpaFramer::emit_unframed(std::size_t raw_len, MpaFramerListener& out, const char* why) {
  RawPdu pdu;
  pdu.kind = RawPdu::Kind::unframed;
  pdu.error = DecodeError{"unframed", 0, why};
  emit_pdu(pdu, raw_len, out);
}

}  // namespace ddpscope
