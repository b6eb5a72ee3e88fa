// SPDX-License-Identifier: GPL-2.0-or-later
// The engine (Analyzer) fed a script of TCP segments in both directions (engine_script.h):
// reassembly, MPA framing, DDP placement and RDMAP checks on whatever order and content the
// fuzzer picks. Every PDU view handed to the observer is read in full (ASan sees dangling
// views), and the model must respect the caps it was given.
#include <cstdint>

#include "ddpscope/analysis/analyzer.h"
#include "ddpscope/wire/mpa.h"
#include "ddpscope/wire/rdmap.h"
#include "engine_script.h"
#include "fuzz_input.h"

namespace {

using namespace ddpscope;

class TouchingObserver : public AnalysisObserver {
 public:
  explicit TouchingObserver(const Model& m) : model_(m) {}
  void on_pdu(const PduEvent& ev) override {
    sum_ += fuzz::touch(ev.raw) + fuzz::touch(ev.ulpdu);
    if (ev.ddp) sum_ += fuzz::touch(ev.ddp->payload);
    std::uint64_t sliced = 0;
    for (const auto& s : ev.slices)
      sliced += s.length;
    DDPSCOPE_FUZZ_CHECK(sliced == ev.raw.size());
    DDPSCOPE_FUZZ_CHECK(ev.marker_offsets.size() == ev.markers.size());
    for (std::size_t off : ev.marker_offsets)
      DDPSCOPE_FUZZ_CHECK(off + wire::kMpaMarkerSize <= ev.raw.size());
    for (std::size_t f : ev.findings)
      DDPSCOPE_FUZZ_CHECK(f < model_.findings.size());
    for (std::size_t m : ev.analysis.messages_completed)
      DDPSCOPE_FUZZ_CHECK(m < model_.messages.size());
    if (ev.analysis.message) DDPSCOPE_FUZZ_CHECK(*ev.analysis.message < model_.messages.size());
  }
  void on_finding(std::size_t i) override { DDPSCOPE_FUZZ_CHECK(i < model_.findings.size()); }
  std::uint32_t sum_ = 0;

 private:
  const Model& model_;
};

Limits tiny_limits() {
  Limits l;
  l.reassembly_window = 4096;
  l.retransmission_history = 1024;
  l.resync_buffer = 2048;
  l.payload_retention = 8192;
  l.max_streams = 3;
  l.max_regions = 4;
  l.max_ranges_per_region = 4;
  l.max_pending_messages = 4;
  l.max_message_records = 16;
  l.max_findings = 32;
  return l;
}

struct Script {
  Analyzer& an;
  std::uint64_t frame = 0;
  // Next sequence number per connection and direction.
  std::array<std::array<std::uint32_t, 2>, 4> next{};

  net::Endpoint client(int conn) const {
    return {net::Address::v4(0x0A000001),
            static_cast<std::uint16_t>(fuzz::script::kClientPort + conn)};
  }
  net::Endpoint server() const { return {net::Address::v4(0x0A000002), fuzz::script::kServerPort}; }

  void send(int conn, int dir, std::uint32_t seq, std::uint8_t flags, ByteView payload,
            std::uint32_t lost_tail = 0) {
    net::TcpSegment s;
    s.src = dir == 0 ? client(conn) : server();
    s.dst = dir == 0 ? server() : client(conn);
    s.seq = seq;
    s.flags = flags;
    s.payload = payload;
    s.payload_length = static_cast<std::uint32_t>(payload.size()) + lost_tail;
    if (flags & net::tcp_flag::syn) s.mss = 1460;
    ++frame;
    an.feed_tcp(frame, static_cast<std::int64_t>(frame) * 1000, s);
    next[conn][dir] = seq + static_cast<std::uint32_t>(payload.size()) + lost_tail +
                      ((flags & (net::tcp_flag::syn | net::tcp_flag::fin)) ? 1 : 0);
  }

  void handshake(std::uint8_t config, std::uint8_t variant) {
    using namespace fuzz::script;
    next[0] = {1000, 5000};
    send(0, 0, 1000, net::tcp_flag::syn, {});
    send(0, 1, 5000, net::tcp_flag::syn | net::tcp_flag::ack, {});
    wire::MpaReqRep req;
    req.kind = wire::MpaFrameKind::request;
    req.crc = config & kCrc;
    req.markers = config & kMarkersS2c;
    req.revision = (variant & 1) ? 1 : 2;
    req.enhanced = req.revision == 2;
    const std::uint16_t ird = variant >> 1;
    if (req.enhanced) req.enhanced_pd = wire::MpaEnhancedPd{false, false, ird, false, false, ird};
    const Bytes rq = wire::encode_mpa_reqrep(req);
    send(0, 0, next[0][0], net::tcp_flag::ack | net::tcp_flag::psh, rq);
    wire::MpaReqRep rep = req;
    rep.kind = wire::MpaFrameKind::reply;
    rep.markers = config & kMarkersC2s;
    const Bytes rp = wire::encode_mpa_reqrep(rep);
    send(0, 1, next[0][1], net::tcp_flag::ack | net::tcp_flag::psh, rp);
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace fuzz::script;
  fuzz::FuzzInput fi(data, size);
  const std::uint8_t config = fi.u8();
  const std::uint8_t variant = fi.u8();
  AnalyzerOptions o;
  if (config & kTinyLimits) o.limits = tiny_limits();
  if (config & kHint) {
    StreamHint h;
    h.port = kServerPort;
    h.crc = (config & kCrc) != 0;
    o.hints.push_back(h);
  }
  o.decode_advertisements = !(config & kNoAdverts);
  Analyzer an(o);
  TouchingObserver obs(an.model());
  an.set_observer(&obs);
  if (config & kRegions) {
    const RegionSpec r{0x100, 0x1000, 0x1000, std::nullopt, "fuzz"};
    an.add_regions({&r, 1});
  }
  Script sc{an};
  for (auto& c : sc.next)
    c = {1000, 5000};
  if (config & kHandshake) sc.handshake(config, variant);
  while (!fi.empty()) {
    const std::uint8_t ctl = fi.u8();
    const auto delta = static_cast<std::int16_t>(fi.be16());
    const std::uint8_t flags = fi.u8();
    const ByteView octets = fi.take(fi.be16());
    const int conn = (ctl >> 4) & 3;
    const int dir = ctl & kDirServer;
    const std::uint32_t seq = sc.next[conn][dir] + static_cast<std::uint32_t>(delta);
    std::uint32_t lost = (ctl & kLostTail) ? 100 : 0;
    const Bytes fpdu = (ctl & kWrapFpdu) ? wire::encode_fpdu(octets, {}) : Bytes{};
    const ByteView payload = (ctl & kWrapFpdu) ? ByteView(fpdu) : octets;
    if (ctl & kHugeClaim) lost = UINT32_MAX - static_cast<std::uint32_t>(payload.size());
    sc.send(conn, dir, seq, flags, payload, lost);
  }
  an.finish();
  const Model& m = an.model();
  const Limits& l = an.options().limits;
  DDPSCOPE_FUZZ_CHECK(m.streams.size() <= l.max_streams);
  DDPSCOPE_FUZZ_CHECK(m.findings.size() <= l.max_findings);
  DDPSCOPE_FUZZ_CHECK(m.messages.size() <= l.max_message_records);
  DDPSCOPE_FUZZ_CHECK(m.memory.bytes_retained() <= l.payload_retention);
  for (const auto& f : m.findings) {
    DDPSCOPE_FUZZ_CHECK(f.stream == UINT32_MAX || f.stream < m.streams.size());
    DDPSCOPE_FUZZ_CHECK(!f.code().empty());
  }
  for (const auto& r : m.messages)
    DDPSCOPE_FUZZ_CHECK(r.stream < m.streams.size());
  return 0;
}
