// SPDX-License-Identifier: GPL-2.0-or-later
// IPsec ESP around a generated capture (the scenario's `esp` block): each frame of a protected
// connection becomes an ESP packet (RFC 4303; tunnel or transport mode, RFC 3948 UDP
// encapsulation) of its direction's SA, sealed by esp::SaCrypto (the analyzer's own transform),
// and the ESP faults add packets at known frames: a replayed copy (esp.replay), a forged copy
// with a flipped ICV bit (esp.icv-mismatch), one with bad padding under a valid ICV
// (esp.decrypt-invalid). The exchange the analysis sees after decryption is the one in the clear.
#pragma once

#include <vector>

#include "ddpscope/esp/sa.h"
#include "generator.h"
#include "scenario.h"

namespace ddpscope::synth {

struct EspWrapped {
  std::vector<esp::SecurityAssociation> sas;  // one per direction of each outer address pair
  std::vector<std::pair<net::Address, net::Address>> outer;  // each SA's outer src, dst
};

// Rewrites `g.frames` and renumbers `g.expected`; adds the esp.* expectations. Throws
// GenerateError (emitter.h) on a fault naming a frame that is not an ESP frame.
EspWrapped esp_wrap(const Scenario& s, Generated& g);

}  // namespace ddpscope::synth
