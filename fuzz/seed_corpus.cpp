// SPDX-License-Identifier: GPL-2.0-or-later
// Writes the seed corpora of fuzz_wire, fuzz_frame and fuzz_engine (fuzz_capture's seeds are
// the sample captures themselves, copied by make_seeds.sh):
//   ddpscope_fuzz_seeds OUT_DIR SAMPLE.pcap...
// Seeds come from the wire encoders and from the frames and TCP segments of the samples.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "ddpscope/capture/file_reader.h"
#include "ddpscope/net/packet.h"
#include "ddpscope/wire/mpa.h"
#include "ddpscope/wire/rdmap.h"
#include "engine_script.h"

namespace {

using namespace ddpscope;
namespace fs = std::filesystem;

void write_file(const fs::path& p, ByteView data) {
  fs::create_directories(p.parent_path());
  std::ofstream out(p, std::ios::binary);
  out.write(reinterpret_cast<const char*>(data.data()), static_cast<std::streamsize>(data.size()));
}

Bytes with_prefix(std::initializer_list<std::uint8_t> prefix, ByteView body) {
  Bytes b(prefix);
  b.insert(b.end(), body.begin(), body.end());
  return b;
}

// ULPDUs of every opcode, for the wire and engine seeds.
std::vector<std::pair<std::string, Bytes>> sample_ulpdus() {
  using wire::Opcode;
  std::vector<std::pair<std::string, Bytes>> out;
  auto add = [&](const std::string& name, const wire::DdpHeader& h, ByteView body) {
    Bytes u;
    ByteWriter w(u);
    wire::encode_ddp_header(h, w);
    w.bytes(body);
    out.emplace_back(name, u);
  };
  const Bytes payload(40, 0x5A);
  add("send", wire::untagged_header(Opcode::send, 0, 1, 0, true), payload);
  add("send-first", wire::untagged_header(Opcode::send, 0, 2, 0, false), payload);
  add("send-inv", wire::untagged_header(Opcode::send_invalidate, 0, 3, 0, true), payload);
  add("write", wire::tagged_header(Opcode::rdma_write, 0x100, 0x1000, true), payload);
  add("write-wrap", wire::tagged_header(Opcode::rdma_write, 0x100, UINT64_MAX - 7, true), payload);
  Bytes rr;
  ByteWriter rw(rr);
  wire::encode_read_request(wire::ReadRequest{0x200, 0x2000, 64, 0x100, 0x1000}, rw);
  add("read-request", wire::untagged_header(Opcode::read_request, 1, 1, 0, true), rr);
  add("read-response", wire::tagged_header(Opcode::read_response, 0x200, 0x2000, true),
      Bytes(64, 0xA5));
  Bytes ar;
  ByteWriter aw(ar);
  wire::encode_atomic_request(wire::AtomicRequest{0, 0, 7, 0x100, 0x1000, 1, 2, 3, 4}, aw);
  add("atomic-request", wire::untagged_header(Opcode::atomic_request, 3, 1, 0, true), ar);
  Bytes ap;
  ByteWriter pw(ap);
  wire::encode_atomic_response(wire::AtomicResponse{7, 42}, pw);
  add("atomic-response", wire::untagged_header(Opcode::atomic_response, 3, 1, 0, true), ap);
  add("immediate", wire::untagged_header(Opcode::immediate_data, 0, 4, 0, true), Bytes(8, 1));
  for (auto layout : {wire::TerminateLayout::rfc, wire::TerminateLayout::siw_bitfield}) {
    wire::Terminate t;
    t.control = wire::TerminateControl{1, 2, 3, true, true, false, 0};
    t.ddp_segment_length = 58;
    t.ddp_header = wire::tagged_header(Opcode::rdma_write, 0x100, 0x1000, true);
    Bytes tb;
    ByteWriter tw(tb);
    wire::encode_terminate(t, layout, tw);
    add(layout == wire::TerminateLayout::rfc ? "terminate" : "terminate-siw",
        wire::untagged_header(Opcode::terminate, 2, 1, 0, true), tb);
  }
  return out;
}

void wire_seeds(const fs::path& dir) {
  const fs::path d = dir / "fuzz_wire";
  for (int rev : {1, 2}) {
    for (bool reply : {false, true}) {
      wire::MpaReqRep f;
      f.kind = reply ? wire::MpaFrameKind::reply : wire::MpaFrameKind::request;
      f.revision = static_cast<std::uint8_t>(rev);
      f.crc = true;
      f.markers = reply;
      f.enhanced = rev == 2;
      if (f.enhanced) f.enhanced_pd = wire::MpaEnhancedPd{true, false, 16, true, false, 16};
      f.private_data = Bytes(rev * 8, 0x33);
      const std::string name =
          std::string(reply ? "reply" : "request") + "-rev" + std::to_string(rev);
      write_file(d / ("reqrep-" + name), with_prefix({0}, wire::encode_mpa_reqrep(f)));
    }
  }
  for (const auto& [name, u] : sample_ulpdus()) {
    write_file(d / ("fpdu-" + name), with_prefix({1}, wire::encode_fpdu(u, {})));
    write_file(d / ("ddp-" + name), with_prefix({4}, u));
    const std::size_t body =
        u[0] & wire::kDdpFlagTagged ? wire::kDdpTaggedHeaderSize : wire::kDdpUntaggedHeaderSize;
    // RDMAP bodies: selector 5 + 6k picks decoder k.
    const std::map<std::string, std::uint8_t> rdmap{{"read-request", 5},     {"atomic-request", 11},
                                                    {"atomic-response", 17}, {"immediate", 23},
                                                    {"terminate", 29},       {"terminate-siw", 29}};
    if (auto it = rdmap.find(name); it != rdmap.end())
      write_file(d / ("rdmap-" + name), with_prefix({it->second}, ByteView(u).subspan(body)));
  }
  write_file(d / "rdmap-enhanced-pd", Bytes{35, 0x80, 0x10, 0x80, 0x10});
  // Marked FPDUs at several stream positions, and the encoder's own input format.
  const Bytes big(1200, 0x77);
  for (std::uint64_t pos : {0ull, 508ull, 510ull, 1023ull}) {
    wire::FpduEncodeOptions o;
    o.markers = true;
    o.crc = true;
    o.stream_pos = pos;
    Bytes in{2};
    ByteWriter w(in);
    w.be64(pos);
    w.bytes(wire::encode_fpdu(big, o));
    write_file(d / ("markers-" + std::to_string(pos)), in);
    Bytes enc{3, 3};
    ByteWriter ew(enc);
    ew.be32(static_cast<std::uint32_t>(pos));
    ew.be16(64);
    ew.bytes(ByteView(big).first(64));
    write_file(d / ("encode-" + std::to_string(pos)), enc);
  }
}

// fuzz_frame: link type index (see fuzz_frame.cpp), extra wire length, frame.
void frame_seeds(const fs::path& dir, const std::vector<std::pair<std::string, Bytes>>& eth) {
  const fs::path d = dir / "fuzz_frame";
  for (const auto& [name, f] : eth) {
    write_file(d / (name + "-ethernet"), with_prefix({1, 0, 0}, f));
    if (f.size() < 14) continue;
    const ByteView ip = ByteView(f).subspan(14);
    write_file(d / (name + "-raw"), with_prefix({2, 0, 0}, ip));
    write_file(d / (name + "-ipv4"), with_prefix({5, 0, 0}, ip));
    write_file(d / (name + "-null"), with_prefix({0, 0, 0, 2, 0, 0, 0}, ip));
    write_file(d / (name + "-loop"), with_prefix({3, 0, 0, 0, 0, 0, 2}, ip));
    Bytes sll{4, 0, 0, 0, 0, 0, 1, 0, 6, 2, 0, 0, 0, 0, 1, 0, 0, 0x08, 0x00};
    sll.insert(sll.end(), ip.begin(), ip.end());
    write_file(d / (name + "-sll"), sll);
    Bytes sll2{7, 0, 0, 0x08, 0x00, 0, 0, 0, 0, 0, 1, 0, 1, 0, 6, 2, 0, 0, 0, 0, 1, 0, 0};
    sll2.insert(sll2.end(), ip.begin(), ip.end());
    write_file(d / (name + "-sll2"), sll2);
  }
  // IPv6 and 802.1Q, from the frame builder.
  net::TcpFrameSpec s;
  s.src = {*net::Address::parse("2001:db8::1"), 40000};
  s.dst = {*net::Address::parse("2001:db8::2"), 4791};
  s.flags = net::tcp_flag::syn;
  s.mss = 1440;
  write_file(d / "ipv6-syn", with_prefix({1, 0, 0}, net::encode_tcp_frame(s, {})));
  s.flags = net::tcp_flag::ack;
  s.mss.reset();
  s.vlan = 7;
  const Bytes pl(100, 1);
  write_file(d / "ipv6-vlan", with_prefix({1, 0, 0}, net::encode_tcp_frame(s, pl)));
  write_file(d / "ipv6-vlan-cut", with_prefix({1, 0, 60}, net::encode_tcp_frame(s, pl)));
}

struct ScriptWriter {
  Bytes out;
  std::map<std::pair<net::Endpoint, net::Endpoint>, std::pair<int, int>> where;  // conn, dir
  std::map<std::pair<int, int>, std::uint32_t> first_seq, next;
  int conns = 0;

  void add(const net::TcpSegment& s) {
    auto it = where.find({s.src, s.dst});
    if (it == where.end()) {
      if (conns >= 4) return;
      const int c = conns++;
      where[{s.src, s.dst}] = {c, 0};
      where[{s.dst, s.src}] = {c, 1};
      it = where.find({s.src, s.dst});
    }
    const auto [conn, dir] = it->second;
    const auto key = std::make_pair(conn, dir);
    if (!first_seq.count(key)) {
      first_seq[key] = s.seq;
      next[key] = dir == 0 ? 1000 : 5000;
    }
    const std::uint32_t mapped = s.seq - first_seq[key] + (dir == 0 ? 1000u : 5000u);
    const auto delta = static_cast<std::int16_t>(mapped - next[key]);
    std::uint8_t ctl = static_cast<std::uint8_t>((conn << 4) | dir);
    std::uint32_t lost = 0;
    if (s.truncated()) {
      ctl |= fuzz::script::kLostTail;
      lost = 100;
    }
    fuzz::append_record(out, ctl, delta, s.flags, s.payload);
    const std::uint32_t actual = next[key] + static_cast<std::uint32_t>(delta);
    next[key] = actual + static_cast<std::uint32_t>(s.payload.size()) + lost +
                ((s.flags & (net::tcp_flag::syn | net::tcp_flag::fin)) ? 1 : 0);
  }
};

void engine_seeds(const fs::path& dir, const std::string& name,
                  const std::vector<net::TcpSegment>& segs) {
  const fs::path d = dir / "fuzz_engine";
  for (std::uint8_t config : {std::uint8_t{0}, fuzz::script::kTinyLimits}) {
    ScriptWriter w;
    w.out = {config, 0};
    for (const auto& s : segs)
      w.add(s);
    write_file(d / (name + (config ? "-tiny" : "")), w.out);
  }
}

void engine_synthetic(const fs::path& dir) {
  using namespace fuzz::script;
  const fs::path d = dir / "fuzz_engine";
  const auto ulpdus = sample_ulpdus();
  for (std::uint8_t config : {std::uint8_t{kHandshake}, std::uint8_t{kHandshake | kCrc},
                              std::uint8_t{kHandshake | kCrc | kRegions},
                              std::uint8_t{kHint | kCrc}, std::uint8_t{kHandshake | kTinyLimits}}) {
    Bytes out{config, 2 << 1};
    for (const auto& [name, u] : ulpdus) {
      const int dir = name.rfind("read-response", 0) == 0 || name.rfind("atomic-resp", 0) == 0;
      fuzz::append_record(out, static_cast<std::uint8_t>(kWrapFpdu | dir), 0, net::tcp_flag::ack,
                          u);
    }
    // The same FPDUs out of order in the other connection.
    for (std::size_t i = ulpdus.size(); i-- > 0;)
      fuzz::append_record(out, static_cast<std::uint8_t>(kWrapFpdu | 0x10), 0, net::tcp_flag::ack,
                          ulpdus[i].second);
    char name[32];
    std::snprintf(name, sizeof name, "synthetic-%02x", config);
    write_file(d / name, out);
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s OUT_DIR SAMPLE.pcap...\n", argv[0]);
    return 2;
  }
  const fs::path out = argv[1];
  wire_seeds(out);
  engine_synthetic(out);
  std::vector<std::pair<std::string, Bytes>> frames;
  for (int i = 2; i < argc; ++i) {
    std::string err;
    auto r = capture::CaptureReader::open(argv[i], err);
    if (!r) {
      std::fprintf(stderr, "%s\n", err.c_str());
      return 1;
    }
    const std::string name = fs::path(argv[i]).stem().string();
    std::vector<Bytes> keep;  // frame copies: segments' payload views point into them
    std::vector<std::uint32_t> wire_lengths;
    capture::Frame f;
    while (r->next(f)) {
      keep.emplace_back(f.data.begin(), f.data.end());
      wire_lengths.push_back(f.wire_length);
    }
    std::vector<net::TcpSegment> segs;
    for (std::size_t n = 0; n < keep.size(); ++n) {
      const auto d = net::decode_frame(r->link_type(), keep[n], wire_lengths[n]);
      if (d.status == net::FrameStatus::tcp) segs.push_back(d.tcp);
      // A handful of frames per sample: a SYN, the MPA frames, the first FPDUs.
      if (n < 6 && i < 8) frames.emplace_back(name + "-" + std::to_string(n), keep[n]);
    }
    engine_seeds(out, name, segs);
  }
  frame_seeds(out, frames);
  return 0;
}
