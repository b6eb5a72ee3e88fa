// SPDX-License-Identifier: GPL-2.0-or-later
// The message for a savefile pcap_dump_open() could not create. Private to the capture library.
#pragma once

#include <string>

namespace ddpscope::capture::detail {

// "cannot write PATH: REASON". libpcap's own message (pcap_geterr) already starts with the
// path ("PATH: No such file or directory"); that prefix is dropped so the path is said once.
inline std::string dump_open_error(const std::string& path, const std::string& pcap_message) {
  std::string reason = pcap_message;
  if (reason.starts_with(path + ": ")) reason.erase(0, path.size() + 2);
  return "cannot write " + path + ": " + reason;
}

}  // namespace ddpscope::capture::detail
