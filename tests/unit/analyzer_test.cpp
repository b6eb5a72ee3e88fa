// SPDX-License-Identifier: GPL-2.0-or-later
// The engine fed with TCP segments built here: a small connection builder writes the MPA
// handshake and FPDUs into each direction's byte stream, then cuts it into segments.
#include "ddpscope/analysis/analyzer.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "ddpscope/common/crc32c.h"
#include "ddpscope/tcp/reassembly.h"

namespace ddpscope {
namespace {

using wire::Opcode;

struct Seg {
  int dir;
  std::uint32_t seq;
  Bytes data;
  std::uint8_t flags = net::tcp_flag::ack;
  std::uint32_t ack = 0;
  // In the capture, but dropped before its receiver by the layer below (an ESP ICV failure):
  // the analysis is told (Analyzer::note_receiver_drop) instead of fed the segment.
  bool receiver_dropped = false;
};

// Builds one iWARP connection's byte streams and turns them into TCP segments.
class Conn {
 public:
  Conn() {
    ep_[0] = {*net::Address::parse("10.0.0.1"), 40000};
    ep_[1] = {*net::Address::parse("10.0.0.2"), 4791};
  }
  explicit Conn(std::uint16_t client_port) : Conn() { ep_[0].port = client_port; }
  bool crc = false;
  bool cut_at_fpdus = false;  // segments() also cuts where each FPDU begins
  bool markers_c2s = false;   // the server asks for markers (Reply's M)
  bool markers_s2c = false;   // the client asks (Request's M)
  std::uint8_t revision = 2;
  bool enhanced = true;
  std::uint16_t ird = 16, ord = 16;

  // RFC 6581 words of the Request and the Reply when they are not {IRD ird, ORD ord}.
  std::optional<wire::MpaEnhancedPd> request_pd, reply_pd;

  void handshake() {
    request();
    reply();
  }
  void request() {
    append(0, wire::encode_mpa_reqrep(reqrep(wire::MpaFrameKind::request)));
    s0_[0] = stream_[0].size();
  }
  void reply() {
    append(1, wire::encode_mpa_reqrep(reqrep(wire::MpaFrameKind::reply)));
    s0_[1] = stream_[1].size();
  }
  wire::MpaReqRep reqrep(wire::MpaFrameKind kind) const {
    const bool is_req = kind == wire::MpaFrameKind::request;
    wire::MpaReqRep f;
    f.kind = kind;
    f.crc = crc;
    f.markers = is_req ? markers_s2c : markers_c2s;
    f.revision = revision;
    f.enhanced = enhanced;
    if (enhanced) {
      f.enhanced_pd = (is_req ? request_pd : reply_pd)
                          .value_or(wire::MpaEnhancedPd{false, false, ird, false, false, ord});
    }
    return f;
  }

  // Appends one FPDU carrying `header` + `payload`; returns its stream offset.
  std::size_t fpdu(int dir, const wire::DdpHeader& h, ByteView payload = {}) {
    Bytes ulpdu;
    ByteWriter w(ulpdu);
    wire::encode_ddp_header(h, w);
    w.bytes(payload);
    wire::FpduEncodeOptions o;
    o.crc = crc;
    o.markers = dir == 0 ? markers_c2s : markers_s2c;
    o.stream_pos = stream_[dir].size() - s0_[dir];
    const std::size_t at = stream_[dir].size();
    append(dir, wire::encode_fpdu(ulpdu, o));
    fpdu_starts_[dir].push_back(at);
    return at;
  }

  static wire::DdpHeader untagged(Opcode op, std::uint32_t qn, std::uint32_t msn, std::uint32_t mo,
                                  bool last, std::uint32_t inval = 0) {
    return wire::untagged_header(op, qn, msn, mo, last, inval);
  }
  static wire::DdpHeader tagged(Opcode op, std::uint32_t stag, std::uint64_t to, bool last) {
    return wire::tagged_header(op, stag, to, last);
  }

  void send(int dir, std::uint32_t msn, ByteView payload) {
    fpdu(dir, untagged(Opcode::send, 0, msn, 0, true), payload);
  }

  // Segments of each direction cut at `mss` octets, in causal order: a segment goes out once
  // its last octet was written (so a Read Response never precedes its Read Request).
  std::vector<Seg> segments(std::size_t mss = 1460) const {
    std::vector<std::pair<std::uint64_t, Seg>> timed;
    for (int d = 0; d < 2; ++d) {
      for (std::size_t pos = 0, n = 0; pos < stream_[d].size(); pos += n) {
        n = std::min(mss, stream_[d].size() - pos);
        // A sender that waits for its peer cannot have sent what it wrote after the wait in the
        // same segment: cut where the other side wrote in between.
        for (std::size_t k = pos; k + 1 < pos + n; ++k) {
          if (cut_at_fpdus &&
              std::binary_search(fpdu_starts_[d].begin(), fpdu_starts_[d].end(), k + 1)) {
            n = k + 1 - pos;
            break;
          }
          if (time_[d][k + 1] > time_[d][k] + 1 &&
              other_wrote_between(d, time_[d][k], time_[d][k + 1])) {
            n = k + 1 - pos;
            break;
          }
        }
        timed.push_back({time_[d][pos + n - 1],
                         Seg{d, isn_[d] + 1 + static_cast<std::uint32_t>(pos),
                             Bytes(stream_[d].begin() + pos, stream_[d].begin() + pos + n)}});
      }
    }
    std::stable_sort(timed.begin(), timed.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    std::vector<Seg> out;
    for (auto& t : timed)
      out.push_back(std::move(t.second));
    return out;
  }

  // Feeds SYN, SYN-ACK, then `segs`, numbering frames from 1.
  const Model& run(Analyzer& a, const std::vector<Seg>& segs) {
    std::uint64_t frame = 0;
    feed(a, ++frame, Seg{0, isn_[0], {}, net::tcp_flag::syn});
    feed(a, ++frame, Seg{1, isn_[1], {}, net::tcp_flag::syn | net::tcp_flag::ack});
    for (const auto& s : segs)
      feed(a, ++frame, s);
    a.finish();
    return a.model();
  }

  // Feeds SYN, SYN-ACK, `segs` and, with `close`, both FINs, numbering frames after `frame`;
  // the analysis is not finished (more connections may follow).
  void feed_all(Analyzer& a, const std::vector<Seg>& segs, std::uint64_t& frame, bool close) const {
    feed(a, ++frame, Seg{0, isn_[0], {}, net::tcp_flag::syn});
    feed(a, ++frame, Seg{1, isn_[1], {}, net::tcp_flag::syn | net::tcp_flag::ack});
    for (const auto& s : segs)
      feed(a, ++frame, s);
    if (!close) return;
    for (int d = 0; d < 2; ++d) {
      const auto fin_seq = static_cast<std::uint32_t>(isn_[d] + 1 + stream_[d].size());
      feed(a, ++frame, Seg{d, fin_seq, {}, net::tcp_flag::fin | net::tcp_flag::ack});
    }
  }

  // Feeds `segs` only (no SYN), numbering frames after `frame`: to interleave connections.
  void feed_segments(Analyzer& a, const std::vector<Seg>& segs, std::uint64_t& frame) const {
    for (const auto& s : segs)
      feed(a, ++frame, s);
  }

  const Bytes& stream(int dir) const { return stream_[dir]; }

  // The frames run() feeds (SYN, SYN-ACK, then `segs`), as Ethernet frames a capture holds.
  std::vector<Bytes> frames(const std::vector<Seg>& segs) const {
    std::vector<Bytes> out;
    auto add = [&](const Seg& s) {
      net::TcpFrameSpec spec;
      spec.src = ep_[s.dir];
      spec.dst = ep_[1 - s.dir];
      spec.seq = s.seq;
      spec.ack = s.ack;
      spec.flags = s.flags;
      if (s.flags & net::tcp_flag::syn) spec.mss = 1460;
      out.push_back(net::encode_tcp_frame(spec, s.data));
    };
    add(Seg{0, isn_[0], {}, net::tcp_flag::syn});
    add(Seg{1, isn_[1], {}, net::tcp_flag::syn | net::tcp_flag::ack});
    for (const auto& s : segs)
      add(s);
    return out;
  }

  bool other_wrote_between(int d, std::uint64_t t1, std::uint64_t t2) const {
    const auto& o = time_[1 - d];
    auto it = std::upper_bound(o.begin(), o.end(), t1);
    return it != o.end() && *it < t2;
  }

 private:
  void append(int dir, const Bytes& b) {
    stream_[dir].insert(stream_[dir].end(), b.begin(), b.end());
    time_[dir].insert(time_[dir].end(), b.size(), ++clock_);
  }
  void feed(Analyzer& a, std::uint64_t frame, const Seg& s) const {
    if (s.receiver_dropped) {
      a.note_receiver_drop(ep_[s.dir], ep_[1 - s.dir]);
      return;
    }
    net::TcpSegment t;
    t.src = ep_[s.dir];
    t.dst = ep_[1 - s.dir];
    t.seq = s.seq;
    t.ack = s.ack;
    t.flags = s.flags;
    if (s.flags & net::tcp_flag::syn) t.mss = 1460;
    t.payload = s.data;
    t.payload_length = static_cast<std::uint32_t>(s.data.size());
    a.feed_tcp(frame, static_cast<std::int64_t>(frame) * 1000, t);
  }

  net::Endpoint ep_[2];
  std::uint32_t isn_[2] = {1000, 0xFFFFFF00u};  // the server's sequence numbers wrap
  Bytes stream_[2];
  std::vector<std::uint64_t> time_[2];  // when each octet was written
  std::uint64_t clock_ = 0;
  std::size_t s0_[2] = {0, 0};
  std::vector<std::size_t> fpdu_starts_[2];
};

// Removes the segment of `dir` that begins at stream offset `offset` (cut_at_fpdus: an FPDU).
void drop(std::vector<Seg>& segs, int dir, std::size_t offset) {
  const std::uint32_t isn = dir == 0 ? 1000u : 0xFFFFFF00u;
  segs.erase(
      std::remove_if(segs.begin(), segs.end(),
                     [&](const Seg& s) { return s.dir == dir && s.seq - (isn + 1) == offset; }),
      segs.end());
}

// Flips one octet of the client's byte stream (client ISN 1000: stream offset 0 is seq 1001).
void corrupt(std::vector<Seg>& segs, int dir, std::size_t offset) {
  for (auto& s : segs) {
    const std::size_t rel = s.seq - 1001u;
    if (s.dir == dir && offset >= rel && offset < rel + s.data.size()) s.data[offset - rel] ^= 1;
  }
}

Bytes pattern(std::size_t n, std::uint8_t seed = 3) {
  Bytes b(n);
  for (std::size_t i = 0; i < n; ++i)
    b[i] = static_cast<std::uint8_t>(seed + i * 13);
  return b;
}

std::vector<std::string> codes(const Model& m, Severity at_least = Severity::warning) {
  std::vector<std::string> c;
  for (const auto& f : m.findings)
    if (f.severity >= at_least) c.emplace_back(f.code());
  return c;
}

// A clean exchange: Sends both ways, an RDMA Write in several segments, a Read and its
// Response. Nothing to report; placed content is what was written.
void clean_exchange(Conn& c) {
  c.handshake();
  c.send(0, 1, pattern(64));
  c.send(1, 1, pattern(32));
  const Bytes w = pattern(3000, 9);
  for (std::size_t off = 0; off < w.size(); off += 1000)
    c.fpdu(0, Conn::tagged(Opcode::rdma_write, 0x100, 0x5000 + off, off + 1000 >= w.size()),
           ByteView(w).subspan(off, 1000));
  Bytes rr;
  ByteWriter bw(rr);
  wire::encode_read_request({0x200, 0x9000, 2000, 0x300, 0x1000}, bw);
  c.fpdu(0, Conn::untagged(Opcode::read_request, 1, 1, 0, true), rr);
  const Bytes r = pattern(2000, 77);
  c.fpdu(1, Conn::tagged(Opcode::read_response, 0x200, 0x9000, false), ByteView(r).first(1200));
  c.fpdu(1, Conn::tagged(Opcode::read_response, 0x200, 0x9000 + 1200, true),
         ByteView(r).subspan(1200));
  c.send(0, 2, pattern(10));
}

TEST(Analysis, CleanExchangeHasNoFindingsAndPlacesTheWrittenBytes) {
  for (bool crc : {false, true}) {
    Conn c;
    c.crc = crc;
    clean_exchange(c);
    Analyzer a;
    const Model& m = c.run(a, c.segments(700));  // FPDUs straddle segments
    EXPECT_TRUE(codes(m, Severity::note).empty())
        << ::testing::PrintToString(codes(m, Severity::note));
    ASSERT_EQ(m.streams.size(), 1u);
    const auto& s = m.streams[0];
    EXPECT_EQ(s.state, StreamState::full);
    EXPECT_EQ(s.dirs[0].opcodes[0].messages, 1u);  // one RDMA Write message
    EXPECT_EQ(s.dirs[0].opcodes[0].segments, 3u);
    EXPECT_EQ(s.dirs[0].queues.at(0).last_msn, 2u);
    const ShadowBuffer* b = m.memory.find({*net::Address::parse("10.0.0.2"), 0x100});
    ASSERT_NE(b, nullptr);
    EXPECT_EQ(b->bytes_placed(), 3000u);
    EXPECT_EQ(b->read(0x5000, 3000), pattern(3000, 9));
    const ShadowBuffer* rb = m.memory.find({*net::Address::parse("10.0.0.1"), 0x200});
    ASSERT_NE(rb, nullptr);
    EXPECT_EQ(rb->read(0x9000, 2000), pattern(2000, 77));
    // Every message was placed and delivered.
    for (const auto& msg : m.messages) {
      EXPECT_TRUE(msg.complete);
      EXPECT_NE(msg.delivered_frame, 0u);
    }
  }
}

TEST(Analysis, OneSegmentPerOctetStillFramesEverything) {
  Conn c;
  c.crc = true;
  clean_exchange(c);
  Analyzer a;
  const Model& m = c.run(a, c.segments(1));
  EXPECT_TRUE(codes(m, Severity::note).empty());
  EXPECT_EQ(m.streams[0].dirs[0].fpdus, 6u);
}

TEST(Analysis, ReorderedAndExactlyRetransmittedSegmentsAreNotErrors) {
  Conn c;
  clean_exchange(c);
  auto segs = c.segments(500);
  std::swap(segs[3], segs[5]);             // reordered in the capture
  segs.insert(segs.begin() + 7, segs[6]);  // exact retransmission
  Analyzer a;
  const Model& m = c.run(a, segs);
  EXPECT_TRUE(codes(m, Severity::note).empty())
      << ::testing::PrintToString(codes(m, Severity::note));
}

TEST(Analysis, ConflictingRetransmissionIsReportedAndFirstCopyWins) {
  Conn c;
  clean_exchange(c);
  auto segs = c.segments(500);
  Seg bad = segs[4];
  bad.data[bad.data.size() / 2] ^= 0xFF;
  segs.insert(segs.begin() + 5, bad);
  Analyzer a;
  const Model& m = c.run(a, segs);
  EXPECT_EQ(codes(m), std::vector<std::string>{"tcp.retransmission-conflict"});
  EXPECT_EQ(m.findings[0].frame, 2u + 6u);
}

constexpr auto kEthernet = static_cast<std::uint32_t>(net::LinkType::ethernet);

// Feeds whole Ethernet frames (Conn::frames), numbered from 1, each fed as staying valid or not.
const Model& run_frames(Analyzer& a, const std::vector<Bytes>& frames, bool stays_valid) {
  for (std::size_t i = 0; i < frames.size(); ++i) {
    const auto size = static_cast<std::uint32_t>(frames[i].size());
    a.feed_decoded(i + 1, static_cast<std::int64_t>(i + 1) * 1000, size,
                   net::decode_frame(kEthernet, frames[i], size), stays_valid);
  }
  a.finish();
  return a.model();
}

std::vector<std::pair<std::string, std::uint64_t>> findings_at(const Model& m) {
  std::vector<std::pair<std::string, std::uint64_t>> out;
  for (const auto& f : m.findings)
    out.emplace_back(f.code(), f.frame);
  return out;
}

TEST(Analysis, FramesThatStayValidAreComparedAsCopiedOnesAre) {
  // Reordering, an exact and a conflicting retransmission, as whole frames: the same findings
  // whether the host keeps its frames valid (AnalyzerOptions::frames_stay_valid and
  // feed_decoded's stays_valid: TCP's history refers to them) or not (it copies them).
  Conn c;
  clean_exchange(c);
  auto segs = c.segments(500);
  std::swap(segs[3], segs[5]);             // reordered: drained from reassembly's storage
  segs.insert(segs.begin() + 7, segs[6]);  // exact retransmission
  for (std::size_t k : {4u, 8u}) {
    Seg bad = segs[k];
    bad.data[bad.data.size() / 2] ^= 0xFF;
    segs.push_back(bad);
  }
  const std::vector<Bytes> frames = c.frames(segs);
  auto run = [&](bool option, bool stays_valid) {
    AnalyzerOptions o;
    o.frames_stay_valid = option;
    Analyzer a(o);
    return findings_at(run_frames(a, frames, stays_valid));
  };
  const auto copied = run(false, false);
  EXPECT_EQ(std::count_if(copied.begin(), copied.end(),
                          [](const auto& f) { return f.first == "tcp.retransmission-conflict"; }),
            2);
  EXPECT_EQ(run(true, true), copied);
  EXPECT_EQ(run(true, false), copied);
  EXPECT_EQ(run(false, true), copied);
}

TEST(Analysis, FramesAreReferredToOnlyWhenTheHostAndTheFeedSaySo) {
  // Where TCP's history reads, seen by breaking the promise on purpose: a frame's payload is
  // changed after it was fed, then its original is retransmitted. Only when the host (the
  // option) and the feed (stays_valid) both said the frame stays valid does the history refer
  // to the frame, and find the retransmission different.
  Conn c;
  clean_exchange(c);
  auto segs = c.segments(500);
  const auto k = static_cast<std::size_t>(
      std::find_if(segs.begin(), segs.end(),
                   [](const Seg& s) { return s.data.size() >= TcpReassembler::kMinSpan; }) -
      segs.begin());
  ASSERT_LT(k, segs.size());
  segs.push_back(segs[k]);  // an exact retransmission, last
  const std::vector<Bytes> original = c.frames(segs);
  auto conflicts = [&](bool option, bool stays_valid) {
    std::vector<Bytes> frames = original;
    AnalyzerOptions o;
    o.frames_stay_valid = option;
    Analyzer a(o);
    for (std::size_t i = 0; i + 1 < frames.size(); ++i) {
      const auto size = static_cast<std::uint32_t>(frames[i].size());
      a.feed_decoded(i + 1, 0, size, net::decode_frame(kEthernet, frames[i], size), stays_valid);
    }
    frames[k + 2].back() ^= 0x40;  // the segment's last payload octet, in the frame fed
    const auto size = static_cast<std::uint32_t>(frames.back().size());
    a.feed_decoded(frames.size(), 0, size, net::decode_frame(kEthernet, frames.back(), size),
                   stays_valid);
    a.finish();
    return a.model()
        .finding_counts[static_cast<std::size_t>(FindingId::tcp_retransmission_conflict)];
  };
  EXPECT_EQ(conflicts(true, true), 1u);
  EXPECT_EQ(conflicts(true, false), 0u);
  EXPECT_EQ(conflicts(false, true), 0u);
  EXPECT_EQ(conflicts(false, false), 0u);
}

TEST(Analysis, CrcMismatchIsAnErrorWithTheMpaTerminate) {
  Conn c;
  c.crc = true;
  c.handshake();
  c.send(0, 1, pattern(64));
  const std::size_t at = c.stream(0).size();
  c.send(0, 2, pattern(64));
  c.send(0, 3, pattern(64));
  auto segs = c.segments(4096);
  // Corrupt one payload octet of the second Send.
  corrupt(segs, 0, at + 30);
  Analyzer a;
  const Model& m = c.run(a, segs);
  ASSERT_EQ(codes(m), std::vector<std::string>{"mpa.crc-mismatch"});
  ASSERT_TRUE(m.findings[0].terminate);
  EXPECT_EQ(*m.findings[0].terminate, (TerminateError{2, 0, 2}));
  // The damaged FPDU is dropped, as a compliant sink would; the MSN jump that follows is
  // reported as its consequence (a note), not as a second error.
  ASSERT_EQ(m.findings.size(), 2u);
  EXPECT_EQ(m.findings[1].code(), "ddp.untagged.msn-gap");
  EXPECT_EQ(m.findings[1].consequence_of, Consequence::crc);
}

// What an observer (the plugin) gets of a dropped FPDU: its header as received, no analysis.
struct FpduEvents final : AnalysisObserver {
  struct Seen {
    bool crc_ok = true;
    std::optional<wire::DdpHeader> ddp;
    bool placed = false;
    bool framing_resumed = false, resumed_after_gap = false;
    std::vector<std::size_t> findings;
  };
  std::vector<Seen> fpdus;
  void on_pdu(const PduEvent& e) override {
    if (e.kind != PduKind::fpdu) return;
    fpdus.push_back({e.crc_ok, e.ddp ? std::optional(e.ddp->header) : std::nullopt,
                     e.analysis.placed, e.framing_resumed, e.resumed_after_gap, e.findings});
  }
};

TEST(Analysis, CrcFailedFpduReachesTheObserverWithItsHeaderAsReceivedAndNotPlaced) {
  Conn c;
  c.crc = true;
  c.handshake();
  c.send(0, 1, pattern(64));
  const std::size_t at = c.stream(0).size();
  c.send(0, 2, pattern(64));
  c.send(0, 3, pattern(64));
  auto segs = c.segments(4096);
  corrupt(segs, 0, at + 30);  // a payload octet: the header is intact
  Analyzer a;
  FpduEvents seen;
  a.set_observer(&seen);
  const Model& m = c.run(a, segs);
  ASSERT_EQ(seen.fpdus.size(), 3u);
  const auto& bad = seen.fpdus[1];
  EXPECT_FALSE(bad.crc_ok);
  ASSERT_TRUE(bad.ddp);
  EXPECT_FALSE(bad.ddp->control.tagged);
  EXPECT_EQ(bad.ddp->qn, 0u);
  EXPECT_EQ(bad.ddp->msn, 2u);
  EXPECT_EQ(wire::RdmapControl::from_byte(bad.ddp->rsvd_ulp0).opcode,
            static_cast<std::uint8_t>(Opcode::send));
  EXPECT_FALSE(bad.placed);
  ASSERT_EQ(bad.findings.size(), 1u);
  const Finding& f = m.findings[bad.findings[0]];
  EXPECT_EQ(f.code(), "mpa.crc-mismatch");
  EXPECT_NE(f.message.find("Send QN 0 MSN 2 MO 0 L, 64 octets"), std::string::npos) << f.message;
  EXPECT_TRUE(seen.fpdus[2].crc_ok);
  EXPECT_FALSE(seen.fpdus[2].framing_resumed);  // a sane length keeps framing
}

TEST(Analysis, CrcMismatchOnTheLastFpduOfTheCaptureIsReported) {
  Conn c;
  c.crc = true;
  c.handshake();
  c.send(0, 1, pattern(64));
  const std::size_t at = c.stream(0).size();
  c.send(0, 2, pattern(64));
  auto segs = c.segments(4096);
  corrupt(segs, 0, at + 30);
  Analyzer a;
  const Model& m = c.run(a, segs);
  EXPECT_EQ(codes(m), std::vector<std::string>{"mpa.crc-mismatch"});
  EXPECT_EQ(m.streams[0].dirs[0].fpdus, 2u);
}

TEST(Analysis, CaptureLossIsAGapWhoseConsequencesAreNotes) {
  Conn c;
  c.handshake();
  c.send(0, 1, pattern(64));
  c.send(0, 2, pattern(3000));  // spans several segments
  c.send(0, 3, pattern(64));
  c.send(0, 4, pattern(64));
  auto segs = c.segments(1000);
  // Drop the client's third segment (inside MSN 2).
  int seen = 0;
  segs.erase(std::remove_if(segs.begin(), segs.end(),
                            [&](const Seg& s) { return s.dir == 0 && ++seen == 3; }),
             segs.end());
  Analyzer a;
  FpduEvents events;
  a.set_observer(&events);
  const Model& m = c.run(a, segs);
  EXPECT_EQ(codes(m), std::vector<std::string>{"tcp.gap"});
  // The first FPDU framed after the hole says framing was found again by a search.
  std::size_t resumed = 0;
  for (const auto& e : events.fpdus) {
    if (!e.framing_resumed) continue;
    ++resumed;
    EXPECT_TRUE(e.resumed_after_gap);
    EXPECT_TRUE(e.ddp);
  }
  EXPECT_EQ(resumed, 1u);
  bool resync = false;
  for (const auto& f : m.findings)
    if (f.code() == "mpa.resync" || f.code() == "ddp.message-incomplete") {
      EXPECT_EQ(f.consequence_of, Consequence::gap);
      resync = true;
    }
  EXPECT_TRUE(resync);
  EXPECT_EQ(m.streams[0].dirs[0].queues.at(0).last_msn, 4u);
}

// Issue 39: a segment dropped before its receiver (its ESP packet failed the ICV), the next
// segment, an ACK that covers both (what a capture with a forged or altered packet may show),
// then TCP's retransmission. The ACK is no proof of capture loss after a receiver-side drop:
// the retransmission fills the hole and nothing is lost. Without the drop noted, the same ACK
// declares the hole capture loss (and the retransmission comes too late).
TEST(Analysis, AckPastAHoleLeftByAReceiverDropWaitsForTheRetransmission) {
  Conn c;
  c.handshake();
  c.send(0, 1, pattern(64));
  c.send(0, 2, pattern(1400));  // spans several segments
  c.send(0, 3, pattern(64));
  const auto client_end = static_cast<std::uint32_t>(1000 + 1 + c.stream(0).size());
  for (const bool noted : {true, false}) {
    auto segs = c.segments(500);
    int seen = 0;
    const auto it = std::find_if(segs.begin(), segs.end(),
                                 [&](const Seg& s) { return s.dir == 0 && ++seen == 3; });
    ASSERT_NE(it, segs.end());
    Seg lost = *it;
    const auto pos = static_cast<std::size_t>(it - segs.begin());
    segs[pos].receiver_dropped = true;
    if (!noted) segs.erase(segs.begin() + static_cast<std::ptrdiff_t>(pos));
    // The server's ACK of every client octet, then the retransmission.
    segs.push_back(Seg{1,
                       0xFFFFFF00u + 1 + static_cast<std::uint32_t>(c.stream(1).size()),
                       {},
                       net::tcp_flag::ack,
                       client_end});
    lost.receiver_dropped = false;
    segs.push_back(lost);
    Analyzer a;
    const Model& m = c.run(a, segs);
    const auto& d = m.streams.at(0).dirs[0];
    if (noted) {
      EXPECT_EQ(codes(m), std::vector<std::string>{});
      for (const auto& f : m.findings)
        EXPECT_EQ(f.consequence_of, Consequence::none) << f.code();
      EXPECT_EQ(d.bytes_lost, 0u);
      EXPECT_EQ(d.fpdus, 3u);
    } else {
      EXPECT_EQ(codes(m), std::vector<std::string>{"tcp.gap"});
      EXPECT_EQ(d.bytes_lost, lost.data.size());
    }
    EXPECT_EQ(d.queues.at(0).last_msn, 3u);
  }
}

// What a one-pass host gets of a segment TCP holds behind a hole (HeldFpdu): the FPDUs it
// shows by itself, where it arrives; nothing for segments delivered in order; nothing that
// fails the candidate test (a CRC that does not match). Core's own PduEvents are unchanged.
struct HeldEvents final : AnalysisObserver {
  std::vector<HeldFpdu> held;  // views dropped: only values kept
  std::size_t pdus = 0;
  void on_pdu(const PduEvent&) override { ++pdus; }
  void on_held_fpdu(const HeldFpdu& h) override {
    held.push_back(h);
    held.back().raw = {};
    held.back().ddp.payload = {};
  }
};

TEST(Analysis, ASegmentHeldOutOfOrderShowsItsFpdusToTheObserver) {
  struct Case {
    bool crc, corrupt;
  };
  for (const Case k : {Case{false, false}, Case{true, false}, Case{true, true}}) {
    Conn c;
    c.crc = k.crc;
    c.cut_at_fpdus = true;
    c.handshake();
    c.send(0, 1, pattern(64));
    const std::size_t second = c.fpdu(0, Conn::untagged(Opcode::send, 0, 2, 0, true), pattern(80));
    const std::size_t third = c.fpdu(0, Conn::untagged(Opcode::send, 0, 3, 0, true), pattern(96));
    auto segs = c.segments(4096);
    // The client's segments are the Request, then one per FPDU: swap MSN 2 and MSN 3.
    std::vector<std::size_t> client;
    for (std::size_t i = 0; i < segs.size(); ++i)
      if (segs[i].dir == 0) client.push_back(i);
    ASSERT_EQ(client.size(), 4u);
    std::swap(segs[client[2]], segs[client[3]]);
    if (k.corrupt) segs[client[2]].data.back() ^= 0x01;  // the held one's CRC does not match
    HeldEvents events;
    Analyzer a;
    a.set_observer(&events);
    c.run(a, segs);
    if (k.corrupt) {
      EXPECT_TRUE(events.held.empty());
      continue;
    }
    ASSERT_EQ(events.held.size(), 1u);
    const HeldFpdu& h = events.held[0];
    EXPECT_EQ(h.frame, client[2] + 3);  // frames: SYN, SYN-ACK, then segs from 3
    EXPECT_EQ(h.stream_offset, third);
    EXPECT_EQ(h.missing_before, third - second);
    EXPECT_EQ(h.slice.offset, 0u);
    EXPECT_EQ(h.ulpdu_length, wire::kDdpUntaggedHeaderSize + 96);
    EXPECT_EQ(h.ddp.header.msn, 3u);
    EXPECT_EQ(h.crc_expected.has_value(), k.crc);
    EXPECT_EQ(events.pdus, 5u);  // Request, Reply, MSN 1, 2, 3: framed as without reordering
  }
}

TEST(Analysis, MsnGapDuplicateAndBadMo) {
  Conn c;
  c.handshake();
  c.send(0, 1, pattern(8));
  c.send(0, 3, pattern(8));  // gap: 2 missing
  c.send(0, 3, pattern(8));  // duplicate
  c.fpdu(0, Conn::untagged(Opcode::send, 0, 4, 0, false), pattern(8));
  c.fpdu(0, Conn::untagged(Opcode::send, 0, 4, 9, true), pattern(8));  // MO should be 8
  Analyzer a;
  const Model& m = c.run(a, c.segments());
  EXPECT_EQ(codes(m),
            (std::vector<std::string>{"ddp.untagged.msn-gap", "ddp.untagged.msn-duplicate",
                                      "ddp.untagged.invalid-mo"}));
}

TEST(Analysis, OpcodeQnAndVersionRules) {
  Conn c;
  c.handshake();
  c.fpdu(0, Conn::untagged(Opcode::send, 1, 1, 0, true), pattern(8));  // Send on QN 1
  auto h = Conn::untagged(Opcode::send, 0, 1, 0, true);
  h.rsvd_ulp0 = wire::RdmapControl{1, 0, 0xD}.byte();  // reserved opcode
  c.fpdu(0, h, pattern(8));
  auto t = Conn::tagged(Opcode::send, 5, 0, true);  // Send on the tagged model
  c.fpdu(0, t, pattern(8));
  auto v = Conn::untagged(Opcode::send, 0, 1, 0, true);
  v.control.version = 2;
  c.fpdu(0, v, pattern(8));
  auto rv = Conn::untagged(Opcode::send, 0, 1, 0, true);
  rv.rsvd_ulp0 = wire::RdmapControl{2, 0, 3}.byte();
  c.fpdu(0, rv, pattern(8));
  Analyzer a;
  const Model& m = c.run(a, c.segments());
  EXPECT_EQ(codes(m), (std::vector<std::string>{"ddp.untagged.invalid-qn", "rdmap.opcode-invalid",
                                                "rdmap.opcode-invalid", "ddp.version-invalid",
                                                "rdmap.version-invalid"}));
  EXPECT_EQ(*m.findings[3].terminate, (TerminateError{1, 2, 6}));  // untagged: code 0x06
}

TEST(Analysis, ReadResponseRulesAndIrd) {
  Conn c;
  c.ird = 1;
  c.ord = 1;  // both sides send IRD/ORD 1/1 (a Reply ORD above the Request's IRD is an error)
  c.handshake();
  Bytes rr1, rr2;
  ByteWriter w1(rr1), w2(rr2);
  wire::encode_read_request({0x200, 0x9000, 100, 0x300, 0}, w1);
  wire::encode_read_request({0x201, 0xA000, 100, 0x300, 0}, w2);
  c.fpdu(0, Conn::untagged(Opcode::read_request, 1, 1, 0, true), rr1);
  c.fpdu(0, Conn::untagged(Opcode::read_request, 1, 2, 0, true), rr2);               // beyond IRD 1
  c.fpdu(1, Conn::tagged(Opcode::read_response, 0x200, 0x9000, true), pattern(90));  // short
  c.fpdu(1, Conn::tagged(Opcode::read_response, 0x999, 0xA000, true), pattern(100));  // wrong STag
  c.fpdu(1, Conn::tagged(Opcode::read_response, 0x200, 0x9000, true), pattern(100));  // unmatched
  Analyzer a;
  const Model& m = c.run(a, c.segments());
  EXPECT_EQ(codes(m),
            (std::vector<std::string>{"rdmap.ird-exceeded", "rdmap.read-response-size-mismatch",
                                      "ddp.tagged.invalid-stag", "rdmap.read-response-unmatched"}));
}

TEST(Analysis, ReplyOrdAboveRequestIrdIsInsufficientIrd) {
  Conn c;
  c.request_pd = wire::MpaEnhancedPd{false, false, 4, false, false, 4};
  c.reply_pd = wire::MpaEnhancedPd{false, false, 4, false, false, 8};
  c.handshake();
  c.send(0, 1, pattern(10));
  Analyzer a;
  const Model& m = c.run(a, c.segments());
  ASSERT_EQ(codes(m), std::vector<std::string>{"mpa.handshake-invalid"});
  EXPECT_EQ(m.findings[0].frame, 4u);  // SYN, SYN-ACK, Request, Reply
  ASSERT_TRUE(m.findings[0].terminate);
  EXPECT_EQ(*m.findings[0].terminate, (TerminateError{2, 0, 6}));  // LLP / MPA / Insufficient IRD
  // 0x3FFF is "no value" (Intel's convention), not a depth: no finding.
  Conn d;
  d.request_pd = wire::MpaEnhancedPd{false, false, 0x3FFF, false, false, 4};
  d.reply_pd = wire::MpaEnhancedPd{false, false, 4, false, false, 0x3FFF};
  d.handshake();
  Analyzer b;
  EXPECT_TRUE(codes(d.run(b, d.segments())).empty());
}

TEST(Analysis, InitiatorFpduBeforeTheReplyIsReported) {
  Conn c;
  c.request();
  c.send(0, 1, pattern(10));  // in frame 3 with the Request, before the Reply (frame 4)
  c.reply();
  c.send(0, 2, pattern(10));
  c.send(1, 1, pattern(10));
  Analyzer a;
  const Model& m = c.run(a, c.segments());
  ASSERT_EQ(codes(m), std::vector<std::string>{"mpa.handshake-invalid"});
  EXPECT_EQ(m.findings[0].frame, 3u);
  EXPECT_NE(m.findings[0].message.find("precedes the MPA Reply (frame 4)"), std::string::npos)
      << m.findings[0].message;
  // Both Sends are still framed and delivered.
  EXPECT_EQ(m.streams.at(0).dirs[0].fpdus, 2u);
}

// RFC 6581 peer-to-peer: the initiator's first FPDU is the RTR the Reply chose, and the
// responder sends nothing before it.
TEST(Analysis, PeerToPeerRtrOrder) {
  const auto p2p = [](Conn& c, bool write, bool read) {
    c.request_pd = wire::MpaEnhancedPd{true, false, 16, true, true, 16};
    c.reply_pd = wire::MpaEnhancedPd{true, false, 16, write, read, 16};
    c.handshake();
  };
  Bytes zero_read;
  ByteWriter w(zero_read);
  wire::encode_read_request({0x1, 0, 0, 0x1, 0}, w);
  {  // clean: Write RTR (siw's: STag 1, TO 0), then traffic both ways
    Conn c;
    p2p(c, true, false);
    c.fpdu(0, Conn::tagged(Opcode::rdma_write, 1, 0, true));
    c.send(1, 1, pattern(10));
    c.send(0, 1, pattern(10));
    Analyzer a;
    EXPECT_TRUE(codes(c.run(a, c.segments())).empty());
  }
  {  // clean: Read RTR (a zero-length Read Request)
    Conn c;
    p2p(c, false, true);
    c.fpdu(0, Conn::untagged(Opcode::read_request, 1, 1, 0, true), zero_read);
    c.fpdu(1, Conn::tagged(Opcode::read_response, 0x1, 0, true));
    c.send(1, 1, pattern(10));
    Analyzer a;
    EXPECT_TRUE(codes(c.run(a, c.segments())).empty());
  }
  {  // the responder speaks first; the initiator's first FPDU is a Send, not the Write RTR
    Conn c;
    p2p(c, true, false);
    c.send(1, 1, pattern(10));  // in frame 4 with the Reply
    c.send(0, 1, pattern(10));  // frame 5
    Analyzer a;
    const Model& m = c.run(a, c.segments());
    ASSERT_EQ(codes(m),
              (std::vector<std::string>{"mpa.handshake-invalid", "mpa.handshake-invalid"}));
    EXPECT_EQ(m.findings[0].frame, 4u);
    EXPECT_NE(m.findings[0].message.find("precedes the initiator's RTR"), std::string::npos);
    EXPECT_EQ(m.findings[1].frame, 5u);
    EXPECT_NE(m.findings[1].message.find("not the zero-length write RTR"), std::string::npos)
        << m.findings[1].message;
  }
}

TEST(Analysis, AdvertisedBoundsInvalidationAndWrongStream) {
  Conn c;
  c.handshake();
  Bytes adv;
  ByteWriter w(adv);
  w.be64(0x7000);
  w.be32(0xAB);
  w.be32(4096);
  c.send(1, 1, adv);  // the server advertises STag 0xAB = [0x7000, +4096) on its side
  for (std::uint64_t off = 0; off < 4096; off += 1024)  // fits
    c.fpdu(0, Conn::tagged(Opcode::rdma_write, 0xAB, 0x7000 + off, off == 3072), pattern(1024));
  c.fpdu(0, Conn::tagged(Opcode::rdma_write, 0xAB, 0x7F00, true), pattern(512));  // overruns
  c.fpdu(0, Conn::untagged(Opcode::send_invalidate, 0, 1, 0, true, 0xAB), pattern(4));
  c.fpdu(0, Conn::tagged(Opcode::rdma_write, 0xAB, 0x7000, true), pattern(16));  // invalidated
  c.fpdu(0, Conn::tagged(Opcode::rdma_write, 0x1, 0xFFFFFFFFFFFFFFF0ull, true), pattern(32));
  // zero-length tagged message with an arbitrary STag and TO: not checked.
  c.fpdu(0, Conn::tagged(Opcode::rdma_write, 0xDEAD, 0xFFFFFFFFFFFFFFFFull, true), {});
  Analyzer a;
  const Model& m = c.run(a, c.segments());
  EXPECT_EQ(codes(m), (std::vector<std::string>{"ddp.tagged.bounds", "rdmap.stag-invalidated-use",
                                                "ddp.tagged.to-wrap"}));
  const ShadowBuffer* b = m.memory.find({*net::Address::parse("10.0.0.2"), 0xAB});
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->bytes_placed(), 4096u);  // the violating segments placed nothing
  EXPECT_EQ(b->source, RegionSource::advertisement);
  // The overrunning Write is neither placed nor delivered; the one that fits is both.
  for (const auto& msg : m.messages) {
    if (!msg.tagged || msg.stag != 0xAB) continue;
    if (msg.to == 0x7F00) {
      EXPECT_EQ(msg.placed_frame, 0u);
      EXPECT_EQ(msg.delivered_frame, 0u);
    } else if (msg.to == 0x7000 && msg.length == 4096) {
      EXPECT_NE(msg.placed_frame, 0u);
      EXPECT_NE(msg.delivered_frame, 0u);
    }
  }
}

TEST(Analysis, SiwTerminateIsDecodedLinkedAndFlaggedNonconformant) {
  Conn c;
  c.handshake();
  c.fpdu(0, Conn::tagged(Opcode::rdma_write, 0x77, 0x10, true), pattern(16));
  wire::Terminate t;
  t.control = {0, rdmap_etype::remote_protection, rdmap_code::invalid_stag, true, true, false, 0};
  t.ddp_segment_length = 30;
  t.ddp_header = Conn::tagged(Opcode::rdma_write, 0x77, 0x10, true);
  Bytes body;
  ByteWriter w(body);
  wire::encode_terminate(t, wire::TerminateLayout::siw_bitfield, w);
  c.fpdu(1, Conn::untagged(Opcode::terminate, 2, 1, 0, true), body);
  Analyzer a;
  const Model& m = c.run(a, c.segments());
  EXPECT_EQ(codes(m),
            (std::vector<std::string>{"rdmap.terminate", "rdmap.terminate-nonconformant"}));
  ASSERT_TRUE(m.findings[0].terminate);
  EXPECT_EQ(*m.findings[0].terminate, (TerminateError{0, 1, 0}));
  EXPECT_NE(m.findings[0].message.find("frame 5"), std::string::npos) << m.findings[0].message;
}

// A Terminate is linked to the newest of the last 256 segments its peer sent with the header
// it quotes; older ones are forgotten.
TEST(Analysis, TerminateQuotesTheNewestOfTheLast256Segments) {
  Conn c;
  c.cut_at_fpdus = true;  // one FPDU a frame: the handshake is frames 3-4, write i frame 5 + i
  c.handshake();
  const auto write = [](std::size_t i) {
    const std::uint64_t to = i == 10 || i == 200 ? 0xABC000 : 0x1000 * i;  // 10 and 200 alike
    return Conn::tagged(Opcode::rdma_write, 0x77, to, true);
  };
  for (std::size_t i = 0; i < 300; ++i)
    c.fpdu(0, write(i), pattern(16));
  std::uint32_t msn = 1;
  for (std::size_t quoted :
       {std::size_t{43}, std::size_t{44}, std::size_t{200}, std::size_t{299}}) {
    wire::Terminate t;
    t.control = {0, rdmap_etype::remote_protection, rdmap_code::invalid_stag, true, true, false, 0};
    t.ddp_segment_length = 30;
    t.ddp_header = write(quoted);
    Bytes body;
    ByteWriter w(body);
    wire::encode_terminate(t, wire::TerminateLayout::rfc, w);
    c.fpdu(1, Conn::untagged(Opcode::terminate, 2, msn++, 0, true), body);
  }
  Analyzer a;
  const Model& m = c.run(a, c.segments());
  std::vector<std::string> quoted;
  for (const auto& f : m.findings) {
    if (f.id != FindingId::rdmap_terminate) continue;
    const auto at = f.message.find("(quotes the segment in frame ");
    quoted.push_back(at == std::string::npos ? "-" : f.message.substr(at + 29));
  }
  // Write 43 is one of the 44 pushed out of the ring; 200 (not 10) is the newest like it.
  EXPECT_EQ(quoted, (std::vector<std::string>{"-", "49)", "205)", "304)"}));
}

TEST(Analysis, MarkersInOneDirectionFrameCleanly) {
  for (bool crc : {false, true}) {
    Conn c;
    c.crc = crc;
    c.markers_c2s = true;
    clean_exchange(c);
    Analyzer a;
    const Model& m = c.run(a, c.segments(333));
    EXPECT_TRUE(codes(m).empty()) << ::testing::PrintToString(codes(m));
    EXPECT_TRUE(m.streams[0].dirs[0].mpa.markers);
    EXPECT_FALSE(m.streams[0].dirs[1].mpa.markers);
    const ShadowBuffer* b = m.memory.find({*net::Address::parse("10.0.0.2"), 0x100});
    ASSERT_NE(b, nullptr);
    EXPECT_EQ(b->read(0x5000, 3000), pattern(3000, 9));
  }
}

// Feeds segments as captured without the connection's SYNs (client 10.0.0.1:40000).
void feed_without_syn(Analyzer& a, const std::vector<Seg>& segs) {
  std::uint64_t frame = 0;
  for (const auto& s : segs) {
    net::TcpSegment t;
    const bool from_client = s.dir == 0;
    t.src = {*net::Address::parse(from_client ? "10.0.0.1" : "10.0.0.2"),
             static_cast<std::uint16_t>(from_client ? 40000 : 4791)};
    t.dst = {*net::Address::parse(from_client ? "10.0.0.2" : "10.0.0.1"),
             static_cast<std::uint16_t>(from_client ? 4791 : 40000)};
    t.seq = s.seq;
    t.flags = net::tcp_flag::ack;
    t.payload = s.data;
    t.payload_length = static_cast<std::uint32_t>(s.data.size());
    a.feed_tcp(++frame, 0, t);
  }
  a.finish();
}

// The capture starts mid-stream (no handshake, first segments missing): with a hint the engine
// finds the FPDU boundaries itself and raises no error.
void expect_mid_stream_analysis(const StreamHint& hint) {
  Conn c;
  c.crc = true;
  clean_exchange(c);
  auto segs = c.segments(600);
  segs.erase(segs.begin(), segs.begin() + 4);
  AnalyzerOptions o;
  o.hints.push_back(hint);
  Analyzer a(o);
  feed_without_syn(a, segs);
  const Model& m = a.model();
  ASSERT_EQ(m.streams.size(), 1u);
  EXPECT_TRUE(m.streams[0].mid_stream);
  EXPECT_GT(m.streams[0].dirs[0].fpdus + m.streams[0].dirs[1].fpdus, 2u);
  for (const auto& f : m.findings)
    EXPECT_NE(f.severity, Severity::error) << f.code() << f.message;
}

TEST(Analysis, MidStreamCaptureWithPortHint) {
  expect_mid_stream_analysis(StreamHint{4791, std::nullopt, true, false});
}

// A mid-stream capture of `crc`'s stream (the first segments missing), analysed with `hint`;
// `drop` removes one more segment in the middle (capture loss).
Model mid_stream_model(bool crc, std::optional<bool> hint_crc, bool drop = false) {
  Conn c;
  c.crc = crc;
  clean_exchange(c);
  auto segs = c.segments(600);
  segs.erase(segs.begin(), segs.begin() + 4);
  if (drop) segs.erase(segs.begin() + 1);
  AnalyzerOptions o;
  o.hints.push_back(StreamHint{4791, std::nullopt, hint_crc});
  Analyzer a(o);
  feed_without_syn(a, segs);
  return a.model();
}

std::vector<const Finding*> findings_of(const Model& m, FindingId id) {
  std::vector<const Finding*> out;
  for (const auto& f : m.findings)
    if (f.id == id) out.push_back(&f);
  return out;
}

TEST(Analysis, MidStreamWithoutACrcSettingFindsItAndSaysWhich) {
  for (const bool crc : {true, false}) {
    SCOPED_TRACE(crc ? "CRC on" : "CRC off");
    const Model m = mid_stream_model(crc, std::nullopt);
    ASSERT_EQ(m.streams.size(), 1u);
    const StreamModel& s = m.streams[0];
    EXPECT_GT(s.dirs[0].fpdus, 2u);
    EXPECT_EQ(s.dirs[0].mpa.crc, crc);
    EXPECT_EQ(s.dirs[1].mpa.crc, crc);
    for (const auto& f : m.findings)
      EXPECT_EQ(f.severity, Severity::note) << f.code() << ": " << f.message;
    const auto detected = findings_of(m, FindingId::mpa_crc_detected);
    ASSERT_FALSE(detected.empty());
    EXPECT_NE(detected[0]->message.find(crc ? "framed with CRC on" : "framed with CRC off"),
              std::string::npos)
        << detected[0]->message;
    EXPECT_TRUE(findings_of(m, FindingId::mpa_no_fpdu_boundary).empty());
  }
}

TEST(Analysis, MidStreamWithTheWrongCrcSettingSaysWhereFramingGaveUpAndWhatToTry) {
  for (const bool crc : {true, false}) {
    SCOPED_TRACE(crc ? "CRC on, told off" : "CRC off, told on");
    const Model m = mid_stream_model(crc, !crc);
    const StreamModel& s = m.streams[0];
    EXPECT_EQ(s.dirs[0].fpdus, 0u);
    const auto lost = findings_of(m, FindingId::mpa_no_fpdu_boundary);
    ASSERT_FALSE(lost.empty());
    const Finding& f = *lost[0];
    EXPECT_EQ(f.severity, Severity::warning);
    EXPECT_FALSE(f.consequence());
    EXPECT_NE(
        f.message.find(std::to_string(s.dirs[f.direction].bytes_unframed) + " octets unframed"),
        std::string::npos)
        << f.message;
    EXPECT_NE(f.message.find(crc ? "try --mid-stream-crc true" : "try --mid-stream-crc false"),
              std::string::npos)
        << f.message;
    EXPECT_TRUE(findings_of(m, FindingId::mpa_crc_detected).empty());
  }
}

TEST(Analysis, NoFpduBoundaryAfterCaptureLossIsAConsequence) {
  const Model m = mid_stream_model(false, true, /*drop=*/true);
  const auto lost = findings_of(m, FindingId::mpa_no_fpdu_boundary);
  ASSERT_FALSE(lost.empty());
  bool after_loss = false;
  for (const Finding* f : lost) {
    if (m.streams[0].dirs[f->direction].bytes_lost == 0) continue;
    after_loss = true;
    EXPECT_EQ(f->consequence_of, Consequence::gap);
    EXPECT_EQ(f->severity, Severity::note);
    EXPECT_NE(f->message.find("(after capture loss)"), std::string::npos) << f->message;
  }
  EXPECT_TRUE(after_loss);
}

TEST(Analysis, MidStreamCaptureWithEndpointHint) {
  expect_mid_stream_analysis(
      StreamHint{std::nullopt, net::Endpoint{*net::Address::parse("10.0.0.2"), 4791}, true, false});
}

// No SYN in the capture and the responder's pure ACK first: the engine first guesses the
// wrong client and swaps sides when the MPA Request shows up, in the middle of framing the
// segment that also carries the first FPDUs (a regression found by corrupted-capture fuzzing).
TEST(Analysis, SidesSwapWhileFramingWhenTheCaptureMissesTheSyn) {
  Conn c;
  c.handshake();
  c.send(0, 1, pattern(40));
  c.send(0, 2, pattern(40));
  c.send(1, 1, pattern(40));
  auto segs = c.segments(100000);  // the client's Request and Sends in one segment
  Seg ack = segs.front();
  ack.dir = 1;
  ack.data.clear();
  ack.seq = 0xFFFFFF01u;
  std::vector<Seg> all{ack};
  all.insert(all.end(), segs.begin(), segs.end());
  Analyzer a;
  feed_without_syn(a, all);
  const Model& m = a.model();
  ASSERT_EQ(m.streams.size(), 1u);
  EXPECT_EQ(m.streams[0].client.port, 40000);
  EXPECT_TRUE(codes(m, Severity::note).empty())
      << ::testing::PrintToString(codes(m, Severity::note));
  EXPECT_EQ(m.streams[0].dirs[0].queues.at(0).last_msn, 2u);
  EXPECT_EQ(m.streams[0].dirs[1].queues.at(0).last_msn, 1u);
}

TEST(Analysis, NonIwarpTcpIsIgnored) {
  Analyzer a;
  net::TcpSegment t;
  t.src = {*net::Address::parse("10.0.0.1"), 1234};
  t.dst = {*net::Address::parse("10.0.0.2"), 80};
  const std::string http = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
  t.payload = ByteView(reinterpret_cast<const std::uint8_t*>(http.data()), http.size());
  t.payload_length = static_cast<std::uint32_t>(http.size());
  a.feed_tcp(1, 0, t);
  a.finish();
  EXPECT_EQ(a.model().streams[0].state, StreamState::not_iwarp);
  EXPECT_TRUE(a.model().findings.empty());
}

// An empty regions file still says the regions are known: every STag the Data Sinks did not
// register, advertise or name in a Read Request is invalid (it used to count as no file at all).
TEST(Analysis, EmptyRegionsFileMakesEveryUnknownStagInvalid) {
  for (const bool given : {false, true}) {
    Conn c;
    c.handshake();
    c.fpdu(0, Conn::tagged(Opcode::rdma_write, 0x77, 0x1000, false), pattern(16));
    c.fpdu(0, Conn::tagged(Opcode::rdma_write, 0x77, 0x1010, true), pattern(16));
    Analyzer a;
    if (given) a.add_regions({});
    const Model& m = c.run(a, c.segments());
    if (!given) {
      EXPECT_TRUE(codes(m).empty());
      continue;
    }
    // Once per message: the STag is the same in both segments.
    ASSERT_EQ(codes(m), (std::vector<std::string>{"ddp.tagged.invalid-stag"}));
    ASSERT_TRUE(m.findings[0].terminate);
    EXPECT_EQ(*m.findings[0].terminate,
              (TerminateError{1, ddp_etype::tagged_buffer, ddp_tagged_code::invalid_stag}));
  }
}

// ---- findings that explain themselves (issue 16) ----------------------------------------------

Bytes read_request(std::uint32_t sink_stag, std::uint64_t sink_to, std::uint32_t size,
                   std::uint32_t source_stag, std::uint64_t source_to) {
  Bytes rr;
  ByteWriter w(rr);
  wire::encode_read_request({sink_stag, sink_to, size, source_stag, source_to}, w);
  return rr;
}

// An analysis that declares a hole capture loss as soon as later octets arrive (so that what
// follows a lost segment is analysed in capture order).
AnalyzerOptions eager_gaps() {
  AnalyzerOptions o;
  o.limits.reassembly_window = 1;
  return o;
}

// Every finding that is not a tcp.gap is a note, a consequence of capture loss.
void expect_only_gap_and_notes(const Model& m) {
  EXPECT_EQ(codes(m), std::vector<std::string>{"tcp.gap"});
  for (const auto& f : m.findings) {
    if (f.id == FindingId::tcp_gap) continue;
    EXPECT_EQ(f.consequence_of, Consequence::gap) << f.code() << ": " << f.message;
  }
}

TEST(Explain, TaggedFindingsNameTheStagTheRegionAndHowFarOutside) {
  Conn c;
  c.handshake();
  Bytes adv;
  ByteWriter w(adv);
  w.be64(0x7000);
  w.be32(0xAB);
  w.be32(4096);
  c.send(1, 1, adv);  // STag 0xAB = [0x7000, +4096) at the server
  c.fpdu(0, Conn::tagged(Opcode::rdma_write, 0xAB, 0x7000 + 4096 - 16, true), pattern(48));
  c.fpdu(0, Conn::tagged(Opcode::rdma_write, 0xAB, 0x7000 - 16, true), pattern(32));
  Analyzer a;
  const Model& m = c.run(a, c.segments());
  ASSERT_EQ(codes(m), (std::vector<std::string>{"ddp.tagged.bounds", "ddp.tagged.bounds"}));
  for (const auto& f : m.findings) {
    EXPECT_NE(f.message.find("STag 0x000000ab"), std::string::npos) << f.message;
    EXPECT_NE(f.message.find("[0x7000, +4096)"), std::string::npos) << f.message;
  }
  EXPECT_NE(m.findings[0].message.find("32 octets past the end"), std::string::npos);
  EXPECT_NE(m.findings[1].message.find("16 octets before the base"), std::string::npos);
}

TEST(Explain, NotesAfterACrcFailureAreItsConsequenceNotCaptureLoss) {
  Conn c;
  c.crc = true;
  c.handshake();
  c.fpdu(0, Conn::tagged(Opcode::rdma_write, 0x100, 0x5000, false), pattern(64));
  const std::size_t at =
      c.fpdu(0, Conn::tagged(Opcode::rdma_write, 0x100, 0x5040, true), pattern(64));
  auto segs = c.segments(4096);
  corrupt(segs, 0, at + 30);  // the last segment of the Write fails its CRC
  Analyzer a;
  const Model& m = c.run(a, segs);
  ASSERT_EQ(codes(m), std::vector<std::string>{"mpa.crc-mismatch"});
  EXPECT_EQ(m.streams[0].dirs[0].bytes_lost, 0u);
  ASSERT_EQ(m.findings.size(), 2u);
  EXPECT_EQ(m.findings[1].code(), "ddp.message-incomplete");
  EXPECT_EQ(m.findings[1].consequence_of, Consequence::crc);
  EXPECT_EQ(m.findings[1].message.find("missing from the capture"), std::string::npos)
      << m.findings[1].message;
  EXPECT_NE(m.findings[1].message.find("CRC"), std::string::npos) << m.findings[1].message;
}

TEST(Explain, ReadResponseWithASegmentLostIsNoProtocolError) {
  for (int lost : {0, 1, 2}) {  // the first, a middle, the last of three segments
    Conn c;
    c.cut_at_fpdus = true;
    c.handshake();
    c.fpdu(0, Conn::untagged(Opcode::read_request, 1, 1, 0, true),
           read_request(0x200, 0x9000, 3000, 0x300, 0x1000));
    std::size_t at[3];
    for (int i = 0; i < 3; ++i)
      at[i] = c.fpdu(1, Conn::tagged(Opcode::read_response, 0x200, 0x9000 + 1000 * i, i == 2),
                     pattern(1000));
    // The next read, into the sink range right after it: matched, not counted on the first.
    c.fpdu(0, Conn::untagged(Opcode::read_request, 1, 2, 0, true),
           read_request(0x200, 0x9000 + 3000, 500, 0x300, 0x2000));
    c.fpdu(1, Conn::tagged(Opcode::read_response, 0x200, 0x9000 + 3000, true), pattern(500));
    auto segs = c.segments();
    drop(segs, 1, at[lost]);
    Analyzer a(eager_gaps());
    const Model& m = c.run(a, segs);
    SCOPED_TRACE(lost);
    expect_only_gap_and_notes(m);
  }
}

TEST(Explain, ReadResponseShortByItsOwnTosAfterLossIsStillAnError) {
  Conn c;
  c.cut_at_fpdus = true;
  c.handshake();
  c.fpdu(0, Conn::untagged(Opcode::read_request, 1, 1, 0, true),
         read_request(0x200, 0x9000, 3000, 0x300, 0x1000));
  const std::size_t first =
      c.fpdu(1, Conn::tagged(Opcode::read_response, 0x200, 0x9000, false), pattern(1000));
  // The segment after the lost one ends the response 1000 octets early, by its own TO.
  c.fpdu(1, Conn::tagged(Opcode::read_response, 0x200, 0x9000 + 1000, true), pattern(1000));
  auto segs = c.segments();
  drop(segs, 1, first);
  Analyzer a(eager_gaps());
  const Model& m = c.run(a, segs);
  EXPECT_EQ(codes(m), (std::vector<std::string>{"tcp.gap", "rdmap.read-response-size-mismatch"}));
}

TEST(Explain, ResponseToALostReadRequestIsANote) {
  Conn c;
  c.cut_at_fpdus = true;
  c.handshake();
  const std::size_t rr = c.fpdu(0, Conn::untagged(Opcode::read_request, 1, 1, 0, true),
                                read_request(0x200, 0x9000, 100, 0x300, 0x1000));
  c.send(0, 1, pattern(8));  // so that the loss is seen before the response
  c.fpdu(1, Conn::tagged(Opcode::read_response, 0x200, 0x9000, true), pattern(100));
  auto segs = c.segments();
  drop(segs, 0, rr);
  Analyzer a(eager_gaps());
  const Model& m = c.run(a, segs);
  expect_only_gap_and_notes(m);
  bool unmatched = false;
  for (const auto& f : m.findings)
    unmatched = unmatched || f.id == FindingId::rdmap_read_response_unmatched;
  EXPECT_TRUE(unmatched);
}

TEST(Explain, IrdCountsNoRequestWhoseResponseTheCaptureLost) {
  Conn c;
  c.cut_at_fpdus = true;
  c.ird = 1;
  c.ord = 1;
  c.handshake();
  c.fpdu(0, Conn::untagged(Opcode::read_request, 1, 1, 0, true),
         read_request(0x200, 0x9000, 100, 0x300, 0x1000));
  const std::size_t resp1 =
      c.fpdu(1, Conn::tagged(Opcode::read_response, 0x200, 0x9000, true), pattern(100));
  c.send(1, 1, pattern(8));  // so that the loss is seen before the next request
  c.fpdu(0, Conn::untagged(Opcode::read_request, 1, 2, 0, true),
         read_request(0x201, 0xA000, 100, 0x300, 0x1000));
  c.fpdu(1, Conn::tagged(Opcode::read_response, 0x201, 0xA000, true), pattern(100));
  // In step again: a real excess is an error.
  c.fpdu(0, Conn::untagged(Opcode::read_request, 1, 3, 0, true),
         read_request(0x202, 0xB000, 100, 0x300, 0x1000));
  c.fpdu(0, Conn::untagged(Opcode::read_request, 1, 4, 0, true),
         read_request(0x203, 0xC000, 100, 0x300, 0x1000));
  auto segs = c.segments();
  drop(segs, 1, resp1);
  Analyzer a(eager_gaps());
  const Model& m = c.run(a, segs);
  EXPECT_EQ(codes(m), (std::vector<std::string>{"tcp.gap", "rdmap.ird-exceeded"}));
  std::size_t notes = 0;
  for (const auto& f : m.findings)
    if (f.id == FindingId::rdmap_ird_exceeded && f.consequence_of == Consequence::gap) ++notes;
  EXPECT_EQ(notes, 1u);
}

TEST(Explain, AtomicResponseToALostRequestIsANote) {
  Conn c;
  c.cut_at_fpdus = true;
  c.handshake();
  wire::AtomicRequest req;
  req.atomic_opcode = static_cast<std::uint8_t>(wire::AtomicOp::fetch_add);
  req.request_id = 7;
  req.remote_stag = 0x400;
  req.remote_to = 0x8000;
  Bytes body;
  ByteWriter w(body);
  wire::encode_atomic_request(req, w);
  const std::size_t at =
      c.fpdu(0, Conn::untagged(Opcode::atomic_request, wire::kQnAtomicRequest, 1, 0, true), body);
  c.send(0, 1, pattern(8));
  Bytes resp;
  ByteWriter rw(resp);
  wire::encode_atomic_response({7, 42}, rw);
  c.fpdu(1, Conn::untagged(Opcode::atomic_response, wire::kQnAtomicResponse, 1, 0, true), resp);
  auto segs = c.segments();
  drop(segs, 0, at);
  Analyzer a(eager_gaps());
  const Model& m = c.run(a, segs);
  expect_only_gap_and_notes(m);
  bool unmatched = false;
  for (const auto& f : m.findings)
    unmatched = unmatched || f.id == FindingId::rdmap_atomic_response_unmatched;
  EXPECT_TRUE(unmatched);
}

// One connection's traffic: a Read of the server's STag 0x300 into the client's 0x200, and a
// Write to the server's 0x300.
void reads_and_writes(Conn& c) {
  c.handshake();
  c.fpdu(0, Conn::untagged(Opcode::read_request, 1, 1, 0, true),
         read_request(0x200, 0x9000, 100, 0x300, 0x1000));
  c.fpdu(1, Conn::tagged(Opcode::read_response, 0x200, 0x9000, true), pattern(100));
  c.fpdu(0, Conn::tagged(Opcode::rdma_write, 0x300, 0x1000, true), pattern(64));
}

TEST(Explain, StagsLearnedFromAStreamDoNotForbidTheNextOne) {
  // A reused 4-tuple (the first connection ended), then another connection between the same
  // hosts while the second is open: the same STags, no stag-wrong-stream.
  Conn first, again, other(40001);
  for (Conn* c : {&first, &again, &other})
    reads_and_writes(*c);
  Analyzer a;
  std::uint64_t frame = 0;
  first.feed_all(a, first.segments(), frame, true);
  again.feed_all(a, again.segments(), frame, false);
  other.feed_all(a, other.segments(), frame, false);
  a.finish();
  const Model& m = a.model();
  ASSERT_EQ(m.streams.size(), 3u);
  EXPECT_EQ(codes(m), std::vector<std::string>{});
}

TEST(Explain, RpingRegionIsBoundToItsConnectionWhileItLasts) {
  for (bool closed : {false, true}) {
    Conn adv_conn, user(40001);
    adv_conn.handshake();
    Bytes adv;
    ByteWriter w(adv);
    w.be64(0x7000);
    w.be32(0xAB);
    w.be32(4096);
    adv_conn.send(1, 1, adv);  // rping registers per connection (its own PD)
    user.handshake();
    user.fpdu(0, Conn::tagged(Opcode::rdma_write, 0xAB, 0x7000, true), pattern(64));
    Analyzer a;
    std::uint64_t frame = 0;
    adv_conn.feed_all(a, adv_conn.segments(), frame, closed);
    user.feed_all(a, user.segments(), frame, false);
    a.finish();
    const Model& m = a.model();
    SCOPED_TRACE(closed);
    if (closed) {
      // The registration ended with its connection: the STag is evidence of nothing here.
      EXPECT_EQ(codes(m), std::vector<std::string>{});
    } else {
      ASSERT_EQ(codes(m), std::vector<std::string>{"ddp.tagged.stag-wrong-stream"});
      EXPECT_NE(m.findings[0].message.find("STag 0x000000ab"), std::string::npos);
      EXPECT_NE(m.findings[0].message.find("rping"), std::string::npos) << m.findings[0].message;
    }
  }
}

// ---- placing octets again (the rule of ddp/shadow.h) ---------------------------------------

const ShadowBuffer& server_region(const Model& m, std::uint32_t stag) {
  const ShadowBuffer* b = m.memory.find({*net::Address::parse("10.0.0.2"), stag});
  EXPECT_NE(b, nullptr);
  static const ShadowBuffer none;
  return b ? *b : none;
}

TEST(Placement, ReusingABufferAfterDeliveryIsNoFindingAndIsCounted) {
  // rping's way: a Write, a Send after it (the Write is delivered by then), the next Write of
  // new content to the same octets.
  Conn c;
  c.handshake();
  c.fpdu(0, Conn::tagged(Opcode::rdma_write, 0x100, 0x5000, true), pattern(64, 1));
  c.send(0, 1, pattern(8));
  c.fpdu(0, Conn::tagged(Opcode::rdma_write, 0x100, 0x5000, true), pattern(64, 2));
  Analyzer a;
  const Model& m = c.run(a, c.segments());
  EXPECT_EQ(codes(m, Severity::note), std::vector<std::string>{});
  const ShadowBuffer& b = server_region(m, 0x100);
  EXPECT_EQ(b.overwrites(), 1u);
  EXPECT_EQ(b.reused_octets(), 64u);
  EXPECT_EQ(b.conflicts(), 0u);
  EXPECT_EQ(b.read(0x5000, 64), pattern(64, 2));
}

// Connection `first` writes STag 0x100 in two segments; `second` (another client of the same
// server) writes `second_data` at the first one's TO between them, before it is delivered.
const Model& race(Analyzer& a, Conn& first, Conn& second, const Bytes& second_data) {
  first.cut_at_fpdus = second.cut_at_fpdus = true;
  first.handshake();
  first.fpdu(0, Conn::tagged(Opcode::rdma_write, 0x100, 0x5000, false), pattern(64, 1));
  first.fpdu(0, Conn::tagged(Opcode::rdma_write, 0x100, 0x5040, true), pattern(64, 2));
  second.handshake();
  second.fpdu(0, Conn::tagged(Opcode::rdma_write, 0x100, 0x5000, true), second_data);
  std::vector<Seg> f = first.segments();
  EXPECT_EQ(f.size(), 4u);  // Request, Reply, two Write segments
  const std::vector<Seg> tail(f.end() - 1, f.end());
  f.pop_back();
  std::uint64_t frame = 0;
  first.feed_all(a, f, frame, false);                   // frames 1-5: the first Write segment is 5
  second.feed_all(a, second.segments(), frame, false);  // 6-10: its Write is 10
  first.feed_segments(a, tail, frame);                  // 11
  a.finish();
  return a.model();
}

TEST(Placement, DifferentContentOverAMessageInFlightIsAConflictAtTheSecondSegment) {
  Conn first, second(40001);
  Analyzer a;
  const Model& m = race(a, first, second, pattern(32, 9));
  ASSERT_EQ(codes(m, Severity::note), std::vector<std::string>{"ddp.tagged.conflicting-placement"});
  const Finding& f = m.findings[0];
  EXPECT_EQ(f.severity, Severity::warning);
  EXPECT_EQ(f.frame, 10u);
  EXPECT_EQ(f.stream, 1u);
  EXPECT_FALSE(f.terminate);
  EXPECT_NE(f.message.find("32 octets of STag 0x00000100"), std::string::npos) << f.message;
  EXPECT_NE(f.message.find("frame 5, stream 0"), std::string::npos) << f.message;
  const ShadowBuffer& b = server_region(m, 0x100);
  EXPECT_EQ(b.conflicts(), 1u);
  EXPECT_EQ(b.conflict_octets(), 32u);
  EXPECT_EQ(b.overwrites(), 0u);
}

TEST(Placement, TheSameContentOverAMessageInFlightIsNoFinding) {
  Conn first, second(40001);
  Analyzer a;
  const Model& m = race(a, first, second, pattern(32, 1));  // the first Write's own octets
  EXPECT_EQ(codes(m, Severity::note), std::vector<std::string>{});
  const ShadowBuffer& b = server_region(m, 0x100);
  EXPECT_EQ(b.conflicts(), 0u);
  EXPECT_EQ(b.overwrites(), 0u);
}

TEST(Placement, AMessageRewritingItsOwnOctetsIsAConflictBesideTheBoundsError) {
  Conn c;
  c.handshake();
  c.fpdu(0, Conn::tagged(Opcode::rdma_write, 0x100, 0x1000, false), Bytes(16, 0xAA));
  c.fpdu(0, Conn::tagged(Opcode::rdma_write, 0x100, 0x1000, true), Bytes(16, 0xBB));
  Analyzer a;
  const Model& m = c.run(a, c.segments());
  ASSERT_EQ(codes(m, Severity::note),
            (std::vector<std::string>{"ddp.tagged.bounds", "ddp.tagged.conflicting-placement"}));
  EXPECT_EQ(m.findings[1].frame, m.findings[0].frame);
  EXPECT_NE(m.findings[1].message.find("by their own message"), std::string::npos)
      << m.findings[1].message;
  EXPECT_EQ(server_region(m, 0x100).read(0x1000, 16), Bytes(16, 0xAA));  // nothing placed
}

// ---- the timing model fed by the engine (analysis/timing.h) ---------------------------------
// Frames are fed at frame * 1000 ns (Conn::feed): a latency is 1000 ns per frame between.

AnalyzerOptions timing_on() {
  AnalyzerOptions o;
  o.timing = TimingOptions{};
  return o;
}

// Handshake, a Read Request and its two Response segments, each FPDU its own segment:
// frames 3 Request, 4 Reply, 5 Read Request, 6 and 7 the Response.
Conn one_read() {
  Conn c;
  c.cut_at_fpdus = true;
  c.handshake();
  Bytes rr;
  ByteWriter bw(rr);
  wire::encode_read_request({0x200, 0x9000, 2000, 0x300, 0x1000}, bw);
  c.fpdu(0, Conn::untagged(Opcode::read_request, 1, 1, 0, true), rr);
  const Bytes r = pattern(2000, 77);
  c.fpdu(1, Conn::tagged(Opcode::read_response, 0x200, 0x9000, false), ByteView(r).first(1200));
  c.fpdu(1, Conn::tagged(Opcode::read_response, 0x200, 0x9000 + 1200, true),
         ByteView(r).subspan(1200));
  return c;
}

TEST(AnalyzerTiming, OffKeepsNoModel) {
  Analyzer a;
  EXPECT_EQ(a.timing(), nullptr);
}

TEST(AnalyzerTiming, AReadIsTimedToItsFirstAndLastResponseSegment) {
  Conn c = one_read();
  const auto segs = c.segments();
  ASSERT_EQ(segs.size(), 5u);
  Analyzer a(timing_on());
  c.run(a, segs);
  const Timing& t = *a.timing();
  const OperationStats& read = t.operations().at({0, OpKind::rdma_read, 0});
  EXPECT_EQ(read.requests, 1u);
  EXPECT_EQ(read.completions(), 1u);
  EXPECT_EQ(read.unanswered(), 0u);
  ASSERT_EQ(read.slowest.size(), 1u);
  EXPECT_EQ(read.slowest[0].request_frame, 5u);
  EXPECT_EQ(read.slowest[0].completion_frame, 7u);
  EXPECT_EQ(read.slowest[0].ns, 2000u);
  EXPECT_EQ(read.quantile(0.5), 2000u);
  EXPECT_FALSE(read.slowest[0].stalls.any());
  const OperationStats& first = t.operations().at({0, OpKind::rdma_read_first, 0});
  EXPECT_EQ(first.slowest.at(0).completion_frame, 6u);
  EXPECT_EQ(first.slowest.at(0).ns, 1000u);
  // Placed: the Read Request's 28 octets client-to-server, the 2000 of the Response back.
  const auto series = t.series();
  ASSERT_EQ(series.size(), 2u);
  EXPECT_EQ(series[0]->total, 28u);
  EXPECT_EQ(series[1]->total, 2000u);
  ASSERT_EQ(t.stags().size(), 1u);
  EXPECT_EQ(t.stags()[0].stag, 0x200u);
  EXPECT_EQ(t.stags()[0].octets, 2000u);
}

// What the plugin draws per PDU: each answering PDU carries the operations it answered, with the
// timing model's own latency and request frame.
struct OperationEvents final : AnalysisObserver {
  std::vector<std::pair<std::uint64_t, CompletedOperation>> seen;  // (PDU number, operation)
  std::uint64_t pdus = 0;
  std::vector<std::uint64_t> ids;                // PduEvent::id, in the order handed over
  std::vector<std::uint64_t> read_requests;      // ids of the events that carried a Read Request
  std::vector<std::size_t> read_request_slices;  // and how many segments each spans
  void on_pdu(const PduEvent& e) override {
    ++pdus;
    ids.push_back(e.id);
    if (e.read_request) {
      read_requests.push_back(e.id);
      read_request_slices.push_back(e.slices.size());
    }
    for (const auto& o : e.operations)
      seen.emplace_back(pdus, o);
  }
};

TEST(AnalyzerTiming, EachAnswerCarriesTheOperationsItAnswered) {
  Conn c = one_read();
  Analyzer a(timing_on());
  OperationEvents events;
  a.set_observer(&events);
  c.run(a, c.segments());
  // PDUs: MPA Request, Reply, Read Request, the Response's first and last segment.
  ASSERT_EQ(events.seen.size(), 2u);
  EXPECT_EQ(events.seen[0].first, 4u);
  EXPECT_EQ(events.seen[0].second.kind, OpKind::rdma_read_first);
  EXPECT_EQ(events.seen[0].second.ns, 1000u);
  EXPECT_EQ(events.seen[0].second.request_frame, 5u);
  EXPECT_EQ(events.seen[0].second.direction, 0);
  EXPECT_EQ(events.seen[1].first, 5u);
  EXPECT_EQ(events.seen[1].second.kind, OpKind::rdma_read);
  EXPECT_EQ(events.seen[1].second.ns, 2000u);
  EXPECT_TRUE(events.seen[1].second.operation.empty());
  // The same as the model's sample.
  const LatencySample& s = a.timing()->operations().at({0, OpKind::rdma_read, 0}).slowest.at(0);
  EXPECT_EQ(s.ns, events.seen[1].second.ns);
  EXPECT_EQ(s.request_frame, events.seen[1].second.request_frame);
}

// The pairing is core's: an answer names its request's own PDU (PduEvent::id), so a host that
// keeps PDUs (the plugin) links the two without matching requests itself.
TEST(AnalyzerTiming, EachAnswerNamesItsRequestsPdu) {
  Conn c = one_read();
  Analyzer a(timing_on());
  OperationEvents events;
  a.set_observer(&events);
  c.run(a, c.segments());
  EXPECT_EQ(events.ids, (std::vector<std::uint64_t>{0, 1, 2, 3, 4}));
  ASSERT_EQ(events.read_requests, (std::vector<std::uint64_t>{2}));
  ASSERT_EQ(events.seen.size(), 2u);
  EXPECT_EQ(events.seen[0].second.request_pdu, 2u);
  EXPECT_EQ(events.seen[1].second.request_pdu, 2u);
}

// Two Read Requests sent together, the second cut across two segments (siw-timing-read-loss has
// this shape: a segment of 27 Requests and the start of a 28th): each answer names the Request
// the ORQ pairs it with, the second's by the PDU completed in the later segment while its
// request frame stays that of its first octet.
TEST(AnalyzerTiming, AnAnswerNamesItsRequestAcrossSegments) {
  Conn c;
  c.handshake();
  Bytes rr1, rr2;
  ByteWriter w1(rr1), w2(rr2);
  wire::encode_read_request({0x200, 0x9000, 100, 0x300, 0x1000}, w1);
  wire::encode_read_request({0x201, 0xA000, 100, 0x301, 0x2000}, w2);
  const std::size_t first = c.fpdu(0, Conn::untagged(Opcode::read_request, 1, 1, 0, true), rr1);
  const std::size_t second = c.fpdu(0, Conn::untagged(Opcode::read_request, 1, 2, 0, true), rr2);
  const Bytes r = pattern(100, 5);
  c.fpdu(1, Conn::tagged(Opcode::read_response, 0x200, 0x9000, true), r);
  c.fpdu(1, Conn::tagged(Opcode::read_response, 0x201, 0xA000, true), r);
  // Cut the client's stream inside the second Request (the handshake is one segment a side).
  const std::size_t mss = (second - first) + (second - first) / 2;
  auto segs = c.segments(std::max<std::size_t>(mss, 64));
  Analyzer a(timing_on());
  OperationEvents events;
  a.set_observer(&events);
  c.run(a, segs);
  ASSERT_EQ(events.read_requests.size(), 2u);
  EXPECT_EQ(events.read_request_slices, (std::vector<std::size_t>{1, 2}));
  std::vector<std::pair<OpKind, std::uint64_t>> got;
  for (const auto& [n, o] : events.seen)
    if (o.kind == OpKind::rdma_read) got.emplace_back(o.kind, o.request_pdu);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].second, events.read_requests[0]);
  EXPECT_EQ(got[1].second, events.read_requests[1]);
  const auto& slow = a.timing()->operations().at({0, OpKind::rdma_read, 0}).slowest;
  ASSERT_EQ(slow.size(), 2u);
  // Both Requests' first octets came in one frame: core's request frame is the same for both.
  EXPECT_EQ(slow[0].request_frame, slow[1].request_frame);
}

TEST(AnalyzerTiming, WithoutTimingNoOperationIsReported) {
  Conn c = one_read();
  Analyzer a;
  OperationEvents events;
  a.set_observer(&events);
  c.run(a, c.segments());
  EXPECT_EQ(events.pdus, 5u);
  EXPECT_TRUE(events.seen.empty());
}

TEST(AnalyzerTiming, AReadWithoutResponseIsUnanswered) {
  Conn c = one_read();
  auto segs = c.segments();
  segs.resize(3);  // the Response never comes
  Analyzer a(timing_on());
  c.run(a, segs);
  const OperationStats& read = a.timing()->operations().at({0, OpKind::rdma_read, 0});
  EXPECT_EQ(read.requests, 1u);
  EXPECT_EQ(read.completions(), 0u);
  EXPECT_EQ(read.unanswered(), 1u);
  EXPECT_TRUE(read.slowest.empty());
}

TEST(AnalyzerTiming, ARetransmissionDuringAReadIsNamedOnIt) {
  Conn c = one_read();
  auto segs = c.segments();
  segs.insert(segs.begin() + 3, segs[2]);  // the Read Request again (frame 6)
  Analyzer a(timing_on());
  c.run(a, segs);
  const OperationStats& read = a.timing()->operations().at({0, OpKind::rdma_read, 0});
  ASSERT_EQ(read.completions(), 1u);
  const LatencySample& s = read.slowest.at(0);
  EXPECT_EQ(s.request_frame, 5u);
  EXPECT_EQ(s.completion_frame, 8u);
  EXPECT_EQ(s.ns, 3000u);
  EXPECT_EQ(s.stalls.events[static_cast<std::size_t>(StallKind::retransmission)], 1u);
  EXPECT_EQ(read.stalled, 1u);
}

TEST(AnalyzerTiming, AResponseReorderedCompletesWhenItsHoleFills) {
  Conn c = one_read();
  auto segs = c.segments();
  std::swap(segs[3], segs[4]);  // the last Response segment (frame 6) before the first (frame 7)
  Analyzer a(timing_on());
  c.run(a, segs);
  const Timing& t = *a.timing();
  const OperationStats& read = t.operations().at({0, OpKind::rdma_read, 0});
  ASSERT_EQ(read.completions(), 1u);
  const LatencySample& s = read.slowest.at(0);
  EXPECT_EQ(s.completion_frame, 7u);  // the frame that filled the hole delivered both
  EXPECT_EQ(s.ns, 2000u);
  EXPECT_EQ(s.stalls.events[static_cast<std::size_t>(StallKind::out_of_order)], 1u);
  // The segment that fills the hole is what tshark calls a retransmission (its original never
  // reached the capture point, or came late): named with its frame after the out-of-order one.
  EXPECT_EQ(s.stalls.events[static_cast<std::size_t>(StallKind::retransmission)], 1u);
  ASSERT_EQ(s.stalls.kept, 2u);
  EXPECT_EQ(s.stalls.first[0].kind, StallKind::out_of_order);
  EXPECT_EQ(s.stalls.first[0].frame, 6u);
  EXPECT_EQ(s.stalls.first[1].kind, StallKind::retransmission);
  EXPECT_EQ(s.stalls.first[1].frame, 7u);
  EXPECT_EQ(t.operations().at({0, OpKind::rdma_read_first, 0}).slowest.at(0).ns, 2000u);
}

TEST(AnalyzerTiming, AResponseAfterCaptureLossStillPairsAndNamesTheLoss) {
  Conn c = one_read();
  auto segs = c.segments();
  // The first Response segment is missing from the capture; the requester's ACK past it
  // declares the loss, then the last segment completes the Read.
  const Seg first = segs[3];
  segs.erase(segs.begin() + 3);
  Seg ack{0, segs[2].seq + static_cast<std::uint32_t>(segs[2].data.size()), {}};
  ack.ack = first.seq + static_cast<std::uint32_t>(first.data.size());
  segs.push_back(ack);
  Analyzer a(timing_on());
  c.run(a, segs);
  const Timing& t = *a.timing();
  EXPECT_EQ(t.stall_totals(0)[static_cast<std::size_t>(StallKind::capture_loss)], 1u);
  const OperationStats& read = t.operations().at({0, OpKind::rdma_read, 0});
  EXPECT_EQ(read.requests, 1u);
  ASSERT_EQ(read.completions(), 1u);
  EXPECT_EQ(read.slowest.at(0).stalls.events[static_cast<std::size_t>(StallKind::capture_loss)],
            1u);
}

TEST(AnalyzerTiming, AnAtomicIsTimedRequestToResponse) {
  Conn c;
  c.cut_at_fpdus = true;
  c.handshake();
  Bytes req, resp;
  ByteWriter w1(req), w2(resp);
  wire::AtomicRequest ar;
  ar.atomic_opcode = static_cast<std::uint8_t>(wire::AtomicOp::fetch_add);
  ar.request_id = 7;
  ar.remote_stag = 0x300;
  ar.remote_to = 0x1000;
  wire::encode_atomic_request(ar, w1);
  c.fpdu(0, Conn::untagged(Opcode::atomic_request, wire::kQnAtomicRequest, 1, 0, true), req);
  wire::encode_atomic_response({7, 41}, w2);
  c.fpdu(1, Conn::untagged(Opcode::atomic_response, wire::kQnAtomicResponse, 1, 0, true), resp);
  Analyzer a(timing_on());
  c.run(a, c.segments());
  const OperationStats& at = a.timing()->operations().at({0, OpKind::atomic, 0});
  EXPECT_EQ(at.requests, 1u);
  ASSERT_EQ(at.completions(), 1u);
  EXPECT_EQ(at.slowest[0].request_frame, 5u);
  EXPECT_EQ(at.slowest[0].completion_frame, 6u);
  EXPECT_EQ(at.slowest[0].ns, 1000u);
}

TEST(AnalyzerTiming, TheSameFindingsWithTimingOnAndOff) {
  Conn c = one_read();
  auto segs = c.segments();
  segs.insert(segs.begin() + 3, segs[2]);
  Analyzer on(timing_on()), off;
  c.run(on, segs);
  c.run(off, segs);
  ASSERT_EQ(on.model().findings.size(), off.model().findings.size());
  for (std::size_t i = 0; i < on.model().findings.size(); ++i)
    EXPECT_EQ(on.model().findings[i].id, off.model().findings[i].id);
}

TEST(AnalyzerTiming, AReadThatFillsTheRespondersIrdIsNamed) {
  for (std::uint16_t ird : {1, 16}) {
    Conn c;
    c.cut_at_fpdus = true;
    c.ird = ird;
    c.handshake();
    Bytes rr;
    ByteWriter bw(rr);
    wire::encode_read_request({0x200, 0x9000, 100, 0x300, 0x1000}, bw);
    c.fpdu(0, Conn::untagged(Opcode::read_request, 1, 1, 0, true), rr);
    c.fpdu(1, Conn::tagged(Opcode::read_response, 0x200, 0x9000, true), pattern(100));
    Analyzer a(timing_on());
    c.run(a, c.segments());
    const auto n = a.timing()->stall_totals(0)[static_cast<std::size_t>(StallKind::read_credit)];
    EXPECT_EQ(n, ird == 1 ? 1u : 0u) << ird;
    const LatencySample& s = a.timing()->operations().at({0, OpKind::rdma_read, 0}).slowest.at(0);
    EXPECT_EQ(s.stalls.events[static_cast<std::size_t>(StallKind::read_credit)], n) << ird;
  }
}

// The engine reuses its events (PduEvent::reset): a reset event reads as a fresh one, whatever
// the PDU before it set.
TEST(PduEventReset, ResetEventReadsAsAFreshOne) {
  static const std::uint8_t octets[4] = {1, 2, 3, 4};
  static const wire::MpaReqRep reqrep{};
  PduEvent e;
  e.id = 7;
  e.stream = 3;
  e.direction = 1;
  e.kind = PduKind::unframed;
  e.llp = Llp::sctp;
  e.sctp_stream_id = 9;
  e.stream_offset = 100;
  e.raw = ByteView(octets);
  e.slices.push_back({5, 6, 7});
  e.reqrep = &reqrep;
  e.ulpdu_length = 12;
  e.plain = ByteView(octets);
  e.ulpdu = ByteView(octets);
  e.crc_field = 0xabcd;
  e.crc_expected = 0x1234;
  e.crc_ok = false;
  e.markers.push_back({});
  e.marker_offsets.push_back(2);
  e.leading_marker = true;
  e.framing_resumed = true;
  e.resumed_after_gap = true;
  e.resync_skipped = 11;
  e.ddp = wire::DdpSegment{};
  e.read_request = wire::ReadRequest{};
  e.terminate = wire::Terminate{};
  e.terminate->rdmap_header.assign(28, 1);
  e.atomic_request = wire::AtomicRequest{};
  e.atomic_response = wire::AtomicResponse{};
  e.immediate_data = 42;
  e.analysis.placed = true;
  e.analysis.region = RegionKey{{}, 0x100};
  e.analysis.region_source = RegionSource::advertisement;
  e.analysis.region_bounds_known = true;
  e.analysis.offset_in_region = 8;
  e.analysis.region_bytes_placed = 16;
  e.analysis.expected_msn = 2;
  e.analysis.message = 3;
  e.analysis.request_frame = 4;
  e.analysis.response_time_ns = 5;
  e.analysis.quoted_frame = 6;
  e.analysis.messages_completed.push_back(1);
  e.analysis.messages_delivered.push_back(1);
  e.findings.push_back(0);
  e.operations.push_back({OpKind::rdma_read, 1, 2, 3, 4, "NVMe Read", "NVMe Read cid 1"});
  e.reset();
  const PduEvent f;
  EXPECT_EQ(e.id, f.id);
  EXPECT_EQ(e.stream, f.stream);
  EXPECT_EQ(e.direction, f.direction);
  EXPECT_EQ(e.kind, f.kind);
  EXPECT_EQ(e.llp, f.llp);
  EXPECT_EQ(e.sctp_stream_id, f.sctp_stream_id);
  EXPECT_EQ(e.stream_offset, f.stream_offset);
  EXPECT_TRUE(e.raw.empty());
  EXPECT_TRUE(e.slices.empty());
  EXPECT_EQ(e.reqrep, nullptr);
  EXPECT_EQ(e.ulpdu_length, f.ulpdu_length);
  EXPECT_TRUE(e.plain.empty());
  EXPECT_TRUE(e.ulpdu.empty());
  EXPECT_EQ(e.crc_field, f.crc_field);
  EXPECT_FALSE(e.crc_expected);
  EXPECT_EQ(e.crc_ok, f.crc_ok);
  EXPECT_TRUE(e.markers.empty());
  EXPECT_TRUE(e.marker_offsets.empty());
  EXPECT_EQ(e.leading_marker, f.leading_marker);
  EXPECT_EQ(e.framing_resumed, f.framing_resumed);
  EXPECT_EQ(e.resumed_after_gap, f.resumed_after_gap);
  EXPECT_EQ(e.resync_skipped, f.resync_skipped);
  EXPECT_FALSE(e.ddp);
  EXPECT_FALSE(e.read_request);
  EXPECT_FALSE(e.terminate);
  EXPECT_FALSE(e.atomic_request);
  EXPECT_FALSE(e.atomic_response);
  EXPECT_FALSE(e.immediate_data);
  EXPECT_EQ(e.analysis.placed, f.analysis.placed);
  EXPECT_FALSE(e.analysis.region);
  EXPECT_EQ(e.analysis.region_source, f.analysis.region_source);
  EXPECT_EQ(e.analysis.region_bounds_known, f.analysis.region_bounds_known);
  EXPECT_EQ(e.analysis.offset_in_region, f.analysis.offset_in_region);
  EXPECT_EQ(e.analysis.region_bytes_placed, f.analysis.region_bytes_placed);
  EXPECT_FALSE(e.analysis.expected_msn);
  EXPECT_FALSE(e.analysis.message);
  EXPECT_FALSE(e.analysis.request_frame);
  EXPECT_FALSE(e.analysis.response_time_ns);
  EXPECT_FALSE(e.analysis.quoted_frame);
  EXPECT_TRUE(e.analysis.messages_completed.empty());
  EXPECT_TRUE(e.analysis.messages_delivered.empty());
  EXPECT_TRUE(e.findings.empty());
  EXPECT_TRUE(e.operations.empty());
}

// What one PDU set is not seen on the next: each Send after the Read Request and the Read
// Response carries no Read Request, region or completed operation of theirs.
TEST(PduEventReset, NothingOfAPduIsSeenOnTheNext) {
  struct Events final : AnalysisObserver {
    std::vector<PduEvent> seen;  // copies: an event is valid only in the callback
    void on_pdu(const PduEvent& e) override {
      PduEvent& c = seen.emplace_back();
      c.kind = e.kind;
      c.read_request = e.read_request;
      c.ddp = e.ddp;
      static_cast<SegmentFacts&>(c.analysis) = e.analysis;
      c.analysis.messages_completed = e.analysis.messages_completed;
      c.findings = e.findings;
      c.operations = e.operations;
    }
  } events;
  Conn c = one_read();
  c.send(0, 1, pattern(10));
  Analyzer a(timing_on());
  a.set_observer(&events);
  c.run(a, c.segments());
  // MPA Request, Reply, Read Request, two Read Response segments, the Send.
  ASSERT_EQ(events.seen.size(), 6u);
  EXPECT_TRUE(events.seen[2].read_request);
  EXPECT_FALSE(events.seen[4].operations.empty());
  EXPECT_TRUE(events.seen[4].analysis.region);
  const PduEvent& send = events.seen[5];
  ASSERT_TRUE(send.ddp);
  EXPECT_FALSE(send.read_request);
  EXPECT_FALSE(send.analysis.region);
  EXPECT_FALSE(send.analysis.request_frame);
  EXPECT_TRUE(send.operations.empty());
  EXPECT_TRUE(send.findings.empty());
  ASSERT_EQ(send.analysis.messages_completed.size(), 1u);
}

}  // namespace
}  // namespace ddpscope
