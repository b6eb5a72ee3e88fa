// SPDX-License-Identifier: GPL-2.0-or-later
// The SCTP decoder and the Analyzer's SCTP LLP (engine_sctp.cpp) on scripted associations. The
// first octet picks IPv4/IPv6, UDP encapsulation and small caps; then each step is one packet:
//   op 0-1  raw octets after the common header (checksum fixed when op is 1)
//   op 2    one DATA chunk: TSN step, flags, stream id, PPID (16, 17 or other), user data
//   op 3    SACK with a cumulative TSN ack step
//   op 4    INIT / INIT ACK (adaptation indication when asked)
//   op 5    a DDP Stream Session Control message (function code, private data)
//   op 6    ABORT / SHUTDOWN / SHUTDOWN COMPLETE
// Beyond "no crash": the wire decoders' contracts on the raw packet, and the model's caps after
// finish() (findings kept, streams).
#include <cstdint>

#include "ddpscope/analysis/analyzer.h"
#include "ddpscope/net/packet.h"
#include "ddpscope/wire/sctp.h"
#include "fuzz_input.h"

namespace {

using namespace ddpscope;

void check_packet(ByteView p) {
  const auto r = wire::decode_sctp_packet(p);
  if (!r) {
    DDPSCOPE_FUZZ_CHECK(!r.error().code.empty() && r.error().offset <= p.size());
    return;
  }
  for (const auto& c : r->chunks) {
    DDPSCOPE_FUZZ_CHECK(c.offset + c.length <= p.size());
    fuzz::touch(c.value);
    if (auto d = wire::decode_sctp_data(c)) fuzz::touch(d->user_data);
    if (auto i = wire::decode_sctp_init(c)) (void)i->adaptation_code_point();
    (void)wire::decode_sctp_sack(c);
    (void)wire::decode_sctp_shutdown(c);
  }
  const auto s = wire::decode_ddp_session_control(p);
  if (s) {
    wire::DdpSessionControl m = s.value();
    m.enhanced_pd.reset();
    const Bytes again = wire::encode_ddp_session_control(m);
    DDPSCOPE_FUZZ_CHECK(again.size() == p.size() &&
                        std::equal(again.begin(), again.end(), p.begin()));
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  fuzz::FuzzInput in(data, size);
  const std::uint8_t opts = in.u8();
  AnalyzerOptions o;
  if (opts & 4) {
    o.limits.reassembly_window = 4096;
    o.limits.max_pending_total = 16384;
    o.limits.max_streams = 4;
    o.limits.max_findings = 64;
  }
  Analyzer an(o);
  net::SctpFrameSpec spec;
  spec.src = *net::Address::parse((opts & 1) ? "2001:db8::1" : "10.0.0.1");
  spec.dst = *net::Address::parse((opts & 1) ? "2001:db8::2" : "10.0.0.2");
  spec.over_udp = (opts & 2) != 0;
  std::array<std::uint32_t, 2> tsn{1, 1};
  std::array<std::uint32_t, 2> tags{0x11111111, 0x22222222};
  std::uint64_t frame = 0;
  int steps = 0;
  while (!in.empty() && steps++ < 4096) {
    const std::uint8_t op = in.u8();
    const int dir = op >> 7;
    Bytes chunks;
    bool fix = true;
    switch (op & 0x7) {
      case 0:
      case 1: {
        const ByteView raw = in.take(in.u8() * 4u);
        chunks.assign(raw.begin(), raw.end());
        fix = (op & 1) != 0;
        break;
      }
      case 2: {
        wire::SctpData d;
        const std::uint8_t step = in.u8();
        tsn[dir] += static_cast<std::int8_t>(step);
        d.tsn = tsn[dir]++;
        const std::uint8_t f = in.u8();
        d.beginning = f & 1;
        d.ending = f & 2;
        d.unordered = f & 4;
        d.stream_id = in.u8() & 3;
        const std::uint8_t p = in.u8();
        d.ppid = p < 160 ? wire::kPpidDdpSegment : p < 220 ? wire::kPpidDdpSessionControl : p;
        d.user_data = in.take(in.be16() & 0x0FFF);
        wire::encode_sctp_data(d, chunks);
        break;
      }
      case 3: {
        wire::SctpSack s;
        s.cumulative_tsn_ack = tsn[1 - dir] - static_cast<std::int8_t>(in.u8());
        wire::encode_sctp_sack(s, chunks);
        break;
      }
      case 4: {
        wire::SctpInit init;
        init.ack = dir == 1;
        init.initiate_tag = tags[dir];
        init.initial_tsn = tsn[dir] = in.be32();
        if (in.u8() & 1)
          init.parameters.push_back(wire::sctp_adaptation_parameter(wire::kAdaptationCodePointDdp));
        wire::encode_sctp_init(init, chunks);
        break;
      }
      case 5: {
        wire::DdpSessionControl m;
        m.function_code = in.u8() & 0xF;
        const ByteView pd = in.take(in.u8());
        m.private_data.assign(pd.begin(), pd.end());
        wire::SctpData d;
        d.beginning = d.ending = true;
        d.tsn = tsn[dir]++;
        d.stream_id = in.u8() & 3;
        d.ppid = wire::kPpidDdpSessionControl;
        const Bytes msg = wire::encode_ddp_session_control(m);
        d.user_data = msg;
        wire::encode_sctp_data(d, chunks);
        break;
      }
      case 6: {
        const std::uint8_t k = in.u8() % 3;
        if (k == 0) wire::encode_sctp_abort(false, {}, chunks);
        if (k == 1) wire::encode_sctp_shutdown(tsn[1 - dir] - 1, chunks);
        if (k == 2) wire::encode_sctp_shutdown_complete(false, chunks);
        break;
      }
      default:
        continue;
    }
    wire::SctpCommonHeader h;
    h.source_port = dir ? 7000 : 5000;
    h.destination_port = dir ? 5000 : 7000;
    h.verification_tag = tags[1 - dir];
    Bytes packet = wire::encode_sctp_packet(h, chunks);
    if (!fix && !packet.empty()) packet[8] ^= 0x01;
    check_packet(packet);
    check_packet(chunks);
    net::SctpFrameSpec s = spec;
    if (dir) std::swap(s.src, s.dst);
    const Bytes f = net::encode_sctp_frame(s, packet);
    const std::uint32_t wire_length = static_cast<std::uint32_t>(f.size());
    // Now and then a frame cut by the snaplen.
    const std::size_t cut = (op & 0x40) ? f.size() - std::min<std::size_t>(f.size(), 7) : f.size();
    ++frame;
    an.feed_frame(frame, static_cast<std::int64_t>(frame) * 1000, 1, ByteView(f).first(cut),
                  wire_length);
  }
  an.finish();
  const Model& m = an.model();
  DDPSCOPE_FUZZ_CHECK(m.findings.size() <= o.limits.max_findings);
  DDPSCOPE_FUZZ_CHECK(m.streams.size() <= o.limits.max_streams);
  return 0;
}
