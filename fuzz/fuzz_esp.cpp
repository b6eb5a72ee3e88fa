// SPDX-License-Identifier: GPL-2.0-or-later
// The ESP layer (esp/): SA file parsers and the layer under an Analyzer. The first octet picks:
// 0 an esp_sa table, 1 ip -s xfrm state text (both: whatever they accept must build an
// EspLayer), 2-3 a run of frames (each a 16-bit length and its octets) through an EspLayer with
// one of four SA sets (AES-GCM, AES-CBC + HMAC-SHA-256, 3DES + HMAC-SHA-1, AES-GCM with ESN) and
// then an Analyzer. A replaced frame lies inside the layer's buffer and is whole (no snaplen).
#include <cstdint>
#include <string>
#include <string_view>

#include "ddpscope/analysis/analyzer.h"
#include "ddpscope/esp/layer.h"
#include "fuzz_input.h"

namespace {

using namespace ddpscope;

constexpr std::string_view kEspSa[] = {
    "\"IPv4\",\"*\",\"*\",\"0x00001001\",\"AES-GCM with 16 octet ICV [RFC4106]\","
    "\"0x31425364758697a8b9cadbecfd0e1f3041526374\",\"NULL\",\"\"\n"
    "\"IPv6\",\"*\",\"*\",\"0x00002001\",\"AES-GCM with 16 octet ICV [RFC4106]\","
    "\"0x31425364758697a8b9cadbecfd0e1f3041526374\",\"NULL\",\"\"\n",
    "\"IPv4\",\"*\",\"*\",\"0x00001001\",\"AES-CBC "
    "[RFC3602]\",\"0x31425364758697a8b9cadbecfd0e1f30\","
    "\"HMAC-SHA-256-128 [RFC4868]\","
    "\"0x5a6b7c8d9eafc0d1e2f30415263748596a7b8c9daebfd0e1f203142536475869\"\n",
    "\"IPv4\",\"*\",\"*\",\"0x00002001\",\"TripleDES-CBC [RFC2451]\","
    "\"0x31425364758697a8b9cadbecfd0e1f30415263748596a7b8\",\"HMAC-SHA-1-96 [RFC2404]\","
    "\"0x5a6b7c8d9eafc0d1e2f30415263748596a7b8c9d\"\n",
};
constexpr std::string_view kXfrmEsn =
    "src 10.0.0.1 dst 10.0.0.2\n\tproto esp spi 0x00001001 reqid 1 mode transport\n"
    "\treplay-window 0 flag af-unspec esn\n\taead rfc4106(gcm(aes)) "
    "0x31425364758697a8b9cadbecfd0e1f30415263748596a7b8c9daebfc0d1e2f4051627384 (288 bits) 128\n"
    "\tanti-replay esn context:\n\t replay_window 8, bitmap-length 1\n";

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  fuzz::FuzzInput fi(data, size);
  const std::uint8_t sel = fi.u8();
  esp::EspOptions options;
  std::string error;
  if (sel % 4 < 2) {
    const ByteView text = fi.rest();
    const std::string_view s(reinterpret_cast<const char*>(text.data()), text.size());
    const bool ok = sel % 4 == 0 ? esp::parse_esp_sa(s, "fuzz", options.sas, error)
                                 : esp::parse_xfrm(s, "fuzz", options.sas, error);
    DDPSCOPE_FUZZ_CHECK(ok || !error.empty());
    if (!ok) return 0;
    for (const auto& sa : options.sas) {
      (void)esp::to_esp_sa_line(sa);
      (void)esp::profile_violation(sa, true);
    }
    esp::EspLayer layer(std::move(options));  // keys libgcrypt refuses: error(), no crash
    return 0;
  }
  const unsigned set = (sel / 4) % 4;
  const bool ok = set < 3 ? esp::parse_esp_sa(kEspSa[set], "fuzz", options.sas, error)
                          : esp::parse_xfrm(kXfrmEsn, "fuzz", options.sas, error);
  DDPSCOPE_FUZZ_CHECK(ok);
  options.require_esp = (sel & 0x40) != 0;
  esp::EspLayer layer(std::move(options));
  DDPSCOPE_FUZZ_CHECK(layer.error().empty());
  Analyzer analyzer;
  capture::AnalyzerNotes notes(analyzer);
  std::uint64_t number = 0;
  const std::uint32_t link = (sel & 0x80) ? 101 : 1;
  while (fi.remaining() >= 2 && number < 256) {
    const std::size_t n = fi.be16() % 4096;
    const ByteView f = fi.take(n);
    capture::Frame frame{++number, static_cast<std::int64_t>(number) * 1000, link,
                         f,        static_cast<std::uint32_t>(f.size()),     0};
    const capture::Frame* inner = layer.replace(frame, notes);
    if (inner) {
      DDPSCOPE_FUZZ_CHECK(inner->number == frame.number);
      DDPSCOPE_FUZZ_CHECK(inner->wire_length == inner->data.size());
      fuzz::touch(inner->data);
      capture::feed_frame(analyzer, *inner);
    } else {
      capture::feed_frame(analyzer, frame);
    }
  }
  layer.finish(analyzer);
  analyzer.finish();
  return 0;
}
