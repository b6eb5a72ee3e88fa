// SPDX-License-Identifier: GPL-2.0-or-later
// MPA framing for one direction of a stream (RFC 5044 §4, §7): a resumable state machine fed
// with the reassembled byte stream. See docs/mpa-framer.md for the state diagram.
//
//   key ──Req/Rep──▶ wait_params ──set_params──▶ fpdu ◀──found──┐
//    │                                             │  gap/bad    │
//    └──not a key──▶ off                           └──────────▶ resync
#pragma once

#include <bit>
#include <cstdint>
#include <optional>
#include <vector>

#include "ddpscope/common/bytes.h"
#include "ddpscope/common/limits.h"
#include "ddpscope/mpa/fpdu_walker.h"
#include "ddpscope/wire/ddp.h"
#include "ddpscope/wire/mpa.h"
#include "ddpscope/wire/rdmap.h"

namespace ddpscope {

// Where an octet run came from: a frame and the offset in that frame's TCP payload.
struct FrameSlice {
  std::uint64_t frame = 0;
  std::uint32_t offset = 0;  // in the frame's TCP payload
  std::uint32_t length = 0;
};

namespace mpa {
// The octets fpdu_candidate reads first: ULPDU_Length and a tagged DDP header.
inline constexpr std::size_t kCandidateHead = wire::kMpaLengthSize + wire::kDdpTaggedHeaderSize;
// The DDP and RDMAP control octets after a ULPDU_Length field at p[0] (no marker among them)
// have the versions and zero reserved bits fpdu_candidate asks for (RFC 5041 §4, RFC 5040 §4):
// its first test, inline, for a search that tries every octet it holds (one start in a
// thousand of random octets passes).
inline bool control_octets_sane(const std::uint8_t* p) {
  const std::uint8_t ddp = p[wire::kMpaLengthSize];
  const std::uint8_t rdmap = p[wire::kMpaLengthSize + 1];
  return (ddp & (wire::kDdpReservedMask | wire::kDdpVersionMask)) == wire::kDdpVersion &&
         (rdmap & (wire::kRdmapVersionMask | wire::kRdmapReservedMask)) ==
             (wire::kRdmapVersion << std::countr_zero(wire::kRdmapVersionMask));
}
enum class Candidate : std::uint8_t { no, yes, need_more };
// Whether an FPDU starts at raw[0], judged on its own octets as a framer searching for a
// boundary judges it (resync, mid-stream): a sane DDP/RDMAP header (versions, reserved bits, a
// defined opcode of the right model, a length that holds its header, RFC 5041 §4, RFC 5040 §4)
// and a CRC field that matches (crc) or is zero (!crc, RFC 5044 §4.2). With yes, `walk` is the
// walk of it (its views into raw or `scratch`).
Candidate fpdu_candidate(ByteView raw, const FpduWalkParams& params, Bytes& scratch,
                         FpduWalk& walk);
}  // namespace mpa

// A byte buffer consumed from the front without moving the rest on every consume. It can
// also borrow the caller's octets (no copy) while they are being framed; own() copies what is
// left before the caller's memory goes away.
class ConsumeBuffer {
 public:
  // Storage kept across FPDUs once empty (a partial FPDU of the largest size fits).
  static constexpr std::size_t kKeepCapacity = 128u << 10;
  const std::uint8_t* data() const { return ext_ ? ext_ + ext_head_ : bytes_.data() + head_; }
  std::size_t size() const { return ext_ ? ext_size_ - ext_head_ : bytes_.size() - head_; }
  bool empty() const { return size() == 0; }
  const std::uint8_t* begin() const { return data(); }
  const std::uint8_t* end() const { return data() + size(); }
  std::uint8_t operator[](std::size_t i) const { return data()[i]; }
  operator ByteView() const { return ByteView(data(), size()); }
  // Frames `v` in place; valid until own() or append().
  void borrow(ByteView v) {
    bytes_.clear();
    head_ = 0;
    ext_ = v.data();
    ext_size_ = v.size();
    ext_head_ = 0;
  }
  void own() {
    if (!ext_) return;
    // borrow() left the storage empty: nothing to copy when the octets were all framed (a
    // segment of whole FPDUs, the usual case).
    if (ext_head_ != ext_size_) bytes_.assign(data(), data() + size());
    head_ = 0;
    ext_ = nullptr;
  }
  void append(ByteView v) {
    own();
    if (head_ > 0 && head_ == bytes_.size()) {
      bytes_.clear();
      head_ = 0;
    }
    bytes_.insert(bytes_.end(), v.begin(), v.end());
  }
  void consume(std::size_t n) {
    if (ext_) {
      ext_head_ += n;
      return;
    }
    head_ += n;
    if (head_ == bytes_.size() && bytes_.capacity() > kKeepCapacity) {
      release();  // a resync or a large FPDU is over: give its memory back
    } else if (head_ >= (64u << 10) && head_ * 2 >= bytes_.size()) {
      bytes_.erase(bytes_.begin(), bytes_.begin() + static_cast<std::ptrdiff_t>(head_));
      head_ = 0;
    }
  }
  // Frees the storage of an empty buffer.
  void release() {
    Bytes().swap(bytes_);
    head_ = 0;
  }
  std::size_t capacity() const { return bytes_.capacity(); }

 private:
  Bytes bytes_;
  std::size_t head_ = 0;
  const std::uint8_t* ext_ = nullptr;
  std::size_t ext_size_ = 0;
  std::size_t ext_head_ = 0;
};

// One framed unit, with the octets as on the wire and where they came from.
struct RawPdu {
  enum class Kind : std::uint8_t { reqrep, fpdu, unframed, not_mpa };
  Kind kind = Kind::fpdu;
  std::uint64_t stream_offset = 0;
  ByteView raw;  // octets as on the wire; valid during on_raw_pdu only
  // The listener may move this list away; what it leaves here is reused for the next PDU.
  std::vector<FrameSlice> slices;
  // reqrep
  std::optional<wire::MpaReqRep> reqrep;
  std::optional<DecodeError> error;  // reqrep that failed to decode, or why unframed
  // fpdu
  ByteView plain;       // demarkered: ULPDU_Length, ULPDU, pad, CRC field (valid in the callback)
  Bytes plain_storage;  // holds `plain` when markers had to be removed
  bool leading_marker = false;
  std::vector<wire::Marker> markers;
  std::vector<std::size_t> marker_offsets;  // in raw
  std::uint32_t crc_field = 0;
  std::uint32_t crc_all = 0;      // over raw up to the CRC field (leading marker included)
  std::uint32_t crc_no_lead = 0;  // the same without a leading marker
  bool after_resync = false;      // first PDU after framing was found again
  std::uint64_t resync_skipped = 0;
  bool resync_after_gap = false;
  bool resync_mid_stream = false;  // the first FPDU found in a capture that starts mid-stream
  // The first FPDU framed by a framer told to find the CRC setting itself: the setting found.
  std::optional<bool> crc_detected;
  bool crc_detected_by_peer = false;  // ... taken from the other direction (adopt_crc)
};

// A direction whose framer, at the end of input, was still looking for an FPDU boundary and
// either never framed one or spent its resync budget without finding one (see lost_framing()).
struct LostFraming {
  std::uint64_t frame = 0;   // where the framer gave up (its budget spent), else the last frame
  std::uint64_t octets = 0;  // unframed since the last FPDU (or since the start)
  bool gave_up = false;      // the resync budget was spent without a boundary
  bool never_framed = false;
  bool after_gap = false;  // capture loss since the last FPDU
};

class MpaFramerListener {
 public:
  virtual ~MpaFramerListener() = default;
  virtual void on_raw_pdu(RawPdu& pdu) = 0;
};

class MpaFramer {
 public:
  enum class State : std::uint8_t { key, wait_params, fpdu, resync, off };

  explicit MpaFramer(const Limits& limits) : limits_(limits) {}

  // Reassembled octets, in order.
  void feed(std::uint64_t offset, ByteView data, std::uint64_t frame, std::uint32_t offset_in_frame,
            MpaFramerListener& out);
  // Octets lost from the capture.
  void gap(std::uint64_t offset, std::uint64_t length, MpaFramerListener& out);
  // The handshake finished: how this direction's sender frames FPDUs.
  void set_params(bool markers, bool crc, MpaFramerListener& out);
  // Analyse without a handshake (capture starts mid-stream): find the first FPDU. With no
  // `crc` the framer finds the setting: a candidate with a matching CRC frames with CRC on;
  // without one it takes CRC off only on stronger evidence: FPDUs with zero CRC fields, each
  // starting where the previous one's ULPDU_Length ends, kCrcOffChain of them or filling whole
  // TCP segments.
  void start_mid_stream(bool markers, std::optional<bool> crc, MpaFramerListener& out);
  // A framer finding the CRC setting (now, or once start_mid_stream is called without one)
  // takes the one the other direction found: MPA negotiates one setting for both directions
  // (RFC 5044 §7.1.2). No effect on a framer that has a setting.
  void adopt_crc(bool crc, MpaFramerListener& out);
  // Stop framing (handshake failed or rejected, or a memory budget spent): what is buffered and
  // later octets are reported unframed, with `why`.
  void stop(MpaFramerListener& out, const char* why = "not framed (MPA handshake failed)");
  // End of input: report what is left over.
  void finish(MpaFramerListener& out);

  State state() const { return state_; }
  // Octets held: a partial FPDU, or while resynchronising or waiting for the MPA Reply.
  std::size_t buffered() const { return buf_.size(); }
  std::optional<std::uint64_t> s0() const { return s0_; }
  bool markers() const { return markers_; }
  bool crc() const { return crc_; }
  // Still finding the CRC setting (start_mid_stream without one, no FPDU found yet).
  bool detecting_crc() const { return detect_crc_; }
  // After finish(): framing was not found (again) by the end of input, when the framer never
  // framed an FPDU or spent its resync budget without finding a boundary. A short tail after a
  // gap that simply ran out is not reported.
  std::optional<LostFraming> lost_framing() const;

  // FPDUs a CRC-off candidate must chain before a framer finding the CRC setting takes it
  // (two at the end of input; fewer when they fill TCP segments exactly): without a CRC a sane
  // header is weak evidence.
  static constexpr std::size_t kCrcOffChain = 3;

 private:
  void process(MpaFramerListener& out);
  inline void run(MpaFramerListener& out);  // process()'s body, folded into feed() too
  bool try_reqrep(MpaFramerListener& out);
  inline bool try_fpdu(MpaFramerListener& out);  // folded into run(), its one caller
  bool try_resync(MpaFramerListener& out);
  // How the walker frames an FPDU starting at buffer index `index`.
  mpa::FpduWalkParams walk_params(std::size_t index) const;
  bool plausible_at(std::size_t index, bool need_next, bool* need_more) const;
  enum class Fit : std::uint8_t { no, yes, need_more };
  // One FPDU at `index` with a sane DDP/RDMAP header, framed with CRC `crc`: its CRC matches
  // (crc) or its CRC field is zero (!crc). *raw_len: its length on the wire.
  Fit fpdu_at(std::size_t index, bool crc, std::size_t* raw_len) const;
  // How many FPDUs (up to `want`) chain from `index` with CRC off; *ran_out when octets ended
  // the chain; *fills_segments when `index` is a TCP segment's first octet (`starts_segment`)
  // and the chain ends with the octets held.
  std::size_t crc_off_chain(std::size_t index, std::size_t want, bool starts_segment, bool* ran_out,
                            bool* fills_segments) const;
  std::uint64_t pos_of(std::size_t index) const { return buf_offset_ + index; }
  // Buffer index of the first start try_resync has not ruled out (resync_ruled_out_).
  std::size_t resync_from() const;
  bool is_marker_at(std::size_t index) const;
  inline void emit_pdu(RawPdu& pdu, std::size_t raw_len, MpaFramerListener& out);
  void emit_unframed(std::size_t raw_len, MpaFramerListener& out, const char* why);
  void consume(std::size_t n) {
    buf_.consume(n);
    buf_offset_ += n;
  }

  Limits limits_;
  State state_ = State::key;
  const char* off_reason_ = "";  // why octets are unframed in State::off
  bool markers_ = false;
  bool crc_ = false;
  std::optional<std::uint64_t> s0_;
  ConsumeBuffer buf_;
  std::uint64_t buf_offset_ = 0;  // stream offset of buf_[0]
  bool buf_started_ = false;
  // Slices of buf_ (frame, offset in frame, length), in order.
  std::vector<FrameSlice> slices_;
  std::vector<FrameSlice> spare_slices_;  // storage for the next RawPdu::slices
  std::uint64_t pending_skipped_ = 0;
  bool pending_resync_ = false;
  bool pending_after_gap_ = false;
  bool in_process_ = false;  // listener callbacks may change state but not re-enter
  bool mid_stream_ = false;
  bool finishing_ = false;  // end of input: no look-ahead past the last FPDU
  // An FPDU failed its CRC: the next one must start where its length said (else resync).
  bool check_after_bad_crc_ = false;
  bool detect_crc_ = false;  // start_mid_stream without a CRC setting: find it
  std::optional<bool> pending_crc_detected_;
  bool crc_by_peer_ = false;
  std::optional<bool> adopted_crc_;  // adopt_crc before start_mid_stream
  std::uint64_t fpdus_ = 0;
  std::uint64_t last_frame_ = 0;                // the newest frame fed
  std::optional<std::uint64_t> gave_up_frame_;  // resync budget first spent since the last FPDU
  // The search for an FPDU boundary (try_resync) has ruled out every start before this stream
  // position with octets it held, a decision more octets cannot change: each delivery tests
  // only the starts it has not tested yet, so a search through n octets held costs O(n), not
  // O(n) per segment that brings more (quadratic up to resync_buffer, 256 KiB by default).
  // Back to 0 (search from the oldest octet held) when what is searched for changes.
  std::uint64_t resync_ruled_out_ = 0;
  // try_fpdu's walk, kept between FPDUs (walk_fpdu resets every field): building and destroying
  // one per FPDU is measurable. Read only within try_fpdu.
  mpa::FpduWalk walk_;
  // try_fpdu's PDU, kept between FPDUs for the same reason (it carries three vectors, two
  // optionals and a DecodeError's strings). The listener does not re-enter this framer.
  RawPdu fpdu_;
  // fpdu_at's walk and scratch octets, kept for the same reason: a search for a boundary
  // tries a candidate per octet held. Read only within fpdu_at.
  mutable mpa::FpduWalk probe_walk_;
  mutable Bytes probe_scratch_;
};

}  // namespace ddpscope
