// SPDX-License-Identifier: GPL-2.0-or-later
// One captured frame, as the file reader (file_reader.h) and the live capture (live_capture.h)
// hand it out.
#pragma once

#include <cstdint>

#include "ddpscope/common/bytes.h"

namespace ddpscope::capture {

// `data` points into the reader's buffer and stays valid until the next call to next() on the
// same reader (or its destruction).
struct Frame {
  std::uint64_t number = 0;       // 1-based, as Wireshark numbers frames
  std::int64_t ts_ns = 0;         // nanoseconds since the Unix epoch
  std::uint32_t link_type = 0;    // LINKTYPE_* of the frame's interface
  ByteView data;                  // the captured octets (caplen)
  std::uint32_t wire_length = 0;  // the frame's original length
  // The pcapng interface of the packet (its Interface Description Block's index in its
  // section) as the mapped reader reads it; 0 for classic pcap, live capture and libpcap
  // (1.10 does not expose it, and presents one link type per file: at an interface of another
  // link type than the first's, libpcap's next() fails with its message "an interface has a
  // type N different from the type of the first interface").
  std::uint32_t interface_id = 0;
};

}  // namespace ddpscope::capture
