// SPDX-License-Identifier: GPL-2.0-or-later
// The SCTP encoder is real SCTP: frames built by wire/sctp.h and net::encode_sctp_frame (IPv4,
// IPv6, UDP encapsulation), written by the capture library and read back by tshark with CRC-32C
// checking on, show a good checksum on every packet but the one corrupted on purpose, and the
// PPIDs and stream ids they were given.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "ddpscope/capture/file_writer.h"
#include "unit/sctp_builders.h"

namespace ddpscope {
namespace {

std::string run(const std::string& cmd) {
  std::string out;
  std::unique_ptr<FILE, int (*)(FILE*)> p(popen(cmd.c_str(), "r"), pclose);
  if (!p) return out;
  char buf[4096];
  std::size_t n;
  while ((n = fread(buf, 1, sizeof buf, p.get())) > 0)
    out.append(buf, n);
  return out;
}

std::vector<std::string> lines(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string l; std::getline(in, l);)
    out.push_back(l);
  return out;
}

TEST(SctpTshark, ChecksumsGoodExceptTheCorruptedPacket) {
  for (int variant = 0; variant < 3; ++variant) {
    const bool v6 = variant == 1, udp = variant == 2;
    Analyzer an;
    std::vector<Bytes> frames;
    sctptest::Association a(an, v6, udp);
    a.frames = &frames;
    a.setup();
    a.session_setup();
    a.send(0, 1, Bytes(300, 7), 3);  // three bundled fragments
    a.corrupt_next = true;
    a.send(1, 1, Bytes(20, 9));  // frame 8: bad checksum
    a.sack(0);
    const std::string path =
        std::string(DDPSCOPE_IO_TMP_DIR) + "/sctp-tshark-" + std::to_string(variant) + ".pcap";
    std::string error;
    auto w = capture::CaptureWriter::open(path, 1, error);
    ASSERT_TRUE(w) << error;
    for (std::size_t i = 0; i < frames.size(); ++i)
      w->write(static_cast<std::int64_t>(i + 1) * 1000000, frames[i]);
    ASSERT_TRUE(w->close(error)) << error;

    const std::string out = run("tshark -n -r " + path +
                                " -o sctp.checksum:CRC-32C -T fields -E occurrence=a -E "
                                "separator=/s -e frame.number -e sctp.checksum.status -e "
                                "sctp.data_payload_proto_id -e sctp.data_sid 2>/dev/null");
    const auto rows = lines(out);
    ASSERT_EQ(rows.size(), frames.size()) << out;
    for (std::size_t i = 0; i < rows.size(); ++i) {
      std::istringstream r(rows[i]);
      std::string number, status;
      r >> number >> status;
      EXPECT_EQ(number, std::to_string(i + 1));
      // 1 is Good, 0 Bad (Wireshark's proto_checksum status values).
      EXPECT_EQ(status, i + 1 == 8 ? "0" : "1") << "variant " << variant << " row " << rows[i];
    }
    EXPECT_NE(rows[4].find(" 17"), std::string::npos) << rows[4];       // Session Initiate: PPID 17
    EXPECT_NE(rows[6].find("16,16,16"), std::string::npos) << rows[6];  // three DDP fragments
    std::filesystem::remove(path);
  }
}

}  // namespace
}  // namespace ddpscope
