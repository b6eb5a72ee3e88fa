// SPDX-License-Identifier: GPL-2.0-or-later
#include "generator.h"

#include <algorithm>
#include <array>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>

#include "ddpscope/findings/catalog.h"
#include "ddpscope/net/packet.h"
#include "ddpscope/ulp/advert.h"
#include "ddpscope/ulp/rping.h"
#include "ddpscope/wire/mpa.h"
#include "ddpscope/wire/rdmap.h"

namespace ddpscope::synth {
namespace {

using wire::DdpHeader;

// A scenario that is well-formed JSON but cannot be generated (e.g. a fault that needs CRC on
// a connection without CRC). Caught in generate().
struct GenerateError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Octets appended to one direction's stream: an MPA Request/Reply or one FPDU.
struct Unit {
  Bytes wire;
  std::uint64_t offset = 0;  // stream offset (0 = first payload octet after the SYN)
};

struct Dir {
  std::uint32_t isn = 0;
  std::uint64_t len = 0;      // octets produced so far: the offset of the next unit
  std::uint64_t flushed = 0;  // octets already cut into packets
  std::vector<Unit> pending;
  std::uint64_t s0 = 0;  // offset of the first octet after this side's Request/Reply
  bool markers = false;  // this side inserts markers (the peer asked with M)
  bool crc = false;
  std::uint32_t peer_mss = 0;
  std::uint32_t mulpdu = 0;
  std::uint32_t tcp_segment = 0;
  std::map<std::uint32_t, std::uint32_t> next_msn;  // per QN, starting at 1 (RFC 5041 §5.1)
  int outstanding_reads = 0;                        // Read Requests this side awaits answers to
  std::vector<std::uint32_t> outstanding_atomics;   // request ids this side awaits
  std::optional<std::uint16_t> ird;                 // this side's IRD (RFC 6581), as responder
  // The last DDP segment this side sent, for a Terminate from the peer to quote.
  std::optional<DdpHeader> last_header;
  std::uint16_t last_ulpdu_length = 0;
  Bytes last_rdmap_body;
  std::uint32_t msn(std::uint32_t qn) {
    auto it = next_msn.find(qn);
    return it == next_msn.end() ? 1 : it->second;
  }
};

struct Conn {
  const ConnectionSpec* spec = nullptr;
  std::array<Dir, 2> dirs;
  std::array<net::Endpoint, 2> ep;  // by side
  bool rejected = false;
};

struct Packet {
  int id = 0;
  int conn = 0;
  int dir = 0;
  std::uint32_t seq = 0;
  std::uint32_t ack = 0;
  std::uint8_t flags = 0;
  std::optional<std::uint16_t> mss;
  Bytes payload;
  std::uint64_t offset = 0;  // stream offset of payload[0] (of the FIN for a FIN)
  bool dropped = false;
};

struct Expect {
  std::string code;
  int conn = 0;
  int dir = 0;
  std::uint64_t offset = 0;   // first octet of the offending PDU
  std::optional<int> packet;  // or: this packet (gap, conflict)
  int op = -1;
  bool consequence = false;
  std::string detail;
};

struct KnownRegion {
  net::Address owner;
  bool any_owner = false;
  std::uint32_t stag = 0;
  std::uint64_t base = 0;
  std::uint64_t length = 0;
  std::optional<int> conn;  // stream the STag was advertised on
  bool from_file = false;
};

// Where one operation's own octets went, for TCP faults naming the operation.
struct OpRange {
  int conn = -1;
  int dir = 0;
  std::uint64_t begin = 0;
  std::uint64_t end = 0;
};

// The FPDU-level view of a DDP segment being built, before encoding.
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

struct SegmentDraft {
  DdpHeader header;
  Bytes body;  // after the DDP header
};

class Generator {
 public:
  explicit Generator(const Scenario& s) : s_(s) {}

  void run(Generated& out) {
    for (const auto& r : s_.regions) {
      KnownRegion k;
      k.any_owner = !r.sink;
      if (r.sink) k.owner = *r.sink;
      k.stag = r.stag;
      k.base = r.base;
      k.length = r.length;
      k.from_file = true;
      regions_.push_back(k);
    }
    regions_file_ = !s_.regions.empty();
    conns_.resize(s_.connections.size());
    op_ranges_.resize(s_.ops.size());
    op_units_.resize(s_.ops.size());
    for (std::size_t i = 0; i < conns_.size(); ++i)
      open_connection(static_cast<int>(i));
    for (std::size_t i = 0; i < s_.ops.size(); ++i)
      run_op(static_cast<int>(i));
    for (std::size_t i = 0; i < conns_.size(); ++i) {
      flush(static_cast<int>(i), 0, false);
      flush(static_cast<int>(i), 1, false);
    }
    for (std::size_t i = 0; i < conns_.size(); ++i)
      close_connection(static_cast<int>(i));
    for (const auto& m : s_.expect)
      manual_expect(m);
    std::vector<TcpFault> faults = s_.tcp_faults;
    for (const auto& op : s_.ops)
      faults.insert(faults.end(), op.tcp_faults.begin(), op.tcp_faults.end());
    for (const auto& f : faults)
      apply_tcp_fault(f);
    finalize(out);
  }

 private:
  // ------------------------------------------------------------------ expectations
  void expect(const std::string& code, int ci, int dir, std::uint64_t offset, int op,
              std::string detail, bool consequence = false) {
    if (!finding_by_code(code)) throw GenerateError("internal: unknown finding code " + code);
    expects_.push_back({code, ci, dir, offset, std::nullopt, op, consequence, std::move(detail)});
  }
  void expect_packet(const std::string& code, int ci, int dir, int packet, int op,
                     std::string detail) {
    expects_.push_back({code, ci, dir, 0, packet, op, false, std::move(detail)});
  }
  // A fault whose follow-on findings depend on engine policy (resynchronisation, whether a
  // broken segment still counts for MSN/MO tracking): the expected list becomes a lower bound.
  void cascading() { exhaustive_ = false; }

  [[noreturn]] void fail(int op, const std::string& what) const {
    throw GenerateError((op >= 0 ? s_.ops[op].where : std::string("scenario")) + ": " + what);
  }

  // ------------------------------------------------------------------ packets
  int add_packet(int ci, int dir, std::uint8_t flags, Bytes payload, std::uint64_t offset,
                 std::optional<std::uint16_t> mss = std::nullopt) {
    Conn& c = conns_[ci];
    Dir& d = c.dirs[dir];
    Dir& p = c.dirs[1 - dir];
    Packet pk;
    pk.id = static_cast<int>(packets_.size());
    pk.conn = ci;
    pk.dir = dir;
    pk.flags = flags;
    pk.mss = mss;
    pk.offset = offset;
    pk.seq = d.isn + 1 + static_cast<std::uint32_t>(offset);
    if (flags & net::tcp_flag::syn) pk.seq = d.isn;
    if (flags & net::tcp_flag::ack) pk.ack = p.isn + 1 + static_cast<std::uint32_t>(p.flushed);
    pk.payload = std::move(payload);
    packets_.push_back(std::move(pk));
    return packets_.back().id;
  }
  void pure_ack(int ci, int dir) {
    add_packet(ci, dir, net::tcp_flag::ack, {}, conns_[ci].dirs[dir].flushed);
  }

  // Appends a unit (Request/Reply or FPDU) to a direction; returns its stream offset.
  std::uint64_t append(int ci, int dir, Bytes wire, int op) {
    Dir& d = conns_[ci].dirs[dir];
    const std::uint64_t off = d.len;
    d.len += wire.size();
    if (op >= 0) {
      OpRange& r = op_ranges_[op];
      if (r.conn < 0) r = {ci, dir, off, off};
      if (r.conn == ci && r.dir == dir) r.end = d.len;
      op_units_[op].push_back(off);
    }
    d.pending.push_back({std::move(wire), off});
    return off;
  }

  // Cuts the pending octets of a direction into TCP segments; the peer then ACKs them.
  void flush(int ci, int dir, bool ack = true) {
    Conn& c = conns_[ci];
    Dir& d = c.dirs[dir];
    if (d.pending.empty()) return;
    const std::uint32_t per = c.spec->fpdus_per_segment;
    if (per > 0) {
      for (std::size_t i = 0; i < d.pending.size(); i += per) {
        Bytes chunk;
        const std::uint64_t off = d.pending[i].offset;
        for (std::size_t k = i; k < std::min<std::size_t>(d.pending.size(), i + per); ++k)
          chunk.insert(chunk.end(), d.pending[k].wire.begin(), d.pending[k].wire.end());
        add_packet(ci, dir, net::tcp_flag::ack | net::tcp_flag::psh, std::move(chunk), off);
        d.flushed = off + packets_.back().payload.size();
      }
    } else {
      Bytes all;
      const std::uint64_t base = d.pending.front().offset;
      for (auto& u : d.pending)
        all.insert(all.end(), u.wire.begin(), u.wire.end());
      const std::size_t seg = std::max<std::uint32_t>(1, d.tcp_segment);
      for (std::size_t pos = 0; pos < all.size(); pos += seg) {
        const std::size_t n = std::min(seg, all.size() - pos);
        Bytes chunk(all.begin() + static_cast<std::ptrdiff_t>(pos),
                    all.begin() + static_cast<std::ptrdiff_t>(pos + n));
        const bool last = pos + n == all.size();
        add_packet(ci, dir, net::tcp_flag::ack | (last ? net::tcp_flag::psh : 0), std::move(chunk),
                   base + pos);
        d.flushed = base + pos + n;
      }
    }
    d.pending.clear();
    if (ack) pure_ack(ci, 1 - dir);
  }

  // ------------------------------------------------------------------ connection set-up
  wire::MpaReqRep mpa_frame(const ConnectionSpec& sp, bool request) const {
    wire::MpaReqRep f;
    f.kind = request ? wire::MpaFrameKind::request : wire::MpaFrameKind::reply;
    f.markers = request ? sp.client_requests_markers : sp.server_requests_markers;
    f.crc = request ? sp.client_crc : sp.server_crc;
    f.reject = !request && sp.reject;
    f.revision = request ? sp.request_revision : sp.reply_revision;
    f.reserved = request ? sp.client_reserved_flags : sp.server_reserved_flags;
    f.private_data = request ? sp.client_private_data : sp.server_private_data;
    if (sp.enhanced && f.revision == 2) {
      f.enhanced = true;
      wire::MpaEnhancedPd pd;
      pd.peer_to_peer = sp.peer_to_peer;
      pd.ird = request ? sp.client_ird : sp.server_ird;
      pd.ord = request ? sp.client_ord : sp.server_ord;
      // The initiator offers the RTR type, the responder picks it (RFC 6581 §9.2).
      pd.zero_length_send_rtr = sp.rtr == "send";
      pd.zero_length_write_rtr = sp.rtr == "write";
      pd.zero_length_read_rtr = sp.rtr == "read";
      f.enhanced_pd = pd;
    }
    return f;
  }

  void open_connection(int ci) {
    Conn& c = conns_[ci];
    const ConnectionSpec& sp = s_.connections[ci];
    c.spec = &sp;
    c.ep = {sp.client, sp.server};
    c.dirs[0].isn = sp.client_isn;
    c.dirs[1].isn = sp.server_isn;
    for (int d = 0; d < 2; ++d) {
      c.dirs[d].peer_mss = d == 0 ? sp.server_mss : sp.client_mss;
      c.dirs[d].tcp_segment = sp.tcp_segment_size.value_or(c.dirs[d].peer_mss);
    }
    // TCP three-way handshake with MSS options.
    add_packet(ci, 0, net::tcp_flag::syn, {}, 0, sp.client_mss);
    add_packet(ci, 1, net::tcp_flag::syn | net::tcp_flag::ack, {}, 0, sp.server_mss);
    add_packet(ci, 0, net::tcp_flag::ack, {}, 0);

    const wire::MpaReqRep req = mpa_frame(sp, true);
    const std::uint64_t req_off = append(ci, 0, wire::encode_mpa_reqrep(req), -1);
    if (sp.request_revision != 1 && sp.request_revision != 2) {
      expect("mpa.handshake-invalid", ci, 0, req_off, -1, "MPA Request revision not 1 or 2");
      cascading();
    }
    if (sp.client_reserved_flags) reserved_bits_note(ci, 0, req_off, "Request");
    flush(ci, 0);
    const wire::MpaReqRep rep = mpa_frame(sp, false);
    const std::uint64_t rep_off = append(ci, 1, wire::encode_mpa_reqrep(rep), -1);
    if (sp.reply_revision != 1 && sp.reply_revision != 2) {
      expect("mpa.handshake-invalid", ci, 1, rep_off, -1, "MPA Reply revision not 1 or 2");
      cascading();
    }
    if (sp.server_reserved_flags) reserved_bits_note(ci, 1, rep_off, "Reply");
    flush(ci, 1);
    if (sp.reject) {
      expect("mpa.rejected", ci, 1, rep_off, -1, "MPA Reply with R set");
      c.rejected = true;
      return;
    }
    const bool crc = sp.client_crc || sp.server_crc;  // RFC 5044 §7.1: either side's C
    for (int d = 0; d < 2; ++d) {
      Dir& dir = c.dirs[d];
      dir.s0 = dir.len;
      dir.crc = crc;
      // M is set by the receiver: the client's M asks the server to send markers.
      dir.markers = d == 0 ? sp.server_requests_markers : sp.client_requests_markers;
      dir.mulpdu = wire::mulpdu(dir.peer_mss, dir.markers);
      if (dir.mulpdu < wire::kDdpUntaggedHeaderSize + wire::AtomicRequest::kSize)
        fail(-1, "connection " + std::to_string(ci) + ": MSS too small for iWARP");
      if (sp.enhanced && sp.request_revision == 2 && sp.reply_revision == 2)
        dir.ird = d == 0 ? sp.client_ird : sp.server_ird;
    }
    if (sp.peer_to_peer && !sp.rtr.empty()) send_rtr(ci);
  }

  void reserved_bits_note(int ci, int dir, std::uint64_t off, const char* what) {
    expect("mpa.reserved-bits", ci, dir, off, -1,
           std::string("reserved flag bits set in the MPA ") + what + " (vendor extension)");
  }

  // RFC 6581 §9: the initiator's first FPDU is the negotiated zero-length RTR message.
  void send_rtr(int ci) {
    const ConnectionSpec& sp = *conns_[ci].spec;
    if (sp.rtr == "write") {
      // siw sends its Write RTR to STag 1, TO 0 (STag 0 is special to some hardware).
      emit_tagged(ci, 0, -1, wire::Opcode::rdma_write, 1, 0, {}, nullptr);
    } else if (sp.rtr == "read") {
      Bytes body;
      ByteWriter w(body);
      wire::encode_read_request(wire::ReadRequest{}, w);
      emit_untagged(ci, 0, -1, wire::Opcode::read_request, wire::kQnReadRequest, 0, body, nullptr);
      flush(ci, 0);
      emit_tagged(ci, 1, -1, wire::Opcode::read_response, 0, 0, {}, nullptr);
      flush(ci, 1);
      return;
    } else {
      emit_untagged(ci, 0, -1, wire::Opcode::send, wire::kQnSend, 0, {}, nullptr);
    }
    flush(ci, 0);
  }

  void close_connection(int ci) {
    Conn& c = conns_[ci];
    if (!c.spec->fin) return;
    add_packet(ci, 0, net::tcp_flag::fin | net::tcp_flag::ack, {}, c.dirs[0].flushed);
    c.dirs[0].flushed += 1;  // the FIN consumes a sequence number
    add_packet(ci, 1, net::tcp_flag::fin | net::tcp_flag::ack, {}, c.dirs[1].flushed);
    c.dirs[1].flushed += 1;
    add_packet(ci, 0, net::tcp_flag::ack, {}, c.dirs[0].flushed);
  }

  // ------------------------------------------------------------------ FPDU emission
  std::uint32_t max_payload(int ci, int dir, int op, bool tagged) const {
    const Conn& c = conns_[ci];
    if (op >= 0 && s_.ops[op].segment_size) return *s_.ops[op].segment_size;
    if (c.spec->segment_size) return *c.spec->segment_size;
    const std::size_t header = tagged ? wire::kDdpTaggedHeaderSize : wire::kDdpUntaggedHeaderSize;
    return static_cast<std::uint32_t>(c.dirs[dir].mulpdu - header);
  }

  // Encodes one DDP segment as an FPDU (markers and CRC per the direction), applies the
  // FPDU-level faults, appends it, and returns its stream offset.
  std::uint64_t emit_fpdu(int ci, int dir, int op, const SegmentDraft& seg, const OpFault* f,
                          bool selected) {
    Conn& c = conns_[ci];
    Dir& d = c.dirs[dir];
    Bytes ulpdu;
    ByteWriter w(ulpdu);
    wire::encode_ddp_header(seg.header, w);
    w.bytes(seg.body);
    wire::FpduEncodeOptions o;
    o.crc = d.crc;
    o.markers = d.markers;
    o.stream_pos = d.len - d.s0;
    Bytes fpdu = wire::encode_fpdu(ulpdu, o);
    const std::uint64_t off = d.len;
    const bool leading = d.markers && wire::is_marker_position(o.stream_pos);
    if (ulpdu.size() > d.mulpdu && !mulpdu_reported_[ci][dir]) {
      mulpdu_reported_[ci][dir] = true;
      expect("mpa.fpdu-exceeds-mulpdu", ci, dir, off, op,
             "ULPDU of " + std::to_string(ulpdu.size()) + " octets > MULPDU " +
                 std::to_string(d.mulpdu));
      cascading();  // reported once per direction or per FPDU: engine policy
    }
    if (f && selected) {
      if (f->corrupt_crc) {
        if (!d.crc) fail(op, "fault.corrupt_crc needs CRC on the connection");
        fpdu.back() ^= 0x5A;
        expect("mpa.crc-mismatch", ci, dir, off, op, "CRC field altered");
        cascading();
      }
      if (f->ulpdu_length) {
        const std::size_t at = leading ? wire::kMpaMarkerSize : 0;
        fpdu[at] = static_cast<std::uint8_t>(*f->ulpdu_length >> 8);
        fpdu[at + 1] = static_cast<std::uint8_t>(*f->ulpdu_length);
        expect("mpa.ulpdu-length-invalid", ci, dir, off, op,
               "ULPDU_Length set to " + std::to_string(*f->ulpdu_length));
        cascading();
      }
      if (f->corrupt_marker) {
        if (!d.markers) fail(op, "fault.corrupt_marker needs markers in this direction");
        const std::uint64_t into = o.stream_pos % wire::kMpaMarkerInterval;
        const std::size_t first = into == 0 ? 0 : wire::kMpaMarkerInterval - into;
        // Skip a leading marker: corrupting a later one keeps the FPDU findable.
        std::size_t at = leading ? first + wire::kMpaMarkerInterval : first;
        if (at + wire::kMpaMarkerSize > fpdu.size())
          fail(op, "fault.corrupt_marker: this FPDU holds no marker after its header");
        fpdu[at + 3] = static_cast<std::uint8_t>(fpdu[at + 3] + 8);
        expect("mpa.marker-invalid", ci, dir, off, op, "marker FPDUPTR moved by 8");
        cascading();
      }
    }
    append(ci, dir, std::move(fpdu), op);
    d.last_header = seg.header;
    d.last_ulpdu_length = static_cast<std::uint16_t>(ulpdu.size());
    d.last_rdmap_body = seg.body;
    return off;
  }

  // Applies the header faults of `f` to the selected segment; records their expectations.
  void apply_header_faults(int ci, int dir, int op, SegmentDraft& seg, const OpFault& f,
                           std::vector<std::pair<std::string, std::string>>& codes) {
    wire::RdmapControl rc = wire::RdmapControl::from_byte(seg.header.rsvd_ulp0);
    if (f.ddp_version) {
      seg.header.control.version = *f.ddp_version;
      codes.push_back({"ddp.version-invalid", "DDP version " + std::to_string(*f.ddp_version)});
      cascading();
    }
    if (f.ddp_reserved) {
      seg.header.control.reserved = *f.ddp_reserved;
      codes.push_back({"ddp.reserved-nonzero", "DDP reserved bits set"});
    }
    if (f.rdmap_version) {
      rc.version = *f.rdmap_version;
      codes.push_back(
          {"rdmap.version-invalid", "RDMAP version " + std::to_string(*f.rdmap_version)});
      cascading();
    }
    if (f.opcode) {
      rc.opcode = *f.opcode;
      const auto& info = wire::opcode_info(*f.opcode);
      if (!info.defined || info.tagged != seg.header.control.tagged)
        codes.push_back({"rdmap.opcode-invalid", "opcode " + std::to_string(*f.opcode)});
      cascading();
    }
    if (f.mo_delta != 0) {
      if (seg.header.control.tagged) fail(op, "fault.mo_delta applies to untagged messages");
      seg.header.mo = static_cast<std::uint32_t>(seg.header.mo + f.mo_delta);
      codes.push_back({"ddp.untagged.invalid-mo", "MO off by " + std::to_string(f.mo_delta)});
      cascading();
    }
    seg.header.rsvd_ulp0 = rc.byte();
    (void)ci;
    (void)dir;
  }

  static int selected_segment(const OpFault* f, std::size_t n) {
    if (!f) return -2;
    return f->segment < 0 ? static_cast<int>(n) - 1 : f->segment;
  }

  // Emits an untagged message (RFC 5041 §4.3) as DDP segments of at most the direction's
  // payload size. `rsvd1` is RDMAP's second RsvdULP word (Invalidate STag).
  std::vector<std::uint64_t> emit_untagged(int ci, int dir, int op, wire::Opcode opcode,
                                           std::uint32_t qn, std::uint32_t rsvd1,
                                           const Bytes& payload, const OpFault* f) {
    Dir& d = conns_[ci].dirs[dir];
    const auto opc = static_cast<std::uint8_t>(opcode);
    if (f && f->tagged) {
      // An untagged opcode on the tagged model (RFC 5040 §4.2 table): one tagged segment.
      SegmentDraft seg;
      seg.header.control.tagged = true;
      seg.header.control.last = true;
      seg.header.rsvd_ulp0 = wire::RdmapControl{1, 0, opc}.byte();
      seg.header.stag = 0x100;
      seg.body = payload;
      const std::uint64_t off = emit_fpdu(ci, dir, op, seg, f, true);
      expect("rdmap.opcode-invalid", ci, dir, off, op, "untagged opcode in a tagged segment");
      cascading();
      return {off};
    }
    const std::uint32_t q = f && f->qn ? *f->qn : qn;
    std::uint32_t msn = d.msn(q);
    std::string msn_code;
    if (f && f->msn == "skip") {
      msn += 1;
      msn_code = "ddp.untagged.msn-gap";
    } else if (f && f->msn == "duplicate") {
      if (msn <= 1) fail(op, "fault.msn duplicate needs an earlier message on this queue");
      msn -= 1;
      msn_code = "ddp.untagged.msn-duplicate";
    }
    if (msn_code != "ddp.untagged.msn-duplicate") d.next_msn[q] = msn + 1;
    const std::uint32_t max = max_payload(ci, dir, op, false);
    const std::size_t n = payload.empty() ? 1 : (payload.size() + max - 1) / max;
    const int sel = selected_segment(f, n);
    if (f && sel >= static_cast<int>(n))
      fail(op, "fault.segment " + std::to_string(sel) + " but the message has " +
                   std::to_string(n) + " segment(s)");
    std::vector<std::uint64_t> offs;
    for (std::size_t i = 0; i < n; ++i) {
      SegmentDraft seg;
      seg.header.control.tagged = false;
      seg.header.control.last = i + 1 == n;
      seg.header.rsvd_ulp0 = wire::RdmapControl{1, 0, opc}.byte();
      seg.header.rsvd_ulp1 = rsvd1;
      seg.header.qn = q;
      seg.header.msn = msn;
      seg.header.mo = static_cast<std::uint32_t>(i * max);
      const std::size_t b = i * max;
      const std::size_t e = std::min<std::size_t>(payload.size(), b + max);
      seg.body.assign(payload.begin() + static_cast<std::ptrdiff_t>(b),
                      payload.begin() + static_cast<std::ptrdiff_t>(e));
      std::vector<std::pair<std::string, std::string>> codes;
      const bool selected = static_cast<int>(i) == sel;
      if (f && selected) apply_header_faults(ci, dir, op, seg, *f, codes);
      const std::uint64_t off = emit_fpdu(ci, dir, op, seg, f, selected);
      for (auto& [code, detail] : codes)
        expect(code, ci, dir, off, op, detail);
      if (i == 0 && !msn_code.empty())
        expect(msn_code, ci, dir, off, op,
               "MSN " + std::to_string(msn) + " on QN " + std::to_string(q));
      if (i == 0 && f && f->qn && *f->qn != qn) {
        expect("ddp.untagged.invalid-qn", ci, dir, off, op,
               "QN " + std::to_string(*f->qn) + " for opcode " + std::to_string(opc));
        cascading();
      }
      offs.push_back(off);
    }
    if (f && f->segment_after_last) {
      // RFC 5041 §5.3: nothing may follow the L segment of a message.
      SegmentDraft seg;
      seg.header.control.last = true;
      seg.header.rsvd_ulp0 = wire::RdmapControl{1, 0, opc}.byte();
      seg.header.rsvd_ulp1 = rsvd1;
      seg.header.qn = q;
      seg.header.msn = msn;
      seg.header.mo = static_cast<std::uint32_t>(std::max<std::size_t>(payload.size(), 4));
      seg.body = {0xAF, 0xAF, 0xAF, 0xAF};
      const std::uint64_t off = emit_fpdu(ci, dir, op, seg, nullptr, false);
      expect("ddp.segment-after-last", ci, dir, off, op,
             "segment with MO " + std::to_string(seg.header.mo) + " after the L segment");
    }
    return offs;
  }

  // Emits a tagged message (RFC 5041 §4.2): consecutive segments, TO advancing by length.
  std::vector<std::uint64_t> emit_tagged(int ci, int dir, int op, wire::Opcode opcode,
                                         std::uint32_t stag, std::uint64_t to, const Bytes& payload,
                                         const OpFault* f) {
    const auto opc = static_cast<std::uint8_t>(opcode);
    const std::uint32_t max = max_payload(ci, dir, op, true);
    const std::size_t n = payload.empty() ? 1 : (payload.size() + max - 1) / max;
    const int sel = selected_segment(f, n);
    if (f && sel >= static_cast<int>(n))
      fail(op, "fault.segment " + std::to_string(sel) + " but the message has " +
                   std::to_string(n) + " segment(s)");
    std::vector<std::uint64_t> offs;
    for (std::size_t i = 0; i < n; ++i) {
      SegmentDraft seg;
      seg.header.control.tagged = true;
      seg.header.control.last = i + 1 == n;
      seg.header.rsvd_ulp0 = wire::RdmapControl{1, 0, opc}.byte();
      seg.header.stag = stag;
      seg.header.to = to + i * max;  // wraps modulo 2^64 like a buggy sender would
      const std::size_t b = i * max;
      const std::size_t e = std::min<std::size_t>(payload.size(), b + max);
      seg.body.assign(payload.begin() + static_cast<std::ptrdiff_t>(b),
                      payload.begin() + static_cast<std::ptrdiff_t>(e));
      std::vector<std::pair<std::string, std::string>> codes;
      const bool selected = static_cast<int>(i) == sel;
      if (f && selected) apply_header_faults(ci, dir, op, seg, *f, codes);
      const std::uint64_t off = emit_fpdu(ci, dir, op, seg, f, selected);
      for (auto& [code, detail] : codes)
        expect(code, ci, dir, off, op, detail);
      offs.push_back(off);
    }
    return offs;
  }

  // ------------------------------------------------------------------ tagged semantics
  const KnownRegion* find_region(const net::Address& owner, std::uint32_t stag) const {
    const KnownRegion* found = nullptr;
    for (const auto& r : regions_)
      if (r.stag == stag && (r.any_owner || r.owner == owner)) found = &r;  // latest wins
    return found;
  }

  // The checks the analyzer applies to a tagged segment placed at `owner` (the Data Sink),
  // in the order the generator attributes them. Returns true when a finding was expected.
  bool check_tagged(int ci, int dir, int op, std::uint64_t off, const net::Address& owner,
                    std::uint32_t stag, std::uint64_t to, std::size_t len) {
    if (invalidated_.count({owner, stag})) {
      expect("rdmap.stag-invalidated-use", ci, dir, off, op,
             "STag " + hex32(stag) + " was invalidated by a Send with Invalidate");
      return true;
    }
    if (len > 0 && to + (len - 1) < to) {
      expect("ddp.tagged.to-wrap", ci, dir, off, op, "TO + length wraps 2^64");
      return true;
    }
    const KnownRegion* r = find_region(owner, stag);
    if (!r) {
      if (regions_file_) {
        expect("ddp.tagged.invalid-stag", ci, dir, off, op,
               "STag " + hex32(stag) + " not in the regions file nor advertised");
        return true;
      }
      return false;
    }
    if (r->conn && *r->conn != ci) {
      expect("ddp.tagged.stag-wrong-stream", ci, dir, off, op,
             "STag " + hex32(stag) + " was advertised on connection " + std::to_string(*r->conn));
      return true;
    }
    if (len > 0 && (to < r->base || to - r->base > r->length || len > r->length - (to - r->base))) {
      expect("ddp.tagged.bounds", ci, dir, off, op,
             "TO " + hex64(to) + " + " + std::to_string(len) + " outside [" + hex64(r->base) +
                 ", +" + std::to_string(r->length) + ")");
      return true;
    }
    return false;
  }

  void record_write(const net::Address& owner, std::uint32_t stag, std::uint64_t to,
                    ByteView data) {
    written_[{owner, stag}].write(to, data);
  }

  // Tagged segments of one message, checked one by one.
  void place_tagged(int ci, int dir, int op, const std::vector<std::uint64_t>& offs,
                    const net::Address& owner, std::uint32_t stag, std::uint64_t to,
                    const Bytes& data, bool record) {
    const std::uint32_t max = max_payload(ci, dir, op, true);
    for (std::size_t i = 0; i < offs.size(); ++i) {
      const std::size_t b = i * max;
      const std::size_t e = std::min<std::size_t>(data.size(), b + max);
      const std::uint64_t seg_to = to + b;
      const bool bad = check_tagged(ci, dir, op, offs[i], owner, stag, seg_to, e - b);
      if (!bad && record && e > b)
        record_write(owner, stag, seg_to, ByteView(data).subspan(b, e - b));
    }
  }

  // The regions the analyzer learns from one complete Send of `dir`: core's own advertisement
  // decoders (ulp/advert.h) judge it, with the connection's endpoints, as the analyzer does.
  void learn_advertisements(int ci, int dir, wire::Opcode opcode, const Bytes& payload) {
    const Conn& c = conns_[ci];
    const AdvertContext ctx{static_cast<std::uint8_t>(opcode), c.ep[dir], c.ep[1 - dir],
                            static_cast<std::uint32_t>(ci)};
    std::vector<AdvertisedRegion> found;
    for (const auto& d : advertisers_)
      d->decode(ctx, payload, found);
    for (const AdvertisedRegion& a : found) {
      KnownRegion k;
      k.base = a.base;
      k.stag = a.stag;
      k.length = a.length;
      k.owner = a.owner;
      k.conn = ci;
      regions_.push_back(k);
    }
  }

  // ------------------------------------------------------------------ operations
  void run_op(int oi) {
    const OpSpec& op = s_.ops[oi];
    const int ci = op.connection;
    Conn& c = conns_[ci];
    if (c.rejected) fail(oi, "the connection was rejected: no operations possible");
    const int dir = dir_of(op.side);
    const int peer = peer_of(op.side);
    const OpFault* f = op.fault.any() ? &op.fault : nullptr;
    const net::Address& them = c.ep[peer].addr;
    switch (op.type) {
      case OpType::send: {
        wire::Opcode opc = op.solicited ? wire::Opcode::send_se : wire::Opcode::send;
        if (op.invalidate_stag)
          opc = op.solicited ? wire::Opcode::send_se_invalidate : wire::Opcode::send_invalidate;
        emit_untagged(ci, dir, oi, opc, wire::kQnSend, op.invalidate_stag.value_or(0), op.data, f);
        if (!f) learn_advertisements(ci, dir, opc, op.data);
        // RFC 5040 §5.3: the Data Sink invalidates its own STag named by the sender.
        if (op.invalidate_stag) invalidated_.insert({them, *op.invalidate_stag});
        break;
      }
      case OpType::advertise_rping: {
        const Bytes body = ulp::encode_rping_info({op.adv_base, op.adv_stag, op.adv_length});
        emit_untagged(ci, dir, oi, wire::Opcode::send, wire::kQnSend, 0, body, f);
        if (!f) learn_advertisements(ci, dir, wire::Opcode::send, body);
        break;
      }
      case OpType::immediate: {
        Bytes body;
        ByteWriter w(body);
        w.be64(op.immediate);
        emit_untagged(ci, dir, oi,
                      op.solicited ? wire::Opcode::immediate_data_se : wire::Opcode::immediate_data,
                      wire::kQnSend, 0, body, f);
        break;
      }
      case OpType::write: {
        auto offs = emit_tagged(ci, dir, oi, wire::Opcode::rdma_write, op.stag, op.to, op.data, f);
        place_tagged(ci, dir, oi, offs, them, op.stag, op.to, op.data, !f);
        break;
      }
      case OpType::read:
        run_read(oi, ci, dir, peer, f);
        return;  // flushes itself
      case OpType::read_response: {
        auto offs =
            emit_tagged(ci, dir, oi, wire::Opcode::read_response, op.stag, op.to, op.data, f);
        Dir& requester = c.dirs[peer];
        if (requester.outstanding_reads == 0) {
          expect("rdmap.read-response-unmatched", ci, dir, offs.front(), oi,
                 "Read Response with no Read Request outstanding");
        } else {
          fail(oi, "read_response while a Read Request is outstanding is not supported");
        }
        break;
      }
      case OpType::atomic:
        run_atomic(oi, ci, dir, peer, f);
        return;
      case OpType::atomic_response: {
        Bytes body;
        ByteWriter w(body);
        wire::encode_atomic_response({op.request_id, op.original_value}, w);
        auto offs = emit_untagged(ci, dir, oi, wire::Opcode::atomic_response,
                                  wire::kQnAtomicResponse, 0, body, f);
        auto& pending = c.dirs[peer].outstanding_atomics;
        auto it = std::find(pending.begin(), pending.end(), op.request_id);
        if (it == pending.end()) {
          expect("rdmap.atomic-response-unmatched", ci, dir, offs.front(), oi,
                 "Atomic Response for request id " + std::to_string(op.request_id));
        } else {
          pending.erase(it);
        }
        break;
      }
      case OpType::terminate:
        run_terminate(oi, ci, dir, peer, f);
        break;
    }
    if (!op.hold) flush(ci, dir);
  }

  void run_read(int oi, int ci, int dir, int peer, const OpFault* f) {
    const OpSpec& op = s_.ops[oi];
    Conn& c = conns_[ci];
    Dir& d = c.dirs[dir];
    const Dir& responder = c.dirs[peer];
    std::vector<wire::ReadRequest> reqs;
    for (int k = 0; k < op.count; ++k) {
      wire::ReadRequest rr = op.read;
      rr.sink_to += static_cast<std::uint64_t>(k) * rr.size;
      rr.source_to += static_cast<std::uint64_t>(k) * rr.size;
      Bytes body;
      ByteWriter w(body);
      wire::encode_read_request(rr, w);
      const std::uint32_t extra = f && k == 0 ? f->read_request_extra : 0;
      w.zeros(extra);
      // Only the first request carries the op's header/FPDU faults.
      auto offs = emit_untagged(ci, dir, oi, wire::Opcode::read_request, wire::kQnReadRequest, 0,
                                body, k == 0 ? f : nullptr);
      if (extra) {
        expect("ddp.untagged.message-too-long", ci, dir, offs.front(), oi,
               "Read Request body of " + std::to_string(body.size()) + " octets (28 allowed)");
        cascading();
      }
      d.outstanding_reads += 1;
      if (responder.ird && d.outstanding_reads > *responder.ird)
        expect("rdmap.ird-exceeded", ci, dir, offs.front(), oi,
               std::to_string(d.outstanding_reads) + " Read Requests outstanding, IRD " +
                   std::to_string(*responder.ird));
      reqs.push_back(rr);
    }
    flush(ci, dir);
    // A peer that received a malformed Read Request does not answer it.
    if ((f && f->read_request_extra) || !op.respond) return;
    const net::Address& requester = c.ep[dir].addr;
    for (std::size_t k = 0; k < reqs.size(); ++k) {
      const wire::ReadRequest& rr = reqs[k];
      Bytes data = op.data;
      const bool last = k + 1 == reqs.size();
      const bool size_fault = f && last && f->response_size_delta != 0;
      if (size_fault) {
        const std::int64_t n = static_cast<std::int64_t>(data.size()) + f->response_size_delta;
        if (n < 0) fail(oi, "fault.response_size_delta makes the response negative");
        data.resize(static_cast<std::size_t>(n), 0xEE);
      }
      const bool stag_fault = f && last && f->response_sink_stag;
      const std::uint32_t stag = stag_fault ? *f->response_sink_stag : rr.sink_stag;
      // The Read Response carries no faults of its own: header faults were on the request.
      auto offs =
          emit_tagged(ci, peer, oi, wire::Opcode::read_response, stag, rr.sink_to, data, nullptr);
      if (stag_fault) {
        expect("ddp.tagged.invalid-stag", ci, peer, offs.front(), oi,
               "Read Response to sink STag " + hex32(stag) + ", requested " + hex32(rr.sink_stag));
      } else if (size_fault) {
        expect("rdmap.read-response-size-mismatch", ci, peer, offs.back(), oi,
               "Read Response of " + std::to_string(data.size()) + " octets, requested " +
                   std::to_string(rr.size));
      } else {
        place_tagged(ci, peer, oi, offs, requester, stag, rr.sink_to, data, true);
      }
      d.outstanding_reads -= 1;
    }
    flush(ci, peer);
  }

  void run_atomic(int oi, int ci, int dir, int peer, const OpFault* f) {
    const OpSpec& op = s_.ops[oi];
    Bytes body;
    ByteWriter w(body);
    wire::encode_atomic_request(op.atomic, w);
    emit_untagged(ci, dir, oi, wire::Opcode::atomic_request, wire::kQnAtomicRequest, 0, body, f);
    flush(ci, dir);
    Bytes resp;
    ByteWriter rw(resp);
    const std::uint32_t id =
        f && f->response_request_id ? *f->response_request_id : op.atomic.request_id;
    wire::encode_atomic_response({id, op.original_value}, rw);
    auto offs = emit_untagged(ci, peer, oi, wire::Opcode::atomic_response, wire::kQnAtomicResponse,
                              0, resp, nullptr);
    if (id != op.atomic.request_id)
      expect("rdmap.atomic-response-unmatched", ci, peer, offs.front(), oi,
             "Atomic Response for request id " + std::to_string(id) + ", sent " +
                 std::to_string(op.atomic.request_id));
    flush(ci, peer);
  }

  void run_terminate(int oi, int ci, int dir, int peer, const OpFault* f) {
    const OpSpec& op = s_.ops[oi];
    const Dir& from_peer = conns_[ci].dirs[peer];
    wire::Terminate t;
    t.control = op.term;
    if (t.control.d) {
      // Quote the last DDP segment received from the peer (siw does this).
      DdpHeader h;
      if (from_peer.last_header) {
        h = *from_peer.last_header;
      } else {
        h.control.last = true;
        h.rsvd_ulp0 = wire::RdmapControl{1, 0, 3}.byte();
        h.msn = 1;
      }
      t.ddp_header = h;
      t.ddp_segment_length = from_peer.last_ulpdu_length;
    }
    if (t.control.r) {
      t.rdmap_header = from_peer.last_rdmap_body;
      t.rdmap_header.resize(wire::kTerminateRdmapHeaderSize, 0);
    }
    Bytes body;
    ByteWriter w(body);
    wire::encode_terminate(
        t, op.siw_layout ? wire::TerminateLayout::siw_bitfield : wire::TerminateLayout::rfc, w);
    auto offs = emit_untagged(ci, dir, oi, wire::Opcode::terminate, wire::kQnTerminate, 0, body, f);
    expect("rdmap.terminate", ci, dir, offs.front(), oi,
           terminate_error_name(op.term.layer, op.term.etype, op.term.code));
    if (op.siw_layout)
      expect("rdmap.terminate-nonconformant", ci, dir, offs.front(), oi,
             "control word in Linux siw's bit-field order");
  }

  void manual_expect(const ManualExpectation& m) {
    const auto& units = op_units_[m.op];
    if (static_cast<std::size_t>(m.segment) >= units.size())
      fail(m.op, "expect: the operation has " + std::to_string(units.size()) + " FPDU(s)");
    const OpRange& r = op_ranges_[m.op];
    if (!finding_by_code(m.code)) fail(m.op, "expect: unknown finding code \"" + m.code + "\"");
    expects_.push_back({m.code, r.conn, r.dir, units[m.segment], std::nullopt, m.op, m.consequence,
                        "declared in the scenario"});
  }

  // ------------------------------------------------------------------ TCP faults
  // Position in order_ of the packet a fault names.
  std::size_t locate(const TcpFault& f) const {
    if (f.index) {
      int n = 0;
      for (std::size_t i = 0; i < order_.size(); ++i) {
        const Packet& p = packets_[order_[i]];
        if (p.payload.empty()) continue;
        if (n++ == *f.index) return i;
      }
      throw GenerateError(f.where + ": no data segment with index " + std::to_string(*f.index));
    }
    const OpRange& r = op_ranges_[*f.op];
    if (r.conn < 0) throw GenerateError(f.where + ": the operation produced no octets");
    int n = 0;
    for (std::size_t i = 0; i < order_.size(); ++i) {
      const Packet& p = packets_[order_[i]];
      if (p.conn != r.conn || p.dir != r.dir || p.payload.empty() || p.dropped) continue;
      if (p.offset + p.payload.size() <= r.begin || p.offset >= r.end) continue;
      if (n++ == f.op_segment) return i;
    }
    throw GenerateError(f.where + ": operation " + std::to_string(*f.op) + " spans fewer than " +
                        std::to_string(f.op_segment + 1) + " TCP segment(s)");
  }

  // Index in order_ `after` packets of the same connection later than `pos` (or the end).
  std::size_t later(std::size_t pos, int conn, int after) const {
    std::size_t i = pos + 1;
    int seen = 0;
    for (; i < order_.size() && seen < after; ++i)
      if (packets_[order_[i]].conn == conn) ++seen;
    return i;
  }

  void apply_tcp_fault(const TcpFault& f) {
    if (order_.empty())
      for (const auto& p : packets_)
        order_.push_back(p.id);
    const std::size_t pos = locate(f);
    Packet& p = packets_[order_[pos]];
    const int op = f.op.value_or(-1);
    switch (f.kind) {
      case TcpFaultKind::drop: {
        p.dropped = true;
        // The analyzer notices the hole at the first later segment of that direction.
        const std::uint64_t hole_end = p.offset + p.payload.size();
        std::optional<int> next;
        for (std::size_t i = pos + 1; i < order_.size(); ++i) {
          const Packet& q = packets_[order_[i]];
          if (q.conn != p.conn || q.dir != p.dir || q.dropped) continue;
          if (q.payload.empty() && !(q.flags & net::tcp_flag::fin)) continue;
          if (q.offset >= hole_end) {
            next = q.id;
            break;
          }
        }
        if (!next) throw GenerateError(f.where + ": nothing follows the dropped segment");
        expect_packet("tcp.gap", p.conn, p.dir, *next, op,
                      std::to_string(p.payload.size()) + " octets dropped from the capture");
        cascading();
        break;
      }
      case TcpFaultKind::duplicate: {
        Packet copy = p;
        copy.id = static_cast<int>(packets_.size());
        packets_.push_back(copy);
        order_.insert(order_.begin() + static_cast<std::ptrdiff_t>(later(pos, p.conn, f.after)),
                      copy.id);
        break;
      }
      case TcpFaultKind::reorder: {
        // Move the segment behind the next data segment of the same direction.
        std::size_t j = pos + 1;
        for (; j < order_.size(); ++j) {
          const Packet& q = packets_[order_[j]];
          if (q.conn == p.conn && q.dir == p.dir && !q.payload.empty()) break;
        }
        if (j == order_.size()) throw GenerateError(f.where + ": no later segment to swap with");
        const int id = order_[pos];
        order_.erase(order_.begin() + static_cast<std::ptrdiff_t>(pos));
        order_.insert(order_.begin() + static_cast<std::ptrdiff_t>(j), id);
        break;
      }
      case TcpFaultKind::conflict: {
        Packet copy = p;
        copy.id = static_cast<int>(packets_.size());
        // Same sequence number, different octets in the middle of the payload.
        if (copy.payload.empty()) throw GenerateError(f.where + ": segment has no payload");
        copy.payload[copy.payload.size() / 2] ^= 0xFF;
        packets_.push_back(copy);
        order_.insert(order_.begin() + static_cast<std::ptrdiff_t>(later(pos, p.conn, f.after)),
                      copy.id);
        expect_packet("tcp.retransmission-conflict", copy.conn, copy.dir, copy.id, op,
                      "retransmission with one octet changed");
        break;
      }
    }
  }

  // ------------------------------------------------------------------ output
  void finalize(Generated& out) {
    if (order_.empty())
      for (const auto& p : packets_)
        order_.push_back(p.id);
    std::map<int, std::uint64_t> frame_of;  // packet id -> frame number
    std::uint64_t n = 0;
    for (int id : order_) {
      const Packet& p = packets_[id];
      if (p.dropped) continue;
      frame_of[id] = ++n;
      const Conn& c = conns_[p.conn];
      net::TcpFrameSpec spec;
      spec.src = c.ep[p.dir];
      spec.dst = c.ep[1 - p.dir];
      spec.seq = p.seq;
      spec.ack = p.ack;
      spec.flags = p.flags;
      spec.mss = p.mss;
      spec.vlan = c.spec->vlan;
      // One MAC pair per connection and side.
      spec.src_mac = {
          0x02, 0, 0, 0, static_cast<std::uint8_t>(p.conn), static_cast<std::uint8_t>(1 + p.dir)};
      spec.dst_mac = {
          0x02, 0, 0, 0, static_cast<std::uint8_t>(p.conn), static_cast<std::uint8_t>(2 - p.dir)};
      GeneratedFrame fr;
      fr.ts_ns = s_.start_ns + static_cast<std::int64_t>(n) * s_.step_ns;
      fr.data = net::encode_tcp_frame(spec, p.payload);
      out.frames.push_back(std::move(fr));
    }
    for (const auto& e : expects_) {
      std::uint64_t frame = 0;
      if (e.packet) {
        frame = frame_of.at(*e.packet);
      } else {
        // The first frame in capture order holding the PDU's first octet.
        for (int id : order_) {
          const Packet& p = packets_[id];
          if (p.dropped || p.conn != e.conn || p.dir != e.dir || p.payload.empty()) continue;
          if (e.offset >= p.offset && e.offset < p.offset + p.payload.size()) {
            frame = frame_of.at(id);
            break;
          }
        }
      }
      if (frame == 0) {
        // The offending PDU starts in a dropped segment: the analyzer cannot see it.
        exhaustive_ = false;
        continue;
      }
      out.expected.push_back({e.code, frame, e.consequence, e.op, e.detail});
    }
    std::stable_sort(
        out.expected.begin(), out.expected.end(),
        [](const ExpectedFinding& a, const ExpectedFinding& b) { return a.frame < b.frame; });
    out.exhaustive = s_.exhaustive.value_or(exhaustive_);
    for (const auto& [key, mem] : written_) {
      if (mem.empty()) continue;
      SynthResult::RegionData r;
      r.owner = key.first.to_string();
      r.stag = key.second;
      r.base = mem.base();
      r.bytes = mem.dense();
      out.regions_written.push_back(std::move(r));
    }
  }

  static std::string hex32(std::uint32_t v) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "0x%08x", v);
    return buf;
  }
  static std::string hex64(std::uint64_t v) {
    char buf[24];
    std::snprintf(buf, sizeof buf, "0x%016llx", static_cast<unsigned long long>(v));
    return buf;
  }

  const Scenario& s_;
  std::vector<Conn> conns_;
  std::vector<Packet> packets_;
  std::vector<int> order_;  // capture order of packet ids, built when faults apply
  std::vector<Expect> expects_;
  std::vector<KnownRegion> regions_;
  const std::vector<std::unique_ptr<AdvertisementDecoder>> advertisers_ =
      default_advertisement_decoders();
  bool regions_file_ = false;
  std::set<std::pair<net::Address, std::uint32_t>> invalidated_;
  std::map<std::pair<net::Address, std::uint32_t>, WrittenBytes> written_;
  std::vector<OpRange> op_ranges_;
  std::vector<std::vector<std::uint64_t>> op_units_;
  std::map<int, std::array<bool, 2>> mulpdu_reported_;
  bool exhaustive_ = true;
};

}  // namespace

bool generate(const Scenario& scenario, Generated& out, std::string& error) {
  try {
    Generator g(scenario);
    Generated result;
    g.run(result);
    out = std::move(result);
    return true;
  } catch (const GenerateError& e) {
    error = e.what();
  } catch (const std::out_of_range& e) {
    error = std::string("internal error: ") + e.what();
  }
  return false;
}

}  // namespace ddpscope::synth
