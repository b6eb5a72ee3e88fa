// SPDX-License-Identifier: GPL-2.0-or-later
// RDMAP codecs (RFC 5040 §4, RFC 7306): control byte, opcode table, Read Request, atomics,
// Immediate Data and Terminate (both the RFC and Linux siw's control-word layouts).
#include <array>
#include <string>

#include "ddpscope/wire/mpa.h"
#include "ddpscope/wire/rdmap.h"
#include "ddpscope/wire/terminate_error.h"

namespace ddpscope::wire {

namespace {

// Shift of a mask's lowest set bit.
constexpr int shift_of(std::uint32_t mask) {
  int s = 0;
  while (mask != 0 && (mask & 1u) == 0) {
    mask >>= 1;
    ++s;
  }
  return s;
}

// A field's value placed under, or taken from under, its mask in a control word.
template <auto Mask>
constexpr decltype(Mask) put(std::uint32_t value) {
  constexpr int kShift = shift_of(Mask);
  return static_cast<decltype(Mask)>((value << kShift) & Mask);
}
template <auto Mask>
constexpr std::uint32_t get(std::uint32_t word) {
  constexpr int kShift = shift_of(Mask);
  return (word & Mask) >> kShift;
}

}  // namespace

std::uint8_t RdmapControl::byte() const {
  return static_cast<std::uint8_t>(put<kRdmapVersionMask>(version) |
                                   put<kRdmapReservedMask>(reserved) |
                                   put<kRdmapOpcodeMask>(opcode));
}

DdpHeader untagged_header(Opcode op, std::uint32_t qn, std::uint32_t msn, std::uint32_t mo,
                          bool last, std::uint32_t rsvd_ulp1) {
  DdpHeader h;
  h.control.last = last;
  h.rsvd_ulp0 = RdmapControl{kRdmapVersion, 0, static_cast<std::uint8_t>(op)}.byte();
  h.rsvd_ulp1 = rsvd_ulp1;
  h.qn = qn;
  h.msn = msn;
  h.mo = mo;
  return h;
}

DdpHeader tagged_header(Opcode op, std::uint32_t stag, std::uint64_t to, bool last) {
  DdpHeader h;
  h.control.tagged = true;
  h.control.last = last;
  h.rsvd_ulp0 = RdmapControl{kRdmapVersion, 0, static_cast<std::uint8_t>(op)}.byte();
  h.stag = stag;
  h.to = to;
  return h;
}

namespace {

// RFC 5040 §4.1 table, extended by RFC 7306. QNs of the RFC 7306 opcodes are (verify).
const std::array<OpcodeInfo, kOpcodeCount> kOpcodes = {{
    {"RDMA Write", "rdma_write", true, true, std::nullopt, false},
    {"RDMA Read Request", "read_request", true, false, kQnReadRequest, false},
    {"RDMA Read Response", "read_response", true, true, std::nullopt, false},
    {"Send", "send", true, false, kQnSend, false},
    {"Send with Invalidate", "send_invalidate", true, false, kQnSend, false},
    {"Send with Solicited Event", "send_se", true, false, kQnSend, false},
    {"Send with SE and Invalidate", "send_se_invalidate", true, false, kQnSend, false},
    {"Terminate", "terminate", true, false, kQnTerminate, false},
    {"Immediate Data", "immediate_data", true, false, kQnSend, true},
    {"Immediate Data with SE", "immediate_data_se", true, false, kQnSend, true},
    {"Atomic Request", "atomic_request", true, false, kQnAtomicRequest, true},
    {"Atomic Response", "atomic_response", true, false, kQnAtomicResponse, true},
    {"Reserved (0xC)", "reserved_0xc", false, false, std::nullopt, false},
    {"Reserved (0xD)", "reserved_0xd", false, false, std::nullopt, false},
    {"Reserved (0xE)", "reserved_0xe", false, false, std::nullopt, false},
    {"Reserved (0xF)", "reserved_0xf", false, false, std::nullopt, false},
}};
const OpcodeInfo kInvalidOpcode{"Invalid opcode", "invalid", false, false, std::nullopt, false};

}  // namespace

const OpcodeInfo& opcode_info(std::uint8_t opcode) {
  return opcode < kOpcodeCount ? kOpcodes[opcode] : kInvalidOpcode;
}

// ---------------------------------------------------------------------------------------------
// Read Request, atomics, Immediate Data
// ---------------------------------------------------------------------------------------------

Result<ReadRequest> decode_read_request(ByteView body) {
  if (body.size() < ReadRequest::kSize) return Result<ReadRequest>::need_more(ReadRequest::kSize);
  namespace field = read_request_field;
  const std::uint8_t* p = body.data();
  ReadRequest q;
  q.sink_stag = load_be32(p + field::sink_stag.offset);
  q.sink_to = load_be64(p + field::sink_to.offset);
  q.size = load_be32(p + field::size.offset);
  q.source_stag = load_be32(p + field::source_stag.offset);
  q.source_to = load_be64(p + field::source_to.offset);
  return Result<ReadRequest>::ok(q, ReadRequest::kSize);
}

// The encoder appends the fields in table order.
static_assert(read_request_field::sink_stag.offset == 0 &&
              read_request_field::sink_stag.end() == read_request_field::sink_to.offset &&
              read_request_field::sink_to.end() == read_request_field::size.offset &&
              read_request_field::size.end() == read_request_field::source_stag.offset &&
              read_request_field::source_stag.end() == read_request_field::source_to.offset &&
              read_request_field::source_to.end() == ReadRequest::kSize);

void encode_read_request(const ReadRequest& q, ByteWriter& out) {
  out.be32(q.sink_stag);
  out.be64(q.sink_to);
  out.be32(q.size);
  out.be32(q.source_stag);
  out.be64(q.source_to);
}

// RFC 7306 Atomic Request. The first big-endian word is Reserved(28) then Atomic OpCode(4):
// the opcode sits in the LOW 4 bits of that word (verify against the RFC 7306 figure).
Result<AtomicRequest> decode_atomic_request(ByteView body) {
  if (body.size() < AtomicRequest::kSize) {
    return Result<AtomicRequest>::need_more(AtomicRequest::kSize);
  }
  namespace field = atomic_request_field;
  const std::uint8_t* p = body.data();
  AtomicRequest a;
  const std::uint32_t w0 = load_be32(p + field::opcode_word.offset);
  a.reserved = get<kAtomicReservedMask>(w0);
  a.atomic_opcode = static_cast<std::uint8_t>(get<kAtomicOpcodeMask>(w0));
  a.request_id = load_be32(p + field::request_id.offset);
  a.remote_stag = load_be32(p + field::remote_stag.offset);
  a.remote_to = load_be64(p + field::remote_to.offset);
  a.add_swap_data = load_be64(p + field::add_swap_data.offset);
  a.add_swap_mask = load_be64(p + field::add_swap_mask.offset);
  a.compare_data = load_be64(p + field::compare_data.offset);
  a.compare_mask = load_be64(p + field::compare_mask.offset);
  return Result<AtomicRequest>::ok(a, AtomicRequest::kSize);
}

std::uint32_t AtomicRequest::opcode_word() const {
  return put<kAtomicReservedMask>(reserved) | put<kAtomicOpcodeMask>(atomic_opcode);
}

// The encoder appends the fields in table order.
static_assert(
    atomic_request_field::opcode_word.offset == 0 &&
    atomic_request_field::opcode_word.end() == atomic_request_field::request_id.offset &&
    atomic_request_field::request_id.end() == atomic_request_field::remote_stag.offset &&
    atomic_request_field::remote_stag.end() == atomic_request_field::remote_to.offset &&
    atomic_request_field::remote_to.end() == atomic_request_field::add_swap_data.offset &&
    atomic_request_field::add_swap_data.end() == atomic_request_field::add_swap_mask.offset &&
    atomic_request_field::add_swap_mask.end() == atomic_request_field::compare_data.offset &&
    atomic_request_field::compare_data.end() == atomic_request_field::compare_mask.offset &&
    atomic_request_field::compare_mask.end() == AtomicRequest::kSize);

void encode_atomic_request(const AtomicRequest& a, ByteWriter& out) {
  out.be32(a.opcode_word());
  out.be32(a.request_id);
  out.be32(a.remote_stag);
  out.be64(a.remote_to);
  out.be64(a.add_swap_data);
  out.be64(a.add_swap_mask);
  out.be64(a.compare_data);
  out.be64(a.compare_mask);
}

std::string_view atomic_op_name(std::uint8_t op) {
  switch (op) {
    case static_cast<std::uint8_t>(AtomicOp::fetch_add):
      return "FetchAdd";
    case static_cast<std::uint8_t>(AtomicOp::compare_swap):
      return "CompareSwap";
    default:
      return "Reserved";  // 1 included (verify)
  }
}

Result<AtomicResponse> decode_atomic_response(ByteView body) {
  if (body.size() < AtomicResponse::kSize) {
    return Result<AtomicResponse>::need_more(AtomicResponse::kSize);
  }
  AtomicResponse a;
  a.request_id = load_be32(body.data() + atomic_response_field::request_id.offset);
  a.original_value = load_be64(body.data() + atomic_response_field::original_value.offset);
  return Result<AtomicResponse>::ok(a, AtomicResponse::kSize);
}

// The encoder appends the fields in table order.
static_assert(atomic_response_field::request_id.offset == 0 &&
              atomic_response_field::request_id.end() ==
                  atomic_response_field::original_value.offset &&
              atomic_response_field::original_value.end() == AtomicResponse::kSize);

void encode_atomic_response(const AtomicResponse& a, ByteWriter& out) {
  out.be32(a.request_id);
  out.be64(a.original_value);
}

Result<std::uint64_t> decode_immediate_data(ByteView body) {
  if (body.size() < kImmediateDataSize) {
    return Result<std::uint64_t>::need_more(kImmediateDataSize);
  }
  return Result<std::uint64_t>::ok(load_be64(body.data()), kImmediateDataSize);
}

// ---------------------------------------------------------------------------------------------
// Terminate (RFC 5040 §4.8)
// ---------------------------------------------------------------------------------------------

namespace {

constexpr std::uint8_t kSiwFlagM = 0x01;  // third octet, little-endian bit-field order
constexpr std::uint8_t kSiwFlagD = 0x02;
constexpr std::uint8_t kSiwFlagR = 0x04;

// siw declares Layer:4 EType:4 ECode:8 M:1 D:1 R:1 Rsvd:13 as bit fields; on a little-endian
// machine the first field takes the low bits of each octet.
TerminateControl read_siw(const std::uint8_t* p) {
  TerminateControl c;
  c.layer = p[0] & 0x0F;
  c.etype = static_cast<std::uint8_t>(p[0] >> 4);
  c.code = p[1];
  c.m = (p[2] & kSiwFlagM) != 0;
  c.d = (p[2] & kSiwFlagD) != 0;
  c.r = (p[2] & kSiwFlagR) != 0;
  c.reserved = static_cast<std::uint16_t>((p[2] >> 3) | (p[3] << 5));
  return c;
}

Result<Terminate> truncated(std::size_t offset, const char* what) {
  return Result<Terminate>::malformed("rdmap.terminate-truncated", offset,
                                      std::string("Terminate body ends inside the ") + what);
}

}  // namespace

std::uint32_t TerminateControl::rfc_word() const {
  std::uint32_t w = put<kTermLayerMask>(layer) | put<kTermEtypeMask>(etype) |
                    put<kTermCodeMask>(code) | put<kTermReservedMask>(reserved);
  if (m) w |= kTermFlagM;
  if (d) w |= kTermFlagD;
  if (r) w |= kTermFlagR;
  return w;
}

TerminateControl TerminateControl::from_rfc_word(std::uint32_t w) {
  TerminateControl c;
  c.layer = static_cast<std::uint8_t>(get<kTermLayerMask>(w));
  c.etype = static_cast<std::uint8_t>(get<kTermEtypeMask>(w));
  c.code = static_cast<std::uint8_t>(get<kTermCodeMask>(w));
  c.m = (w & kTermFlagM) != 0;
  c.d = (w & kTermFlagD) != 0;
  c.r = (w & kTermFlagR) != 0;
  c.reserved = static_cast<std::uint16_t>(get<kTermReservedMask>(w));
  return c;
}

Result<Terminate> decode_terminate(ByteView body, bool expect_siw) {
  if (body.size() < kTerminateControlSize) return truncated(body.size(), "control word");
  Terminate t;
  const std::uint8_t* p = body.data();
  t.rfc_reading = TerminateControl::from_rfc_word(load_be32(p + terminate_field::control.offset));
  const bool rfc_flags_clear = !t.rfc_reading.m && !t.rfc_reading.d && !t.rfc_reading.r;
  const bool only_siw_bits = (p[2] & 0x07) != 0 && (p[2] & 0x18) == 0 && p[3] == 0;
  if (rfc_flags_clear && only_siw_bits && body.size() > kTerminateControlSize) {
    t.layout = TerminateLayout::siw_bitfield;
    t.evidence = TerminateLayoutEvidence::siw_flags;
    t.control = read_siw(p);
  } else {
    t.control = t.rfc_reading;
    // No flag in either layout (siw sends no header with its version, opcode, CRC and IRD
    // errors): the layouts differ only in the nibble order of the first octet. Take siw's when
    // the RFC reading is no defined error (RFC 5040 §7 tables) and siw's is; otherwise the RFC
    // reading stands (both defined, e.g. 0x20 0x06: LLP / MPA / Insufficient IRD in RFC order,
    // RDMAP / Remote Operation / Unexpected OpCode in siw's: ambiguous, the RFC wins).
    const TerminateControl siw = read_siw(p);
    const bool no_flags = rfc_flags_clear && !siw.m && !siw.d && !siw.r;
    if (no_flags && t.rfc_reading.reserved == 0 && siw.reserved == 0 &&
        term_code_name(t.rfc_reading.layer, t.rfc_reading.etype, t.rfc_reading.code).empty() &&
        !term_code_name(siw.layer, siw.etype, siw.code).empty()) {
      t.layout = TerminateLayout::siw_bitfield;
      t.evidence = TerminateLayoutEvidence::rfc_undefined;
      t.control = siw;
    } else if (expect_siw && no_flags && t.rfc_reading.reserved == 0 && siw.reserved == 0 &&
               !term_code_name(siw.layer, siw.etype, siw.code).empty()) {
      t.layout = TerminateLayout::siw_bitfield;
      t.evidence = TerminateLayoutEvidence::siw_expected;
      t.control = siw;
    }
  }
  ByteReader r(body);
  r.take(kTerminateControlSize);
  if (t.control.d) {
    if (!r.has(2)) return truncated(r.offset(), "DDP Segment Length");
    t.ddp_segment_length = r.be16();
    auto h = decode_ddp_header(r.rest());
    if (!h) return truncated(r.offset(), "terminated DDP header");
    t.ddp_header = h.value();
    r.take(h.consumed());
  }
  if (t.control.r) {
    if (!r.has(kTerminateRdmapHeaderSize)) return truncated(r.offset(), "terminated RDMAP header");
    const ByteView raw = r.take(kTerminateRdmapHeaderSize);
    t.rdmap_header.assign(raw.begin(), raw.end());
    if (t.ddp_header && !t.ddp_header->control.tagged &&
        RdmapControl::from_byte(t.ddp_header->rsvd_ulp0).opcode ==
            static_cast<std::uint8_t>(Opcode::read_request)) {
      t.rdmap_read_request = decode_read_request(raw).value();
    }
  }
  t.body_size = r.offset();
  const std::size_t consumed = t.body_size;
  return Result<Terminate>::ok(std::move(t), consumed);
}

void encode_terminate(const Terminate& t, TerminateLayout layout, ByteWriter& out) {
  const TerminateControl& c = t.control;
  if (layout == TerminateLayout::rfc) {
    out.be32(c.rfc_word());
  } else {
    out.u8(static_cast<std::uint8_t>(((c.etype & 0x0F) << 4) | (c.layer & 0x0F)));
    out.u8(c.code);
    std::uint8_t b2 = static_cast<std::uint8_t>((c.reserved & 0x1F) << 3);
    if (c.m) b2 |= kSiwFlagM;
    if (c.d) b2 |= kSiwFlagD;
    if (c.r) b2 |= kSiwFlagR;
    out.u8(b2);
    out.u8(static_cast<std::uint8_t>((c.reserved >> 5) & 0xFF));
  }
  if (c.d) {
    out.be16(t.ddp_segment_length.value_or(0));
    encode_ddp_header(t.ddp_header.value_or(DdpHeader{}), out);
  }
  if (c.r) {
    if (t.rdmap_header.empty() && t.rdmap_read_request) {
      encode_read_request(*t.rdmap_read_request, out);
    } else {
      Bytes raw = t.rdmap_header;
      raw.resize(kTerminateRdmapHeaderSize, 0);
      out.bytes(raw);
    }
  }
}

}  // namespace ddpscope::wire
