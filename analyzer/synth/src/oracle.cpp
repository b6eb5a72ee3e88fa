// SPDX-License-Identifier: GPL-2.0-or-later
#include "oracle.h"

#include <algorithm>
#include <array>
#include <map>
#include <memory>
#include <optional>

#include "ddpscope/common/limits.h"
#include "ddpscope/rdmap/data_sink.h"
#include "ddpscope/ulp/advert.h"
#include "ddpscope/wire/terminate_error.h"

namespace ddpscope::synth {
namespace {

// Octets of an untagged message kept for the advertisement decoders: the analysis keeps as many
// (analysis/engine_sink.cpp); an advertisement is a small message.
constexpr std::size_t kBodyKeep = 4096;

// The octets a scenario wrote into one Data Sink region, as disjoint extents keyed by their
// first TO (one octet per map node would cost ~50 octets per octet written). A later write
// wins where writes overlap.
class WrittenBytes {
 public:
  void write(std::uint64_t to, ByteView data) {
    if (data.empty()) return;
    const std::uint64_t room = ~std::uint64_t{0} - to;  // octets after `to` below 2^64
    if (data.size() - 1 > room) data = data.first(room + 1);
    const std::uint64_t last = to + (data.size() - 1);
    // The extent that holds `to` or ends right before it, else a new one at `to`.
    auto it = extents_.upper_bound(to);
    if (it != extents_.begin() && (to == 0 || last_of(*std::prev(it)) >= to - 1))
      --it;
    else
      it = extents_.emplace_hint(it, to, Bytes{});
    const std::uint64_t base = it->first;
    Bytes& b = it->second;
    if (last - base + 1 > b.size()) b.resize(last - base + 1);
    // Absorb the extents that now touch it: their octets past `last` stay.
    for (auto nx = std::next(it); nx != extents_.end() && nx->first - base <= b.size();) {
      const std::size_t from = b.size() - (nx->first - base);
      if (from < nx->second.size()) b.insert(b.end(), nx->second.begin() + from, nx->second.end());
      nx = extents_.erase(nx);
    }
    std::copy(data.begin(), data.end(), b.begin() + static_cast<std::ptrdiff_t>(to - base));
  }
  bool empty() const { return extents_.empty(); }
  // Everything from the first written octet to the last, zero where nothing was written.
  std::uint64_t base() const { return extents_.begin()->first; }
  Bytes dense() const {
    Bytes out(last_of(*extents_.rbegin()) - base() + 1, 0);
    for (const auto& [to, b] : extents_)
      std::copy(b.begin(), b.end(), out.begin() + static_cast<std::ptrdiff_t>(to - base()));
    return out;
  }

 private:
  static std::uint64_t last_of(const std::pair<const std::uint64_t, Bytes>& e) {
    return e.first + (e.second.size() - 1);
  }
  std::map<std::uint64_t, Bytes> extents_;
};

// What the analysis knows of one region at one host, and where it learned it. No entry and an
// entry `observed` (an STag only seen in segments) tell a Data Sink the same.
struct KnownRegion {
  enum class Source : std::uint8_t { observed, regions_file, advertisement, read_request };
  Source source = Source::observed;
  std::optional<std::uint64_t> base;
  std::optional<std::uint64_t> length;
  bool bounds_enforced = false;  // the regions file and advertisements state the whole region
  std::optional<std::uint32_t> stream;  // the connection it was announced on
  bool invalidated = false;
};
using RegionKey = std::pair<net::Address, std::uint32_t>;  // (host, STag)

// One host's regions as its Data Sink asks for them. What a region's facts are is the
// analysis' reading of what it learned (analysis/engine_sink.cpp, ShadowView): bounds only
// where the whole region was stated, the stream only where it was announced on one, and with
// a regions file an STag it does not list is no region.
class HostView final : public rdmap::SinkMemory {
 public:
  HostView(const std::map<RegionKey, KnownRegion>& regions, const net::Address& host, bool known)
      : regions_(regions), host_(host), known_(known) {}
  const ddp::RegionFacts* region(std::uint32_t stag) override {
    auto it = regions_.find({host_, stag});
    if (it == regions_.end()) return nullptr;
    const KnownRegion& k = it->second;
    if (known_ && k.source == KnownRegion::Source::observed) return nullptr;
    facts_ = ddp::RegionFacts{};
    facts_.valid = !k.invalidated;
    if (k.bounds_enforced && k.base && k.length) {
      facts_.base = k.base;
      facts_.length = k.length;
    }
    if (k.stream && k.source != KnownRegion::Source::regions_file) facts_.stream = *k.stream;
    return &facts_;
  }
  bool regions_known() const override { return known_; }
  // No receive buffer size is known, as for `ddpscope analyze` without --send-buffer.
  ddp::UntaggedBuffer send_buffer() override { return {}; }

 private:
  const std::map<RegionKey, KnownRegion>& regions_;
  net::Address host_;
  bool known_;
  ddp::RegionFacts facts_;
};

class Oracle {
 public:
  Oracle(const Scenario& s, const Emitter& e) : s_(s), e_(e) {}

  Prediction run() {
    known_ = !s_.regions.empty();
    install_regions_file();
    sinks_.resize(e_.connections());
    bodies_.resize(e_.connections());
    for (std::size_t ci = 0; ci < e_.connections(); ++ci)
      configure(static_cast<int>(ci));
    Prediction out;
    for (const Arrival& a : arrival_order())
      receive(e_.segments()[a.segment], a.seen ? &out.expected : nullptr);
    for (const auto& [key, mem] : written_) {
      if (mem.empty()) continue;
      SynthResult::RegionData r;
      r.owner = key.first.to_string();
      r.stag = key.second;
      r.base = mem.base();
      r.bytes = mem.dense();
      out.regions_written.push_back(std::move(r));
    }
    return out;
  }

 private:
  // ---- what the analysis knows before any segment: the regions file ----
  void install(const net::Address& host, const RegionFileEntry& r) {
    KnownRegion& k = regions_[{host, r.stag}];
    k = KnownRegion{};
    k.source = KnownRegion::Source::regions_file;
    k.base = r.base;
    k.length = r.length;
    k.bounds_enforced = true;
  }
  // A region with a sink belongs to that host (a later entry replaces an earlier one); one
  // without applies to every host, where no entry of its own names the STag (the first wins).
  void install_regions_file() {
    for (const auto& r : s_.regions)
      if (r.sink) install(*r.sink, r);
    for (std::size_t ci = 0; ci < e_.connections(); ++ci)
      for (const auto& ep : e_.conn(static_cast<int>(ci)).ep)
        for (const auto& r : s_.regions)
          if (!r.sink && !regions_.count({ep.addr, r.stag})) install(ep.addr, r);
  }

  // sinks_[ci][d] is the Data Sink of the side that receives what side d sends: it accepts
  // Read Requests up to that receiver's IRD (RFC 6581 §9.1); the responder's waits for the
  // initiator's RTR (RFC 6581 §9.2).
  void configure(int ci) {
    const Conn& c = e_.conn(ci);
    const Limits limits;
    for (int d = 0; d < 2; ++d) {
      rdmap::SinkConfig sc;
      sc.stream = ddp::StreamFacts{static_cast<std::uint64_t>(ci), std::nullopt};
      sc.max_reads = limits.max_outstanding_reads;
      sc.max_atomics = limits.max_outstanding_atomics;
      sinks_[ci][d] = rdmap::DataSink(sc);
    }
    ulp_.push_back(std::make_unique<UlpStreamDecoders>(advertisers_));
    if (!c.params) return;
    UlpSetup setup;
    setup.request = c.spec->client_private_data;
    setup.reply = c.spec->server_private_data;
    setup.initiator = c.ep[0];
    setup.responder = c.ep[1];
    ulp_[ci]->setup(setup);
    sinks_[ci][0].set_ird(c.params->responder_ird);
    sinks_[ci][1].set_ird(c.params->initiator_ird);
    if (c.params->peer_to_peer) sinks_[ci][0].expect_rtr(c.params->rtr);
  }

  // ---- when the analyzer receives each segment ----
  struct Arrival {
    std::size_t segment = 0;  // index into segments()
    bool seen = true;         // the analyzer receives it as the endpoint did
  };
  // The segments in the order the Data Sinks receive them: by the capture position of the
  // packet that completes the segment's FPDU in its in-order stream (TCP holds octets past a
  // hole; a retransmission adds nothing), then by stream offset. A dropped packet is capture
  // loss: the endpoints had its octets (the ACKs cover them), so the sinks get them where it
  // was; from there on, and from an FPDU that cannot be framed, what the analyzer makes of the
  // connection is its recovery policy: those segments are not `seen`.
  std::vector<Arrival> arrival_order() const {
    const auto& packets = e_.packets();
    const auto& order = e_.order();
    const auto& segs = e_.segments();
    const std::size_t never = order.size();
    std::vector<std::size_t> blind_from(e_.connections(), never);
    // Per direction: the octets delivered in order so far and the segments in stream order.
    struct Stream {
      std::uint64_t delivered = 0;
      std::map<std::uint64_t, std::uint64_t> held;  // begin -> end, past a hole
      std::vector<std::size_t> segs;
      std::size_t next = 0;
    };
    std::map<std::pair<int, int>, Stream> streams;
    for (std::size_t k = 0; k < segs.size(); ++k)
      streams[{segs[k].conn, segs[k].dir}].segs.push_back(k);  // emitted in stream order
    std::vector<std::size_t> arrival(segs.size(), never);
    for (std::size_t i = 0; i < order.size(); ++i) {
      const Packet& p = packets[order[i]];
      if (p.dropped) blind_from[p.conn] = std::min(blind_from[p.conn], i);
      if (p.payload.empty() || p.receiver_dropped) continue;  // its retransmission delivers it
      auto it = streams.find({p.conn, p.dir});
      if (it == streams.end()) continue;
      Stream& st = it->second;
      std::uint64_t& end = st.held[p.offset];
      end = std::max(end, p.offset + p.payload.size());
      while (!st.held.empty() && st.held.begin()->first <= st.delivered) {
        st.delivered = std::max(st.delivered, st.held.begin()->second);
        st.held.erase(st.held.begin());
      }
      for (; st.next < st.segs.size() && segs[st.segs[st.next]].end <= st.delivered; ++st.next)
        arrival[st.segs[st.next]] = i;
    }
    for (std::size_t k = 0; k < segs.size(); ++k)
      if (segs[k].fate == EmittedSegment::Fate::unframed)
        blind_from[segs[k].conn] = std::min(blind_from[segs[k].conn], arrival[k]);
    std::vector<Arrival> out;
    for (std::size_t k = 0; k < segs.size(); ++k)
      out.push_back({k, arrival[k] < blind_from[segs[k].conn]});
    std::stable_sort(out.begin(), out.end(), [&](const Arrival& a, const Arrival& b) {
      return arrival[a.segment] < arrival[b.segment];
    });
    return out;
  }

  // ---- one segment through its Data Sink ----
  // What the sink finds is expected in `out`; without one (a segment the analyzer does not see
  // as the sink does) the segment only keeps the sink's state and what it places.
  void receive(const EmittedSegment& r, std::vector<ExpectedFinding>* out) {
    rdmap::DataSink& sink = sinks_[r.conn][r.dir];
    if (r.fate == EmittedSegment::Fate::crc_dropped) {
      // What the dropped FPDU held is missing, at this sink and at the sender's own (as the
      // analyzer does).
      sink.lost_input(Consequence::crc);
      sinks_[r.conn][1 - r.dir].own_side_lost(Consequence::crc);
      return;
    }
    const auto seg = wire::decode_ddp_segment(r.ulpdu);
    if (!seg) return;  // shorter than its header: no Data Sink sees it
    const wire::DdpSegment& s = seg.value();
    const Conn& c = e_.conn(r.conn);
    const net::Address& host = c.ep[1 - r.dir].addr;
    HostView view(regions_, host, known_);
    const rdmap::SegmentStep step = sink.receive(s, view);
    if (out && step.violation && !step.repeated)
      add(*out, r, step.violation->id, step.violation->detail, step.after_loss);
    if (!step.decoded) return;
    if (step.kind == rdmap::SegmentStep::Kind::tagged) {
      if (step.read_done) sinks_[r.conn][1 - r.dir].read_answered(step.read->req);  // its IRQ
      if (step.placed && r.scenario_data && !s.payload.empty())
        written_[{host, s.header.stag}].write(s.header.to, s.payload);
      return;
    }
    if (step.kind == rdmap::SegmentStep::Kind::ignored) return;
    Bytes& body = bodies_[r.conn][r.dir][step.qn];
    if (step.starts_message) body.clear();
    const std::size_t keep =
        std::min(s.payload.size(), kBodyKeep - std::min(kBodyKeep, body.size()));
    body.insert(body.end(), s.payload.begin(),
                s.payload.begin() + static_cast<std::ptrdiff_t>(keep));
    if (step.ends_message && !step.damaged) message(r, step, body, out);
  }

  // The finding at the frame holding the segment's first octet, worded as the generator's
  // Intent for it when it aimed at it.
  void add(std::vector<ExpectedFinding>& out, const EmittedSegment& r, FindingId id,
           const std::string& words, bool consequence) const {
    ExpectedFinding f;
    f.code = std::string(finding_spec(id).code);
    f.frame = e_.frame_at(r.conn, r.dir, r.begin);
    f.consequence = consequence;
    f.op = r.op;
    f.detail = words;
    for (const Intent& i : r.intents)
      if (i.id == id) f.detail = i.detail;
    if (f.frame != 0) out.push_back(std::move(f));
  }

  // A complete untagged message: what it tells the analysis beyond its queue (RFC 5040 §5,
  // RFC 7306), as analysis/engine_sink.cpp takes it.
  void message(const EmittedSegment& r, const rdmap::SegmentStep& step, const Bytes& body,
               std::vector<ExpectedFinding>* out) {
    const Conn& c = e_.conn(r.conn);
    rdmap::DataSink& sender = sinks_[r.conn][1 - r.dir];  // the sender's own Data Sink
    switch (static_cast<wire::Opcode>(step.opcode)) {
      case wire::Opcode::read_request:
        if (step.read_request) {
          rdmap::OutstandingRead o;
          o.req = *step.read_request;
          sender.read_requested(o);
          learn_from_read_request(r.conn, r.dir, *step.read_request);
        }
        return;
      case wire::Opcode::send_invalidate:
      case wire::Opcode::send_se_invalidate:
        if (step.invalidated)
          regions_[{c.ep[1 - r.dir].addr, *step.invalidated}].invalidated = true;
        [[fallthrough]];
      case wire::Opcode::send:
      case wire::Opcode::send_se:
        learn_advertisements(r.conn, r.dir, step, body);
        return;
      case wire::Opcode::atomic_request:
        if (step.atomic_request) {
          rdmap::PendingAtomic a;
          a.request_id = step.atomic_request->request_id;
          sender.atomic_requested(a);
        }
        return;
      case wire::Opcode::terminate: {
        // Not a rule broken: the analysis reports every Terminate, and one in siw's layout.
        auto t = wire::decode_terminate(body);
        if (!t || !out) return;
        const auto& tc = t->control;
        add(*out, r, FindingId::rdmap_terminate, terminate_error_name(tc.layer, tc.etype, tc.code),
            false);
        if (t->layout == wire::TerminateLayout::siw_bitfield)
          add(*out, r, FindingId::rdmap_terminate_nonconformant,
              "control word in Linux siw's bit-field order", false);
        return;
      }
      default:
        return;
    }
  }

  // A Read Request names the requester's sink, valid for this transfer, and the responder's
  // source (RFC 5040 §4.4): regions the analysis learns without their bounds.
  void learn_from_read_request(int ci, int dir, const wire::ReadRequest& rr) {
    const Conn& c = e_.conn(ci);
    const auto stream = static_cast<std::uint32_t>(ci);
    KnownRegion& sink = regions_[{c.ep[dir].addr, rr.sink_stag}];
    if (sink.source == KnownRegion::Source::observed && !sink.base) {
      sink.source = KnownRegion::Source::read_request;
      sink.base = rr.sink_to;
      sink.length = rr.size;
    }
    if (!sink.stream) sink.stream = stream;
    sink.invalidated = false;
    KnownRegion& src = regions_[{c.ep[1 - dir].addr, rr.source_stag}];
    if (src.source == KnownRegion::Source::observed && !src.base) {
      src.source = KnownRegion::Source::read_request;
      src.base = rr.source_to;
      src.length = rr.size;
      if (!src.stream) src.stream = stream;
    }
  }

  // The regions a complete Send advertises, judged by core's own decoders (ulp/advert.h) with
  // the connection's endpoints and set-up; the regions file wins over an advertisement. A
  // command's keys it asked to be invalidated are invalid after its completion, as the analysis
  // takes them (analysis/engine_ulp.cpp).
  void learn_advertisements(int ci, int dir, const rdmap::SegmentStep& step, const Bytes& body) {
    const Conn& c = e_.conn(ci);
    AdvertContext ctx{step.opcode, c.ep[dir], c.ep[1 - dir], static_cast<std::uint32_t>(ci)};
    ctx.length = step.message_length;
    ctx.invalidate_stag = step.invalidated.value_or(0);
    ctx.from_initiator = dir == 0;
    ctx.msn = step.msn;
    const auto learn = [&](const AdvertisedRegion& a) {
      KnownRegion& k = regions_[{a.owner, a.stag}];
      if (k.source == KnownRegion::Source::regions_file) return;
      k.source = KnownRegion::Source::advertisement;
      k.base = a.base;
      k.length = a.length;
      k.bounds_enforced = true;
      k.stream = static_cast<std::uint32_t>(ci);
      k.invalidated = false;
    };
    for (const auto& d : ulp_[ci]->decode(ctx, body)) {
      for (const AdvertisedRegion& a : d.events.regions)
        learn(a);
      for (const UlpCommand& cmd : d.events.commands) {
        auto& keys = commands_[{ci, cmd.id}];
        keys.clear();
        for (const AdvertisedRegion& a : cmd.regions) {
          learn(a);
          if (a.invalidate) keys.emplace_back(a.owner, a.stag);
        }
      }
      for (const UlpCompletion& done : d.events.completions) {
        auto it = commands_.find({ci, done.id});
        if (it == commands_.end()) continue;
        for (const RegionKey& k : it->second)
          regions_[k].invalidated = true;
        commands_.erase(it);
      }
    }
  }

  const Scenario& s_;
  const Emitter& e_;
  const std::vector<std::unique_ptr<AdvertisementDecoder>> advertisers_ =
      default_advertisement_decoders();
  std::vector<std::unique_ptr<UlpStreamDecoders>> ulp_;  // by connection
  // Outstanding ULP commands by (connection, id): the keys their completion invalidates.
  std::map<std::pair<int, std::uint64_t>, std::vector<RegionKey>> commands_;
  bool known_ = false;  // a regions file is given: an STag it does not list is no region
  std::map<RegionKey, KnownRegion> regions_;
  std::vector<std::array<rdmap::DataSink, 2>> sinks_;  // by connection and sending side
  std::vector<std::array<std::array<Bytes, rdmap::DataSink::kQueues>, 2>> bodies_;
  std::map<RegionKey, WrittenBytes> written_;
};

}  // namespace

Prediction predict(const Scenario& scenario, const Emitter& emitted) {
  return Oracle(scenario, emitted).run();
}

}  // namespace ddpscope::synth
