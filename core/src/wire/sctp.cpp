// SPDX-License-Identifier: GPL-2.0-or-later
// SCTP codecs (RFC 9260 §3, §6.8; RFC 5061 §4.2.7) and the DDP Stream Session Control message
// (RFC 5043 §5, RFC 6581 §8).
#include "ddpscope/wire/sctp.h"

#include <string>

#include "ddpscope/common/crc32c.h"

namespace ddpscope::wire {

// ---------------------------------------------------------------------------------------------
// Checksum
// ---------------------------------------------------------------------------------------------

std::uint32_t sctp_checksum(ByteView packet) {
  Crc32c crc;
  if (packet.size() < kSctpCommonHeaderSize) {
    crc.update(packet);
    return crc.value();
  }
  static constexpr std::uint8_t kZero[4] = {0, 0, 0, 0};
  crc.update(packet.first(sctp_header_field::checksum.offset));
  crc.update(ByteView{kZero, 4});
  crc.update(packet.subspan(sctp_header_field::checksum.end()));
  return crc.value();
}

bool sctp_checksum_ok(ByteView packet) {
  if (packet.size() < kSctpCommonHeaderSize) return false;
  return mpa_crc_from_wire(&packet[sctp_header_field::checksum.offset]) == sctp_checksum(packet);
}

void sctp_write_checksum(std::vector<std::uint8_t>& packet) {
  if (packet.size() < kSctpCommonHeaderSize) return;
  mpa_crc_to_wire(sctp_checksum(packet), &packet[sctp_header_field::checksum.offset]);
}

// ---------------------------------------------------------------------------------------------
// Packet and chunks
// ---------------------------------------------------------------------------------------------

std::string_view sctp_chunk_name(std::uint8_t type) {
  switch (type) {
    case sctp_chunk::data:
      return "DATA";
    case sctp_chunk::init:
      return "INIT";
    case sctp_chunk::init_ack:
      return "INIT ACK";
    case sctp_chunk::sack:
      return "SACK";
    case sctp_chunk::heartbeat:
      return "HEARTBEAT";
    case sctp_chunk::heartbeat_ack:
      return "HEARTBEAT ACK";
    case sctp_chunk::abort:
      return "ABORT";
    case sctp_chunk::shutdown:
      return "SHUTDOWN";
    case sctp_chunk::shutdown_ack:
      return "SHUTDOWN ACK";
    case sctp_chunk::error:
      return "ERROR";
    case sctp_chunk::cookie_echo:
      return "COOKIE ECHO";
    case sctp_chunk::cookie_ack:
      return "COOKIE ACK";
    case sctp_chunk::shutdown_complete:
      return "SHUTDOWN COMPLETE";
    case sctp_chunk::forward_tsn:
      return "FORWARD TSN";
    default:
      return {};
  }
}

Result<SctpPacketView> decode_sctp_packet(ByteView packet) {
  using R = Result<SctpPacketView>;
  if (packet.size() < kSctpCommonHeaderSize) {
    return R::malformed("sctp.truncated", packet.size(),
                        "SCTP packet shorter than its 12-octet common header");
  }
  SctpPacketView view;
  view.header.source_port = be16(packet, sctp_header_field::source_port.offset);
  view.header.destination_port = be16(packet, sctp_header_field::destination_port.offset);
  view.header.verification_tag = be32(packet, sctp_header_field::verification_tag.offset);
  view.header.checksum = mpa_crc_from_wire(&packet[sctp_header_field::checksum.offset]);
  std::size_t at = sctp_header_field::chunks;
  if (at == packet.size()) {
    return R::malformed("sctp.no-chunks", at, "SCTP packet without chunks");
  }
  while (at < packet.size()) {
    if (packet.size() - at < kSctpChunkHeaderSize) {
      return R::malformed("sctp.chunk-length", at, "SCTP chunk header cut short");
    }
    if (view.chunks.size() == kSctpMaxChunksPerPacket) {
      return R::malformed("sctp.chunk-length", at, "more SCTP chunks than a packet can hold");
    }
    SctpChunkView c;
    c.type = packet[at + sctp_chunk_field::type.offset];
    c.flags = packet[at + sctp_chunk_field::flags.offset];
    c.length = be16(packet, at + sctp_chunk_field::length.offset);
    c.offset = at;
    if (c.length < kSctpChunkHeaderSize || c.length > packet.size() - at) {
      return R::malformed("sctp.chunk-length", at,
                          "SCTP chunk length " + std::to_string(c.length) +
                              " below 4 or past the end of the packet");
    }
    c.value = packet.subspan(at + kSctpChunkHeaderSize, c.length - kSctpChunkHeaderSize);
    view.chunks.push_back(c);
    const std::size_t padded = c.length + sctp_pad(c.length);
    if (padded > packet.size() - at) {
      // RFC 9260 §3.2: the sender pads every chunk, the last one included; a receiver that
      // finds the final padding missing still has the whole chunk.
      view.last_chunk_unpadded = true;
      break;
    }
    at += padded;
  }
  return R::ok(std::move(view), packet.size());
}

void encode_sctp_chunk(std::uint8_t type, std::uint8_t flags, ByteView value, Bytes& out) {
  ByteWriter w(out);
  w.u8(type);
  w.u8(flags);
  w.be16(static_cast<std::uint16_t>(kSctpChunkHeaderSize + value.size()));
  w.bytes(value);
  w.zeros(sctp_pad(kSctpChunkHeaderSize + value.size()));
}

Bytes encode_sctp_packet(const SctpCommonHeader& header, ByteView chunks) {
  Bytes out;
  out.reserve(kSctpCommonHeaderSize + chunks.size());
  ByteWriter w(out);
  w.be16(header.source_port);
  w.be16(header.destination_port);
  w.be32(header.verification_tag);
  w.zeros(4);
  w.bytes(chunks);
  sctp_write_checksum(out);
  return out;
}

// ---------------------------------------------------------------------------------------------
// DATA
// ---------------------------------------------------------------------------------------------

std::uint8_t SctpData::flags() const {
  std::uint8_t f = 0;
  if (ending) f |= kSctpDataFlagE;
  if (beginning) f |= kSctpDataFlagB;
  if (unordered) f |= kSctpDataFlagU;
  if (immediate) f |= kSctpDataFlagI;
  return f;
}

Result<SctpData> decode_sctp_data(const SctpChunkView& chunk) {
  using R = Result<SctpData>;
  if (chunk.type != sctp_chunk::data || chunk.length < kSctpDataHeaderSize) {
    return R::malformed("sctp.data-short", chunk.offset,
                        "SCTP DATA chunk shorter than its 16-octet header");
  }
  const ByteView v = chunk.value;  // starts at chunk offset 4
  constexpr std::size_t h = kSctpChunkHeaderSize;
  SctpData d;
  d.ending = (chunk.flags & kSctpDataFlagE) != 0;
  d.beginning = (chunk.flags & kSctpDataFlagB) != 0;
  d.unordered = (chunk.flags & kSctpDataFlagU) != 0;
  d.immediate = (chunk.flags & kSctpDataFlagI) != 0;
  d.tsn = be32(v, sctp_data_field::tsn.offset - h);
  d.stream_id = be16(v, sctp_data_field::stream_id.offset - h);
  d.ssn = be16(v, sctp_data_field::ssn.offset - h);
  d.ppid = be32(v, sctp_data_field::ppid.offset - h);
  d.user_data = v.subspan(sctp_data_field::user_data - h);
  return R::ok(d, chunk.length);
}

void encode_sctp_data(const SctpData& data, Bytes& out) {
  Bytes value;
  value.reserve(kSctpDataHeaderSize - kSctpChunkHeaderSize + data.user_data.size());
  ByteWriter w(value);
  w.be32(data.tsn);
  w.be16(data.stream_id);
  w.be16(data.ssn);
  w.be32(data.ppid);
  w.bytes(data.user_data);
  encode_sctp_chunk(sctp_chunk::data, data.flags(), value, out);
}

// ---------------------------------------------------------------------------------------------
// INIT / INIT ACK
// ---------------------------------------------------------------------------------------------

std::optional<std::uint32_t> SctpInit::adaptation_code_point() const {
  for (const SctpParameter& p : parameters) {
    if (p.type == sctp_param::adaptation_layer_indication && p.value.size() == 4) {
      return load_be32(p.value.data());
    }
  }
  return std::nullopt;
}

ByteView SctpInit::state_cookie() const {
  for (const SctpParameter& p : parameters) {
    if (p.type == sctp_param::state_cookie) return p.value;
  }
  return {};
}

SctpParameter sctp_adaptation_parameter(std::uint32_t code_point) {
  SctpParameter p;
  p.type = sctp_param::adaptation_layer_indication;
  ByteWriter w(p.value);
  w.be32(code_point);
  return p;
}

Result<SctpInit> decode_sctp_init(const SctpChunkView& chunk) {
  using R = Result<SctpInit>;
  if ((chunk.type != sctp_chunk::init && chunk.type != sctp_chunk::init_ack) ||
      chunk.length < kSctpInitFixedSize) {
    return R::malformed("sctp.init-short", chunk.offset,
                        "SCTP INIT / INIT ACK shorter than its 20-octet fixed part");
  }
  constexpr std::size_t h = kSctpChunkHeaderSize;
  const ByteView v = chunk.value;
  SctpInit init;
  init.ack = chunk.type == sctp_chunk::init_ack;
  init.initiate_tag = be32(v, sctp_init_field::initiate_tag.offset - h);
  init.a_rwnd = be32(v, sctp_init_field::a_rwnd.offset - h);
  init.outbound_streams = be16(v, sctp_init_field::outbound_streams.offset - h);
  init.inbound_streams = be16(v, sctp_init_field::inbound_streams.offset - h);
  init.initial_tsn = be32(v, sctp_init_field::initial_tsn.offset - h);
  std::size_t at = sctp_init_field::parameters - h;
  while (at < v.size()) {
    if (v.size() - at < 4) {
      return R::malformed("sctp.param-length", at + h, "SCTP parameter header cut short");
    }
    const std::uint16_t type = be16(v, at);
    const std::uint16_t len = be16(v, at + 2);
    if (len < 4 || len > v.size() - at) {
      return R::malformed(
          "sctp.param-length", at + h,
          "SCTP parameter length " + std::to_string(len) + " below 4 or past the end of the chunk");
    }
    if (type == sctp_param::adaptation_layer_indication && len != 8) {
      return R::malformed("sctp.param-length", at + h,
                          "Adaptation Layer Indication parameter is not 8 octets long");
    }
    SctpParameter p;
    p.type = type;
    const ByteView pv = v.subspan(at + 4, len - 4);
    p.value.assign(pv.begin(), pv.end());
    init.parameters.push_back(std::move(p));
    at += len + sctp_pad(len);  // the last parameter's padding may be cut by the chunk length
  }
  return R::ok(std::move(init), chunk.length);
}

void encode_sctp_init(const SctpInit& init, Bytes& out) {
  Bytes value;
  ByteWriter w(value);
  w.be32(init.initiate_tag);
  w.be32(init.a_rwnd);
  w.be16(init.outbound_streams);
  w.be16(init.inbound_streams);
  w.be32(init.initial_tsn);
  for (std::size_t i = 0; i < init.parameters.size(); ++i) {
    const SctpParameter& p = init.parameters[i];
    const std::size_t len = 4 + p.value.size();
    w.be16(p.type);
    w.be16(static_cast<std::uint16_t>(len));
    w.bytes(p.value);
    // RFC 9260 §3.2.1: the padding of the last parameter is not counted in the chunk length;
    // encode_sctp_chunk pads the chunk itself.
    if (i + 1 < init.parameters.size()) w.zeros(sctp_pad(len));
  }
  encode_sctp_chunk(init.ack ? sctp_chunk::init_ack : sctp_chunk::init, 0, value, out);
}

// ---------------------------------------------------------------------------------------------
// SACK
// ---------------------------------------------------------------------------------------------

Result<SctpSack> decode_sctp_sack(const SctpChunkView& chunk) {
  using R = Result<SctpSack>;
  const ByteView v = chunk.value;
  if (chunk.type != sctp_chunk::sack || v.size() < 12) {
    return R::malformed("sctp.sack-short", chunk.offset, "SCTP SACK shorter than 16 octets");
  }
  SctpSack s;
  s.cumulative_tsn_ack = be32(v, 0);
  s.a_rwnd = be32(v, 4);
  const std::size_t gaps = be16(v, 8);
  const std::size_t dups = be16(v, 10);
  if (v.size() - 12 < gaps * 4 + dups * 4) {
    return R::malformed("sctp.sack-short", chunk.offset,
                        "SCTP SACK counts more gap blocks and duplicate TSNs than it holds");
  }
  std::size_t at = 12;
  for (std::size_t i = 0; i < gaps; ++i, at += 4)
    s.gap_blocks.push_back({be16(v, at), be16(v, at + 2)});
  for (std::size_t i = 0; i < dups; ++i, at += 4)
    s.duplicate_tsns.push_back(be32(v, at));
  return R::ok(std::move(s), chunk.length);
}

void encode_sctp_sack(const SctpSack& sack, Bytes& out) {
  Bytes value;
  ByteWriter w(value);
  w.be32(sack.cumulative_tsn_ack);
  w.be32(sack.a_rwnd);
  w.be16(static_cast<std::uint16_t>(sack.gap_blocks.size()));
  w.be16(static_cast<std::uint16_t>(sack.duplicate_tsns.size()));
  for (const SctpGapBlock& g : sack.gap_blocks) {
    w.be16(g.start);
    w.be16(g.end);
  }
  for (std::uint32_t t : sack.duplicate_tsns)
    w.be32(t);
  encode_sctp_chunk(sctp_chunk::sack, 0, value, out);
}

// ---------------------------------------------------------------------------------------------
// ABORT, SHUTDOWN*, COOKIE*
// ---------------------------------------------------------------------------------------------

void encode_sctp_abort(bool t_flag, ByteView error_causes, Bytes& out) {
  encode_sctp_chunk(sctp_chunk::abort, t_flag ? kSctpFlagT : 0, error_causes, out);
}

void encode_sctp_shutdown(std::uint32_t cumulative_tsn_ack, Bytes& out) {
  Bytes value;
  ByteWriter(value).be32(cumulative_tsn_ack);
  encode_sctp_chunk(sctp_chunk::shutdown, 0, value, out);
}

void encode_sctp_shutdown_ack(Bytes& out) {
  encode_sctp_chunk(sctp_chunk::shutdown_ack, 0, {}, out);
}

void encode_sctp_shutdown_complete(bool t_flag, Bytes& out) {
  encode_sctp_chunk(sctp_chunk::shutdown_complete, t_flag ? kSctpFlagT : 0, {}, out);
}

void encode_sctp_cookie_echo(ByteView cookie, Bytes& out) {
  encode_sctp_chunk(sctp_chunk::cookie_echo, 0, cookie, out);
}

void encode_sctp_cookie_ack(Bytes& out) {
  encode_sctp_chunk(sctp_chunk::cookie_ack, 0, {}, out);
}

Result<std::uint32_t> decode_sctp_shutdown(const SctpChunkView& chunk) {
  using R = Result<std::uint32_t>;
  if (chunk.type != sctp_chunk::shutdown || chunk.length != 8) {
    return R::malformed("sctp.shutdown-short", chunk.offset, "SCTP SHUTDOWN is not 8 octets");
  }
  return R::ok(be32(chunk.value, 0), chunk.length);
}

// ---------------------------------------------------------------------------------------------
// DDP Stream Session Control
// ---------------------------------------------------------------------------------------------

Result<DdpSctpMessage> decode_ddp_sctp_message(ByteView user_message) {
  using R = Result<DdpSctpMessage>;
  if (user_message.size() < kDdpSsnSize) {
    return R::malformed("sctp.message-short", user_message.size(),
                        "user message of " + std::to_string(user_message.size()) +
                            " octets is shorter than its DDP-SSN (RFC 5043 §5.2.1)");
  }
  return R::ok(DdpSctpMessage{be16(user_message, 0), user_message.subspan(kDdpSsnSize)},
               user_message.size());
}

Bytes encode_ddp_sctp_message(std::uint16_t ddp_ssn, ByteView body) {
  Bytes out;
  out.reserve(kDdpSsnSize + body.size());
  ByteWriter w(out);
  w.be16(ddp_ssn);
  w.bytes(body);
  return out;
}

DdpSessionKind ddp_session_kind(std::uint16_t fn) {
  switch (fn) {
    case ddp_session_fn::initiate:
    case ddp_session_fn::enhanced_initiate:
      return DdpSessionKind::initiate;
    case ddp_session_fn::accept:
    case ddp_session_fn::enhanced_accept:
      return DdpSessionKind::accept;
    case ddp_session_fn::reject:
    case ddp_session_fn::enhanced_reject:
      return DdpSessionKind::reject;
    case ddp_session_fn::terminate:
      return DdpSessionKind::terminate;
    default:
      return DdpSessionKind::unknown;
  }
}

bool ddp_session_is_enhanced(std::uint16_t fn) {
  return fn == ddp_session_fn::enhanced_initiate || fn == ddp_session_fn::enhanced_accept ||
         fn == ddp_session_fn::enhanced_reject;
}

std::string_view ddp_session_function_name(std::uint16_t fn) {
  switch (fn) {
    case ddp_session_fn::initiate:
      return "Session Initiate";
    case ddp_session_fn::accept:
      return "Session Accept";
    case ddp_session_fn::reject:
      return "Session Reject";
    case ddp_session_fn::terminate:
      return "Session Terminate";
    case ddp_session_fn::enhanced_initiate:
      return "Enhanced Session Initiate";
    case ddp_session_fn::enhanced_accept:
      return "Enhanced Session Accept";
    case ddp_session_fn::enhanced_reject:
      return "Enhanced Session Reject";
    default:
      return {};
  }
}

ByteView DdpSessionControl::ulp_private_data() const {
  ByteView pd{private_data};
  if (enhanced_pd && pd.size() >= MpaEnhancedPd::kSize) return pd.subspan(MpaEnhancedPd::kSize);
  return pd;
}

Result<DdpSessionControl> decode_ddp_session_control(ByteView message) {
  using R = Result<DdpSessionControl>;
  if (message.size() < kDdpSessionControlHeaderSize) {
    return R::malformed("sctp.session-short", message.size(),
                        "DDP Stream Session Control message of " + std::to_string(message.size()) +
                            " octets (the DDP-SSN and the function code take 4)");
  }
  DdpSessionControl m;
  m.ddp_ssn = be16(message, ddp_session_field::ddp_ssn.offset);
  m.function_code = be16(message, ddp_session_field::function_code.offset);
  const ByteView pd = message.subspan(ddp_session_field::private_data);
  m.private_data.assign(pd.begin(), pd.end());
  if (ddp_session_is_enhanced(m.function_code) && pd.size() >= MpaEnhancedPd::kSize) {
    m.enhanced_pd = decode_mpa_enhanced_pd(pd.data());
  }
  return R::ok(std::move(m), message.size());
}

Bytes encode_ddp_session_control(const DdpSessionControl& message) {
  Bytes out;
  ByteWriter w(out);
  w.be16(message.ddp_ssn);
  w.be16(message.function_code);
  if (message.enhanced_pd) encode_mpa_enhanced_pd(*message.enhanced_pd, w);
  w.bytes(message.private_data);
  return out;
}

}  // namespace ddpscope::wire
