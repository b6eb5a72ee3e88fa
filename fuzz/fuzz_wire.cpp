// SPDX-License-Identifier: GPL-2.0-or-later
// Every decoder of wire.h. The first input octet picks the decoder, the rest is its input.
// Beyond "no crash", each decoder's contract is checked: a decoded value lies inside its input,
// and where the format has one reading only, encode(decode(x)) gives back x's octets.
#include <cstdint>

#include "ddpscope/wire/mpa.h"
#include "ddpscope/wire/rdmap.h"
#include "fuzz_input.h"

namespace {

using namespace ddpscope;

bool same(ByteView a, ByteView b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin());
}

bool inside(ByteView part, ByteView whole) {
  if (part.empty()) return true;
  return part.data() >= whole.data() && part.data() + part.size() <= whole.data() + whole.size();
}

template <class T>
void check_status(const Result<T>& r, ByteView in) {
  if (r.is_ok()) DDPSCOPE_FUZZ_CHECK(r.consumed() <= in.size());
  if (r.status() == DecodeStatus::need_more) DDPSCOPE_FUZZ_CHECK(r.needed() > in.size());
  if (r.status() == DecodeStatus::malformed) DDPSCOPE_FUZZ_CHECK(!r.error().code.empty());
}

void mpa_reqrep(ByteView in) {
  auto r = wire::decode_mpa_reqrep(in);
  check_status(r, in);
  (void)wire::could_be_mpa_key(in);
  if (!r) return;
  DDPSCOPE_FUZZ_CHECK(r.consumed() == r->wire_size());
  fuzz::touch(r->ulp_private_data());
  wire::MpaReqRep f = r.value();
  f.enhanced_pd.reset();
  DDPSCOPE_FUZZ_CHECK(same(wire::encode_mpa_reqrep(f), in.first(r.consumed())));
}

void fpdu(ByteView in) {
  auto r = wire::decode_fpdu(in);
  check_status(r, in);
  if (!r) return;
  DDPSCOPE_FUZZ_CHECK(r.consumed() == r->size());
  DDPSCOPE_FUZZ_CHECK(inside(r->ulpdu, in) && inside(r->pad, in));
  DDPSCOPE_FUZZ_CHECK(r->ulpdu.size() == r->ulpdu_length);
  fuzz::touch(r->ulpdu);
  fuzz::touch(r->pad);
  const Bytes again = wire::encode_fpdu(r->ulpdu, {});
  DDPSCOPE_FUZZ_CHECK(again.size() == r->size());
}

void markers(fuzz::FuzzInput& fi) {
  const std::uint64_t pos = fi.be64();
  const ByteView in = fi.rest();
  const auto s = wire::strip_markers(in, pos);
  DDPSCOPE_FUZZ_CHECK(s.payload.size() + s.markers.size() * wire::kMpaMarkerSize +
                          s.cut_marker_octets + s.skipped_marker_octets ==
                      in.size());
  for (const auto& m : s.markers)
    DDPSCOPE_FUZZ_CHECK(wire::is_marker_position(m.stream_pos));
}

void fpdu_encode(fuzz::FuzzInput& fi) {
  const std::uint8_t flags = fi.u8();
  wire::FpduEncodeOptions o;
  o.crc = flags & 1;
  o.markers = flags & 2;
  o.convention = (flags & 4) ? wire::MarkerConvention::literal
                             : wire::MarkerConvention::leading_marker_in_fpdu;
  o.stream_pos = fi.be32();
  // An FPDU never starts inside a marker (positions 1..3 past a multiple of 512).
  const std::uint64_t in_marker = o.stream_pos % wire::kMpaMarkerInterval;
  if (o.markers && in_marker > 0 && in_marker < wire::kMpaMarkerSize)
    o.stream_pos += wire::kMpaMarkerSize - in_marker;
  const ByteView ulpdu = fi.take(fi.be16());
  const Bytes out = wire::encode_fpdu(ulpdu, o);
  if (!o.markers) {
    auto r = wire::decode_fpdu(out);
    DDPSCOPE_FUZZ_CHECK(r.is_ok() && same(r->ulpdu, ulpdu));
    if (o.crc) DDPSCOPE_FUZZ_CHECK(r->crc_field == r->crc_computed);
  } else {
    const auto s = wire::strip_markers(out, o.stream_pos);
    DDPSCOPE_FUZZ_CHECK(s.payload.size() >= wire::fpdu_size(ulpdu.size()));
  }
}

void ddp(ByteView in) {
  auto h = wire::decode_ddp_header(in);
  check_status(h, in);
  if (h) {
    DDPSCOPE_FUZZ_CHECK(h.consumed() == h->size());
    Bytes out;
    ByteWriter w(out);
    wire::encode_ddp_header(h.value(), w);
    DDPSCOPE_FUZZ_CHECK(same(out, in.first(h.consumed())));
  }
  auto s = wire::decode_ddp_segment(in);
  check_status(s, in);
  if (s) {
    DDPSCOPE_FUZZ_CHECK(inside(s->payload, in));
    DDPSCOPE_FUZZ_CHECK(s->header.size() + s->payload.size() == in.size());
  }
}

template <class T, class Decode, class Encode>
void body_round_trip(ByteView in, Decode decode, Encode encode) {
  auto r = decode(in);
  check_status(r, in);
  if (!r) return;
  DDPSCOPE_FUZZ_CHECK(r.consumed() == T::kSize);
  Bytes out;
  ByteWriter w(out);
  encode(r.value(), w);
  DDPSCOPE_FUZZ_CHECK(same(out, in.first(T::kSize)));
}

void rdmap(std::uint8_t which, fuzz::FuzzInput& fi) {
  const ByteView in = fi.rest();
  switch (which % 6) {
    case 0:
      body_round_trip<wire::ReadRequest>(in, wire::decode_read_request, wire::encode_read_request);
      break;
    case 1:
      body_round_trip<wire::AtomicRequest>(in, wire::decode_atomic_request,
                                           wire::encode_atomic_request);
      if (!in.empty()) (void)wire::atomic_op_name(in[0] & 0x0F);
      break;
    case 2:
      body_round_trip<wire::AtomicResponse>(in, wire::decode_atomic_response,
                                            wire::encode_atomic_response);
      break;
    case 3: {
      auto r = wire::decode_immediate_data(in);
      check_status(r, in);
      break;
    }
    case 4: {
      auto t = wire::decode_terminate(in);
      check_status(t, in);
      if (!t) break;
      DDPSCOPE_FUZZ_CHECK(t->body_size <= in.size());
      // Whatever was decoded re-encodes in either layout without trouble.
      Bytes out;
      ByteWriter w(out);
      wire::encode_terminate(t.value(), t->layout, w);
      break;
    }
    case 5: {
      if (in.size() >= wire::MpaEnhancedPd::kSize) {
        const auto pd = wire::decode_mpa_enhanced_pd(in.data());
        Bytes out;
        ByteWriter w(out);
        wire::encode_mpa_enhanced_pd(pd, w);
        DDPSCOPE_FUZZ_CHECK(same(out, in.first(wire::MpaEnhancedPd::kSize)));
      }
      const std::uint8_t b = in.empty() ? 0 : in[0];
      (void)wire::opcode_info(b & 0x0F);
      (void)wire::RdmapControl::from_byte(b).byte();
      DDPSCOPE_FUZZ_CHECK(wire::DdpControl::from_byte(b).byte() == b);
      const std::uint32_t emss = in.size() >= 4 ? load_be32(in.data()) : b;
      const std::uint32_t m = wire::mulpdu(emss, b & 1);
      DDPSCOPE_FUZZ_CHECK(m <= emss);
      break;
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  fuzz::FuzzInput fi(data, size);
  const std::uint8_t selector = fi.u8();
  switch (selector % 6) {
    case 0:
      mpa_reqrep(fi.rest());
      break;
    case 1:
      fpdu(fi.rest());
      break;
    case 2:
      markers(fi);
      break;
    case 3:
      fpdu_encode(fi);
      break;
    case 4:
      ddp(fi.rest());
      break;
    case 5:
      rdmap(static_cast<std::uint8_t>(selector / 6), fi);
      break;
  }
  return 0;
}
