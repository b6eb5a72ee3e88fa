// SPDX-License-Identifier: GPL-2.0-or-later
// iSER (RFC 7145): header and BHS codecs, and the advertisement decoder (see iser.h for the
// wire layout).
#include "ddpscope/ulp/iser.h"

#include <algorithm>

#include "ddpscope/ddp/rules.h"
#include "ddpscope/wire/rdmap.h"

namespace ddpscope::ulp {
namespace {

// The opcodes an initiator sends and a target sends (RFC 7143 §11); others are no iSCSI.
bool initiator_opcode(std::uint8_t op) {
  return op <= iscsi_opcode::logout_request || op == iscsi_opcode::snack;
}
bool target_opcode(std::uint8_t op) {
  return (op >= iscsi_opcode::nop_in && op <= iscsi_opcode::logout_response) ||
         op == iscsi_opcode::r2t || op == iscsi_opcode::async_message || op == iscsi_opcode::reject;
}

// One "Key=value" of a Login PDU's data segment (NUL-separated text, RFC 7143 §6), printable.
std::string text_key(ByteView data, std::string_view key) {
  std::size_t i = 0;
  while (i < data.size()) {
    std::size_t end = i;
    while (end < data.size() && data[end] != 0)
      ++end;
    const std::string_view kv(reinterpret_cast<const char*>(data.data() + i), end - i);
    if (kv.size() > key.size() && kv.substr(0, key.size()) == key && kv[key.size()] == '=') {
      std::string v;
      for (char c : kv.substr(key.size() + 1).substr(0, 223))  // iSCSI names: 223 octets
        v.push_back(c >= 0x20 && c < 0x7F ? c : '?');
      return v;
    }
    i = end + 1;
  }
  return {};
}

}  // namespace

std::optional<IserHeader> decode_iser_header(ByteView m) {
  if (m.size() < 4) return std::nullopt;
  IserHeader h;
  h.opcode = static_cast<std::uint8_t>(m[0] >> 4);
  switch (h.opcode) {
    case iser_opcode::control:
      if (m.size() < kIserHeaderSize) return std::nullopt;
      if ((m[0] & 0x03) != 0 || m[1] != 0 || m[2] != 0 || m[3] != 0) return std::nullopt;
      h.write_valid = m[0] & 0x08;
      h.read_valid = m[0] & 0x04;
      h.write_stag = be32(m, 4);
      h.write_base = be64(m, 8);
      h.read_stag = be32(m, 16);
      h.read_base = be64(m, 20);
      return h;
    case iser_opcode::hello:
    case iser_opcode::hello_reply:
      if (h.opcode == iser_opcode::hello && (m[0] & 0x0F) != 0) return std::nullopt;
      if (h.opcode == iser_opcode::hello_reply && (m[0] & 0x0E) != 0) return std::nullopt;
      h.reject = h.opcode == iser_opcode::hello_reply && (m[0] & 0x01);
      h.max_version = static_cast<std::uint8_t>(m[1] >> 4);
      h.min_or_cur_version = static_cast<std::uint8_t>(m[1] & 0x0F);
      h.ird_or_ord = static_cast<std::uint16_t>(be16(m, 2));
      return h;
    default:
      return std::nullopt;
  }
}

Bytes encode_iser_header(const IserHeader& h) {
  Bytes b;
  ByteWriter w(b);
  if (h.opcode == iser_opcode::control) {
    w.u8(static_cast<std::uint8_t>(h.opcode << 4 | (h.write_valid ? 0x08 : 0) |
                                   (h.read_valid ? 0x04 : 0)));
    w.zeros(3);
    w.be(h.write_stag, 4);
    w.be(h.write_base, 8);
    w.be(h.read_stag, 4);
    w.be(h.read_base, 8);
    return b;
  }
  w.u8(static_cast<std::uint8_t>(h.opcode << 4 | (h.reject ? 0x01 : 0)));
  w.u8(static_cast<std::uint8_t>(h.max_version << 4 | (h.min_or_cur_version & 0x0F)));
  w.be(h.ird_or_ord, 2);
  w.zeros(kIserHeaderSize - 4);
  return b;
}

std::optional<IscsiBhs> decode_iscsi_bhs(ByteView p) {
  if (p.size() < kIscsiBhsSize) return std::nullopt;
  IscsiBhs b;
  b.opcode = p[0] & 0x3F;
  b.immediate = p[0] & 0x40;
  if (p[0] & 0x80) return std::nullopt;  // reserved
  b.flags = p[1];
  b.response = p[2];
  b.status = p[3];
  b.ahs_words = p[4];
  b.data_length = be24(p, 5);
  b.lun = be64(p, 8);
  b.itt = be32(p, 16);
  b.word20 = be32(p, 20);
  b.cmdsn = be32(p, 24);
  b.bidi_residual = be32(p, 40);
  b.residual = be32(p, 44);
  std::copy_n(p.begin() + 32, 16, b.cdb.begin());
  return b;
}

Bytes encode_iscsi_bhs(const IscsiBhs& b) {
  Bytes out;
  ByteWriter w(out);
  w.u8(static_cast<std::uint8_t>((b.immediate ? 0x40 : 0) | (b.opcode & 0x3F)));
  w.u8(b.flags);
  w.u8(b.response);
  w.u8(b.status);
  w.u8(b.ahs_words);
  w.be(b.data_length & 0xFFFFFF, 3);
  w.be(b.lun, 8);
  w.be(b.itt, 4);
  w.be(b.word20, 4);
  w.be(b.cmdsn, 4);
  if (b.opcode == iscsi_opcode::scsi_response) {
    w.zeros(12);  // ExpCmdSN, MaxCmdSN, ExpDataSN
    w.be(b.bidi_residual, 4);
    w.be(b.residual, 4);
  } else {
    w.zeros(4);  // ExpStatSN
    for (std::uint8_t c : b.cdb)
      w.u8(c);
  }
  return out;
}

std::string scsi_cdb_name(std::uint8_t op) {
  switch (op) {
    case 0x00:
      return "TEST UNIT READY";
    case 0x03:
      return "REQUEST SENSE";
    case 0x08:
      return "READ(6)";
    case 0x0A:
      return "WRITE(6)";
    case 0x12:
      return "INQUIRY";
    case 0x1A:
      return "MODE SENSE(6)";
    case 0x25:
      return "READ CAPACITY(10)";
    case 0x28:
      return "READ(10)";
    case 0x2A:
      return "WRITE(10)";
    case 0x2F:
      return "VERIFY(10)";
    case 0x35:
      return "SYNCHRONIZE CACHE(10)";
    case 0x41:
      return "WRITE SAME(10)";
    case 0x42:
      return "UNMAP";
    case 0x5A:
      return "MODE SENSE(10)";
    case 0x88:
      return "READ(16)";
    case 0x89:
      return "COMPARE AND WRITE";
    case 0x8A:
      return "WRITE(16)";
    case 0x93:
      return "WRITE SAME(16)";
    case 0x9E:
      return "SERVICE ACTION IN(16)";
    case 0xA0:
      return "REPORT LUNS";
    case 0xA8:
      return "READ(12)";
    case 0xAA:
      return "WRITE(12)";
    default:
      return "opcode " + hex_number(op);
  }
}

std::string iser_command_name(const IscsiBhs& cmd) {
  // The LUN's first level (SAM-5 single-level addressing, octets 0..1) is what initiators use.
  const std::uint64_t lun = (cmd.lun >> 48) & 0x3FFF;
  return "SCSI " + scsi_cdb_name(cmd.cdb[0]) + " ITT " + hex_number(cmd.itt) + " LUN " +
         std::to_string(lun);
}

std::optional<std::uint32_t> iscsi_bidi_read_length(ByteView ahs) {
  // Each AHS: be16 AHSLength (octets of the specific field), octet AHSType, then the field,
  // padded to 4 octets (RFC 7143 §11.2.2).
  std::size_t at = 0;
  for (int n = 0; n < 64 && at + 4 <= ahs.size(); ++n) {
    const std::size_t len = be16(ahs, at);
    const std::uint8_t type = ahs[at + 2];
    if (type == 0x02 && len == 5 && at + 8 <= ahs.size()) return be32(ahs, at + 4);
    at += 3 + len;
    at = (at + 3) & ~std::size_t{3};
  }
  return std::nullopt;
}

std::string IserStream::describe() const {
  if (!recognised) return {};
  std::string s = "by " + evidence;
  if (hello)
    s += "; Hello MaxVer " + std::to_string(hello->max_version) + " MinVer " +
         std::to_string(hello->min_or_cur_version) + " IRD " + std::to_string(hello->ird_or_ord);
  if (hello_reply)
    s += std::string("; HelloReply ") + (hello_reply->reject ? "rejected, " : "") + "CurVer " +
         std::to_string(hello_reply->min_or_cur_version) + " ORD " +
         std::to_string(hello_reply->ird_or_ord);
  if (!initiator_name.empty()) s += "; initiator " + initiator_name;
  if (!target_name.empty()) s += ", target " + target_name;
  return s;
}

std::unique_ptr<UlpStreamState> IserDecoder::new_stream() const {
  return std::make_unique<IserStream>();
}

void IserDecoder::setup(UlpStreamState* state, const UlpSetup& setup) const {
  auto* st = static_cast<IserStream*>(state);
  // The iSER CM REQ Message: 4 octets, ZBVA (80h) and SIE (40h) bits of octet 0 (Linux
  // struct iser_cm_hdr; the RFC's section not re-checked).
  if (setup.request && setup.request->size() == 4) {
    const Bytes& pd = *setup.request;
    if ((pd[0] & 0x3F) == 0 && pd[1] == 0 && pd[2] == 0 && pd[3] == 0) {
      st->cm_hint = true;
      st->initiator = setup.initiator;
    }
  }
}

namespace {
// The rest of decode, out of line: most Sends of a stream that is not this ULP are rejected by
// decode's first rules, which then run without this part's stack frame (issue 43).
[[gnu::noinline]] void decode_iser_body(const AdvertContext& ctx, IserStream* st,
                                        const std::optional<IserHeader>& h, ByteView message,
                                        bool first_of_sender, bool senders_known, UlpEvents& out);
}  // namespace

void IserDecoder::decode(const AdvertContext& ctx, UlpStreamState* state, ByteView message,
                         UlpEvents& out) const {
  auto* st = static_cast<IserStream*>(state);
  if (!wire::opcode_is_send_family(ctx.opcode)) return;
  // The stream's first two senders, noted from every message. Whether this is its sender's
  // first message matters to a Hello alone: once both are known it is looked up there.
  const bool senders_known = st->senders.size() >= 2;
  bool first_of_sender = false;
  if (!senders_known) {
    first_of_sender =
        std::find(st->senders.begin(), st->senders.end(), ctx.sender) == st->senders.end();
    if (first_of_sender) st->senders.push_back(ctx.sender);
  }
  const auto h = decode_iser_header(message);
  if (!h) return;
  decode_iser_body(ctx, st, h, message, first_of_sender, senders_known, out);
}

// An iSCSI connection begins with its login (RFC 7143 §6): over iSER the initiator's first
// message is the Login Request in an iSER control header, or, after a login in streaming mode,
// the iSER Hello (RFC 7145 §5.1). A Hello is claimed only with a hint (decode), which keeps the
// decoder asked anyway: the port, the iSER CM private data.
bool IserDecoder::may_open(const AdvertContext& ctx, const UlpStreamState* state,
                           ByteView first) const {
  const auto* st = static_cast<const IserStream*>(state);
  if (st->cm_hint || ctx.uses_port(kIscsiPort)) return true;
  const auto h = decode_iser_header(first);
  if (!h) return false;
  if (h->opcode == iser_opcode::hello) return true;
  if (h->opcode != iser_opcode::control) return false;
  const auto bhs = decode_iscsi_bhs(first.subspan(kIserHeaderSize));
  return bhs && bhs->opcode == iscsi_opcode::login_request;
}

namespace {

void decode_iser_body(const AdvertContext& ctx, IserStream* st, const std::optional<IserHeader>& h,
                      ByteView message, bool first_of_sender, bool senders_known, UlpEvents& out) {
  if (h->opcode == iser_opcode::hello || h->opcode == iser_opcode::hello_reply) {
    // Hello is the initiator's first message of an iSER connection whose login was in
    // streaming mode, HelloReply the target's answer (RFC 7145 §5.1). Four octets are weak
    // evidence (any Send may start 0x20): taken only as its sender's first message, on a
    // stream whose start the capture holds, with a hint (port 3260, iSER CM private data) or
    // a Login; a HelloReply only after the peer's Hello.
    if (senders_known)
      first_of_sender =
          std::find(st->senders.begin(), st->senders.end(), ctx.sender) == st->senders.end();
    const bool hinted = st->recognised || st->cm_hint || ctx.uses_port(kIscsiPort);
    const bool hello = h->opcode == iser_opcode::hello;
    if (!first_of_sender || !ctx.from_initiator || !hinted) return;
    if (hello ? st->hello.has_value() : !st->hello || st->hello_reply) return;
    if (!st->recognised) {
      st->recognised = true;
      st->evidence = hello ? "iSER Hello" : "iSER HelloReply";
    }
    if (hello) {
      st->hello = h;
      if (!st->initiator) st->initiator = ctx.sender;
    } else {
      st->hello_reply = h;
      if (!st->initiator) st->initiator = ctx.receiver;
    }
    return;
  }
  const ByteView pdu = message.subspan(kIserHeaderSize);
  const auto bhs = decode_iscsi_bhs(pdu);
  if (!bhs) return;
  // Who is the initiator: the set-up's or the first PDU's word; mid-stream, the opcode's.
  bool from_initiator = initiator_opcode(bhs->opcode);
  if (st->initiator)
    from_initiator = *st->initiator == ctx.sender;
  else if (ctx.from_initiator)
    from_initiator = *ctx.from_initiator;
  if (from_initiator ? !initiator_opcode(bhs->opcode) : !target_opcode(bhs->opcode)) return;
  if (!st->recognised) {
    const bool login =
        bhs->opcode == iscsi_opcode::login_request || bhs->opcode == iscsi_opcode::login_response;
    const bool port = ctx.uses_port(kIscsiPort);
    if (!login && !port && !st->cm_hint) return;  // content alone, short of a Login
    st->recognised = true;
    st->evidence = login  ? "iSCSI Login over iSER"
                   : port ? "port 3260 and an iSER-framed iSCSI PDU"
                          : "iSER CM private data and an iSER-framed iSCSI PDU";
  }
  if (!st->initiator) st->initiator = from_initiator ? ctx.sender : ctx.receiver;
  const std::size_t data_at = kIscsiBhsSize + 4u * bhs->ahs_words;
  if (bhs->opcode == iscsi_opcode::login_request && pdu.size() > data_at) {
    const ByteView data =
        pdu.subspan(data_at, std::min<std::size_t>(bhs->data_length, pdu.size() - data_at));
    if (auto n = text_key(data, "InitiatorName"); !n.empty()) st->initiator_name = n;
    if (auto n = text_key(data, "TargetName"); !n.empty()) st->target_name = n;
    return;
  }
  if (bhs->opcode == iscsi_opcode::scsi_response) {
    UlpCompletion c;
    c.id = bhs->itt;
    c.success = bhs->response == 0 && bhs->status == 0;
    if (!c.success)
      c.status = "response " + hex_number(bhs->response) + " status " + hex_number(bhs->status);
    // A residual underflow on a unidirectional command: the target moved that much less.
    if ((bhs->flags & IscsiBhs::kUnderflow) && !(bhs->flags & IscsiBhs::kBidiUnderflow) &&
        !(bhs->flags & IscsiBhs::kBidiOverflow))
      c.residual = bhs->residual;
    out.completions.push_back(std::move(c));
    return;
  }
  if (bhs->opcode != iscsi_opcode::scsi_command) return;
  UlpCommand cmd;
  cmd.id = bhs->itt;
  cmd.name = iser_command_name(*bhs);
  cmd.operation = "SCSI " + scsi_cdb_name(bhs->cdb[0]);
  const bool read = bhs->flags & IscsiBhs::kRead;
  const bool write = bhs->flags & IscsiBhs::kWrite;
  const std::uint32_t edtl = bhs->word20;
  if (read && h->read_valid) {
    std::optional<std::uint32_t> len = edtl;
    if (write) {
      const std::size_t ahs_len =
          std::min<std::size_t>(4u * bhs->ahs_words, pdu.size() - kIscsiBhsSize);
      len = iscsi_bidi_read_length(pdu.subspan(kIscsiBhsSize, ahs_len));
    }
    if (!len) cmd.partial = true;
    if (len && *len > 0) {
      AdvertisedRegion r;
      r.stag = h->read_stag;
      r.base = h->read_base;
      r.length = *len;
      r.owner = ctx.sender.addr;
      r.access = ddp::access::remote_write;
      r.invalidate = true;
      cmd.regions.push_back(r);
    }
  }
  if (write && h->write_valid) {
    // Solicited data only: the Write Base Offset is past the unsolicited data, immediate data
    // in this PDU and, without F, Data-Out PDUs still to come (their length not known here:
    // the region is then an upper bound and the transfer is not judged).
    const std::uint32_t immediate = std::min(bhs->data_length, edtl);
    if (!(bhs->flags & IscsiBhs::kFinal)) cmd.partial = true;
    if (edtl > immediate) {
      AdvertisedRegion r;
      r.stag = h->write_stag;
      r.base = h->write_base;
      r.length = edtl - immediate;
      r.owner = ctx.sender.addr;
      r.access = ddp::access::remote_read;
      r.invalidate = true;
      cmd.regions.push_back(r);
    }
  }
  out.commands.push_back(std::move(cmd));
}

}  // namespace

}  // namespace ddpscope::ulp
