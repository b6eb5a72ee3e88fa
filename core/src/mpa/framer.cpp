// SPDX-License-Identifier: GPL-2.0-or-later
#include "ddpscope/mpa/framer.h"

#include <algorithm>
#include <cstring>

#include "ddpscope/common/crc32c.h"

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
  if (buf_.empty() && !in_process_) {
    // Frame straight from the caller's octets; keep only the unframed tail.
    buf_.borrow(data);
    process(out);
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
  if (state_ == State::wait_params) state_ = pending_resync_ ? State::resync : State::fpdu;
  if (!in_process_) process(out);
}

void MpaFramer::start_mid_stream(bool markers, bool crc, MpaFramerListener& out) {
  markers_ = markers;
  crc_ = crc;
  state_ = State::resync;
  pending_resync_ = true;
  mid_stream_ = true;
  if (!in_process_) process(out);
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

MpaFramer::Walk MpaFramer::walk(std::size_t start, std::size_t plain_needed, std::uint8_t* plain,
                                std::vector<wire::Marker>* markers,
                                std::vector<std::size_t>* marker_idx,
                                std::size_t* crc_raw_index) const {
  Walk w;
  std::size_t i = start;
  std::size_t got = 0;
  const bool use_markers = markers_ && s0_;
  while (got < plain_needed) {
    if (use_markers && is_marker_at(i)) {
      if (i + kMpaMarkerSize > buf_.size()) return w;
      if (markers) {
        wire::Marker m;
        m.stream_pos = pos_of(i) - *s0_;
        m.reserved = load_be16(buf_.data() + i);
        m.fpduptr = load_be16(buf_.data() + i + 2);
        markers->push_back(m);
      }
      if (marker_idx) marker_idx->push_back(i);
      i += kMpaMarkerSize;
      continue;
    }
    if (i >= buf_.size()) return w;
    std::size_t chunk = std::min(plain_needed - got, buf_.size() - i);
    if (use_markers) {
      const std::uint64_t rel = pos_of(i) - *s0_;
      const std::uint64_t to_marker = kMpaMarkerInterval - rel % kMpaMarkerInterval;
      chunk = std::min<std::size_t>(chunk, to_marker);
    }
    if (crc_raw_index && got <= plain_needed - 4 && got + chunk > plain_needed - 4)
      *crc_raw_index = i + (plain_needed - 4 - got);
    if (plain) std::memcpy(plain + got, buf_.data() + i, chunk);
    i += chunk;
    got += chunk;
  }
  w.raw_len = i - start;
  w.complete = true;
  return w;
}

bool MpaFramer::try_fpdu(MpaFramerListener& out) {
  RawPdu pdu;
  std::size_t i = 0;
  if (is_marker_at(0)) {
    if (buf_.size() < kMpaMarkerSize) return false;
    pdu.leading_marker = true;
    wire::Marker m;
    m.stream_pos = pos_of(0) - *s0_;
    m.reserved = load_be16(buf_.data() + 0);
    m.fpduptr = load_be16(buf_.data() + 2);
    pdu.markers.push_back(m);
    pdu.marker_offsets.push_back(0);
    i = kMpaMarkerSize;
  }
  // Without markers the demarkered FPDU is the raw octets themselves: no walk, no copy.
  const bool may_have_markers = markers_ && s0_;
  std::uint8_t head[2];
  if (may_have_markers) {
    if (!walk(i, 2, head, nullptr, nullptr, nullptr).complete) return false;
  } else {
    if (buf_.size() < 2) return false;
    std::memcpy(head, buf_.data(), 2);
  }
  const std::uint16_t len = load_be16(head);
  if (len < wire::kDdpTaggedHeaderSize) {
    // No DDP segment fits: framing is lost from here.
    std::size_t n = i + 2;
    RawPdu bad;
    bad.kind = RawPdu::Kind::unframed;
    bad.error =
        DecodeError{"mpa.ulpdu-length-invalid", 0,
                    "ULPDU_Length " + std::to_string(len) + " is shorter than a DDP header"};
    state_ = State::resync;
    pending_resync_ = true;
    emit_pdu(bad, std::min(n, buf_.size()), out);
    return true;
  }
  const std::size_t total = wire::fpdu_size(len);
  std::size_t crc_idx = 0;
  std::size_t raw_len = 0;
  if (may_have_markers) {
    pdu.plain_storage.resize(total);
    Walk w = walk(i, total, pdu.plain_storage.data(), &pdu.markers, &pdu.marker_offsets, &crc_idx);
    if (!w.complete) return false;
    raw_len = i + w.raw_len;
  } else {
    if (buf_.size() < total) return false;
    crc_idx = total - 4;
    raw_len = total;
  }
  pdu.plain = may_have_markers ? ByteView(pdu.plain_storage) : ByteView(buf_).subspan(i, total);
  pdu.crc_field = mpa_crc_from_wire(&pdu.plain[total - 4]);
  if (crc_) {
    pdu.crc_all = crc32c(ByteView(buf_).first(crc_idx));
    pdu.crc_no_lead = pdu.leading_marker
                          ? crc32c(ByteView(buf_).subspan(kMpaMarkerSize, crc_idx - kMpaMarkerSize))
                          : pdu.crc_all;
  }
  const bool crc_bad = crc_ && pdu.crc_field != pdu.crc_all && pdu.crc_field != pdu.crc_no_lead;
  if (crc_bad) {
    // Is the next FPDU where this one's length says? If not, the length was damaged.
    bool need_more = false;
    const bool next_ok = plausible_at(raw_len, false, &need_more);
    if (need_more && !finishing_ && buf_.size() < raw_len + 2 * 0x10000 + 64) return false;
    pdu.kind = RawPdu::Kind::fpdu;
    emit_pdu(pdu, raw_len, out);
    if (!next_ok) {
      state_ = State::resync;
      pending_resync_ = true;
    }
    return true;
  }
  pdu.kind = RawPdu::Kind::fpdu;
  emit_pdu(pdu, raw_len, out);
  return true;
}

bool MpaFramer::plausible_at(std::size_t index, bool need_next, bool* need_more) const {
  *need_more = false;
  std::size_t i = index;
  if (is_marker_at(i)) i += kMpaMarkerSize;
  Bytes plain(2 + wire::kDdpTaggedHeaderSize);
  Walk w = walk(i, plain.size(), plain.data(), nullptr, nullptr, nullptr);
  if (!w.complete) {
    *need_more = true;
    return false;
  }
  const std::uint16_t len = load_be16(plain.data());
  if (len < wire::kDdpTaggedHeaderSize) return false;
  const auto ddp = wire::DdpControl::from_byte(plain[2]);
  const auto rdmap = wire::RdmapControl::from_byte(plain[3]);
  if (ddp.version != wire::kDdpVersion || ddp.reserved != 0) return false;
  if (rdmap.version != wire::kRdmapVersion || rdmap.reserved != 0) return false;
  const auto& info = wire::opcode_info(rdmap.opcode);
  if (!info.defined || info.tagged != ddp.tagged) return false;
  if (!ddp.tagged && len < wire::kDdpUntaggedHeaderSize) return false;
  const std::size_t total = wire::fpdu_size(len);
  plain.resize(total);
  std::size_t crc_idx = 0;
  w = walk(i, total, plain.data(), nullptr, nullptr, &crc_idx);
  if (!w.complete) {
    *need_more = true;
    return false;
  }
  if (crc_) {
    const std::uint32_t field = mpa_crc_from_wire(&plain[total - 4]);
    if (field != crc32c(ByteView(buf_).subspan(index, crc_idx - index)) &&
        field != crc32c(ByteView(buf_).subspan(i, crc_idx - i)))
      return false;
    return true;
  }
  if (mpa_crc_from_wire(&plain[total - 4]) != 0) return false;  // no CRC: field is zero
  if (!need_next) return true;
  return plausible_at(i + w.raw_len, false, need_more) || *need_more;
}

bool MpaFramer::try_resync(MpaFramerListener& out) {
  std::optional<std::size_t> found;
  bool need_more = false;
  if (markers_ && s0_) {
    // Markers point back at an FPDU start: use the first one whose target we hold.
    for (std::size_t j = 0; j + kMpaMarkerSize <= buf_.size(); ++j) {
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
      j += kMpaMarkerInterval - 1;
    }
  } else {
    for (std::size_t j = 0; j < buf_.size(); ++j) {
      if (s0_ && (pos_of(j) - *s0_) % 4 != 0) continue;
      if (plausible_at(j, true, &need_more)) {
        found = j;
        break;
      }
      if (need_more) break;
    }
  }
  if (!found) {
    if (buf_.size() > limits_.resync_buffer) {
      emit_unframed(buf_.size() - limits_.resync_buffer / 2, out, "no FPDU boundary found");
      return true;
    }
    return false;
  }
  if (*found > 0) emit_unframed(*found, out, "skipped while looking for an FPDU boundary");
  state_ = State::fpdu;
  return true;
}

void MpaFramer::emit_pdu(RawPdu& pdu, std::size_t raw_len, MpaFramerListener& out) {
  pdu.stream_offset = buf_offset_;
  pdu.raw = ByteView(buf_).first(raw_len);
  // Reuse the slice list's storage across PDUs (the listener may hand it back, see below).
  if (pdu.slices.empty()) {
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
  slices_.erase(slices_.begin(), slices_.begin() + static_cast<std::ptrdiff_t>(k));
  if (pdu.kind == RawPdu::Kind::unframed) {
    pending_skipped_ += raw_len;
  } else if (pdu.kind == RawPdu::Kind::fpdu && pending_resync_) {
    pdu.after_resync = true;
    pdu.resync_skipped = pending_skipped_;
    pdu.resync_after_gap = pending_after_gap_;
    pdu.resync_mid_stream = mid_stream_;
    mid_stream_ = false;
    pending_resync_ = false;
    pending_after_gap_ = false;
    pending_skipped_ = 0;
  } else if (pdu.kind == RawPdu::Kind::fpdu) {
    pending_skipped_ = 0;
  }
  out.on_raw_pdu(pdu);
  if (pdu.slices.capacity() > spare_slices_.capacity()) spare_slices_.swap(pdu.slices);
  consume(raw_len);
}

void MpaFramer::emit_unframed(std::size_t raw_len, MpaFramerListener& out, const char* why) {
  RawPdu pdu;
  pdu.kind = RawPdu::Kind::unframed;
  pdu.error = DecodeError{"unframed", 0, why};
  emit_pdu(pdu, raw_len, out);
}

void MpaFramer::consume(std::size_t n) {
  buf_.consume(n);
  buf_offset_ += n;
}

}  // namespace ddpscope
