// SPDX-License-Identifier: GPL-2.0-or-later
// RDMAP codecs (RFC 5040 §4, RFC 7306): control byte, opcode table, Read Request, atomics,
// Immediate Data and Terminate (both the RFC and Linux siw's control-word layouts).
#include <array>
#include <string>

#include "ddpscope/wire/mpa.h"
#include "ddpscope/wire/rdmap.h"

namespace ddpscope::wire {

std::uint8_t RdmapControl::byte() const {
  return static_cast<std::uint8_t>(((version & 0x03) << 6) | ((reserved & 0x03) << 4) |
                                   (opcode & 0x0F));
}

RdmapControl RdmapControl::from_byte(std::uint8_t b) {
  RdmapControl c;
  c.version = static_cast<std::uint8_t>(b >> 6);
  c.reserved = static_cast<std::uint8_t>((b >> 4) & 0x03);
  c.opcode = b & 0x0F;
  return c;
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
  ByteReader r(body);
  ReadRequest q;
  q.sink_stag = r.be32();
  q.sink_to = r.be64();
  q.size = r.be32();
  q.source_stag = r.be32();
  q.source_to = r.be64();
  return Result<ReadRequest>::ok(q, ReadRequest::kSize);
}

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
  ByteReader r(body);
  AtomicRequest a;
  const std::uint32_t w0 = r.be32();
  a.reserved = w0 >> 4;
  a.atomic_opcode = static_cast<std::uint8_t>(w0 & 0x0F);
  a.request_id = r.be32();
  a.remote_stag = r.be32();
  a.remote_to = r.be64();
  a.add_swap_data = r.be64();
  a.add_swap_mask = r.be64();
  a.compare_data = r.be64();
  a.compare_mask = r.be64();
  return Result<AtomicRequest>::ok(a, AtomicRequest::kSize);
}

void encode_atomic_request(const AtomicRequest& a, ByteWriter& out) {
  out.be32(((a.reserved & 0x0FFFFFFFu) << 4) | (a.atomic_opcode & 0x0Fu));
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
  ByteReader r(body);
  AtomicResponse a;
  a.request_id = r.be32();
  a.original_value = r.be64();
  return Result<AtomicResponse>::ok(a, AtomicResponse::kSize);
}

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

constexpr std::uint8_t kRfcFlagM = 0x80;  // third octet
constexpr std::uint8_t kRfcFlagD = 0x40;
constexpr std::uint8_t kRfcFlagR = 0x20;
constexpr std::uint8_t kSiwFlagM = 0x01;  // third octet, little-endian bit-field order
constexpr std::uint8_t kSiwFlagD = 0x02;
constexpr std::uint8_t kSiwFlagR = 0x04;

TerminateControl read_rfc(const std::uint8_t* p) {
  TerminateControl c;
  c.layer = static_cast<std::uint8_t>(p[0] >> 4);
  c.etype = p[0] & 0x0F;
  c.code = p[1];
  c.m = (p[2] & kRfcFlagM) != 0;
  c.d = (p[2] & kRfcFlagD) != 0;
  c.r = (p[2] & kRfcFlagR) != 0;
  c.reserved = static_cast<std::uint16_t>(((p[2] & 0x1F) << 8) | p[3]);
  return c;
}

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

Result<Terminate> decode_terminate(ByteView body) {
  if (body.size() < kTerminateControlSize) return truncated(body.size(), "control word");
  Terminate t;
  const std::uint8_t* p = body.data();
  t.rfc_reading = read_rfc(p);
  const bool rfc_flags_clear = !t.rfc_reading.m && !t.rfc_reading.d && !t.rfc_reading.r;
  const bool only_siw_bits = (p[2] & 0x07) != 0 && (p[2] & 0x18) == 0 && p[3] == 0;
  if (rfc_flags_clear && only_siw_bits && body.size() > kTerminateControlSize) {
    t.layout = TerminateLayout::siw_bitfield;
    t.control = read_siw(p);
  } else {
    t.control = t.rfc_reading;
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
    out.u8(static_cast<std::uint8_t>(((c.layer & 0x0F) << 4) | (c.etype & 0x0F)));
    out.u8(c.code);
    std::uint8_t b2 = static_cast<std::uint8_t>((c.reserved >> 8) & 0x1F);
    if (c.m) b2 |= kRfcFlagM;
    if (c.d) b2 |= kRfcFlagD;
    if (c.r) b2 |= kRfcFlagR;
    out.u8(b2);
    out.u8(static_cast<std::uint8_t>(c.reserved));
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
