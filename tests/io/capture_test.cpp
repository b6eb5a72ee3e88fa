// SPDX-License-Identifier: GPL-2.0-or-later
#include "ddpscope/capture/file_reader.h"
#include "ddpscope/capture/file_writer.h"
#include "ddpscope/capture/live_capture.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string_view>

#include "ddpscope/net/packet.h"

namespace ddpscope::capture {
namespace {

namespace fs = std::filesystem;

ByteView view(std::string_view s) {
  return {reinterpret_cast<const std::uint8_t*>(s.data()), s.size()};
}

// A file path unique to the running test.
std::string temp_path(std::string_view suffix) {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  fs::path dir = fs::path(DDPSCOPE_IO_TMP_DIR) / "tmp";
  fs::create_directories(dir);
  return (dir / (std::string(info->test_suite_name()) + "." + info->name() + std::string(suffix)))
      .string();
}

net::TcpFrameSpec spec(std::uint32_t seq) {
  net::TcpFrameSpec s;
  s.src = net::Endpoint{*net::Address::parse("10.0.0.1"), 40000};
  s.dst = net::Endpoint{*net::Address::parse("10.0.0.2"), 4420};
  s.seq = seq;
  return s;
}

struct Written {
  std::int64_t ts_ns;
  Bytes data;
};

// Writes `count` Ethernet frames with distinct payloads and nanosecond timestamps.
std::vector<Written> write_sample(const std::string& path, int count) {
  std::vector<Written> frames;
  std::string error;
  auto w = CaptureWriter::open(path, 1, error);
  EXPECT_TRUE(w) << error;
  if (!w) return frames;
  for (int i = 0; i < count; ++i) {
    std::string payload =
        "frame " + std::to_string(i) + std::string(static_cast<std::size_t>(i * 7), 'x');
    Written f{1'700'000'000'123'456'789LL + i * 1'000'001LL,
              net::encode_tcp_frame(spec(1000 + i), view(payload))};
    w->write(f.ts_ns, f.data);
    frames.push_back(std::move(f));
  }
  EXPECT_TRUE(w->close(error)) << error;
  return frames;
}

TEST(CaptureIo, WriteThenReadBack) {
  std::string path = temp_path(".pcap");
  std::vector<Written> written = write_sample(path, 5);
  std::string error;
  auto r = CaptureReader::open(path, error);
  ASSERT_TRUE(r) << error;
  EXPECT_EQ(r->link_type(), 1u);
  EXPECT_EQ(r->snaplen(), 262144u);
  EXPECT_EQ(r->file_size(), fs::file_size(path));
  Frame frame;
  std::size_t n = 0;
  while (r->next(frame)) {
    ASSERT_LT(n, written.size());
    EXPECT_EQ(frame.number, n + 1);
    EXPECT_EQ(frame.ts_ns, written[n].ts_ns);
    EXPECT_EQ(frame.link_type, 1u);
    EXPECT_EQ(frame.wire_length, written[n].data.size());
    EXPECT_EQ(Bytes(frame.data.begin(), frame.data.end()), written[n].data);
    EXPECT_LE(r->bytes_read(), r->file_size());
    net::FrameDecode d = net::decode_frame(frame.link_type, frame.data, frame.wire_length);
    ASSERT_EQ(d.status, net::FrameStatus::tcp) << d.detail;
    EXPECT_EQ(d.tcp.seq, 1000 + n);
    ++n;
  }
  EXPECT_EQ(n, written.size());
  EXPECT_EQ(r->error(), "");
  EXPECT_EQ(r->bytes_read(), r->file_size());
}

TEST(CaptureIo, SnaplenAndWireLength) {
  std::string path = temp_path(".pcap");
  std::string error;
  auto w = CaptureWriter::open(path, 1, error, 64);
  ASSERT_TRUE(w) << error;
  Bytes big = net::encode_tcp_frame(spec(1), Bytes(500, 0x41));
  w->write(-1, big);  // before the epoch: -1 ns
  w->write(5, ByteView(big).first(60), static_cast<std::uint32_t>(big.size()));
  ASSERT_TRUE(w->close(error)) << error;

  auto r = CaptureReader::open(path, error);
  ASSERT_TRUE(r) << error;
  EXPECT_EQ(r->snaplen(), 64u);
  Frame f;
  ASSERT_TRUE(r->next(f)) << r->error();
  EXPECT_EQ(f.ts_ns, -1);
  EXPECT_EQ(f.data.size(), 64u);
  EXPECT_EQ(f.wire_length, big.size());
  net::FrameDecode d = net::decode_frame(f.link_type, f.data, f.wire_length);
  ASSERT_EQ(d.status, net::FrameStatus::tcp) << d.detail;
  EXPECT_TRUE(d.tcp.truncated());
  EXPECT_EQ(d.tcp.payload_length, 500u);
  ASSERT_TRUE(r->next(f)) << r->error();
  EXPECT_EQ(f.ts_ns, 5);
  EXPECT_EQ(f.data.size(), 60u);
  EXPECT_FALSE(r->next(f));
  EXPECT_EQ(r->error(), "");
}

TEST(CaptureIo, RawLinkTypeRoundTrips) {
  std::string path = temp_path(".pcap");
  std::string error;
  auto w = CaptureWriter::open(path, 101, error);
  ASSERT_TRUE(w) << error;
  Bytes eth = net::encode_tcp_frame(spec(9), view("raw"));
  w->write(0, ByteView(eth).subspan(14));
  ASSERT_TRUE(w->close(error)) << error;
  auto r = CaptureReader::open(path, error);
  ASSERT_TRUE(r) << error;
  EXPECT_EQ(r->link_type(), 101u);
  Frame f;
  ASSERT_TRUE(r->next(f));
  EXPECT_EQ(net::decode_frame(f.link_type, f.data, f.wire_length).status, net::FrameStatus::tcp);
}

TEST(CaptureIo, FileCutInsideARecordReportsAnError) {
  std::string path = temp_path(".pcap");
  std::vector<Written> written = write_sample(path, 4);
  auto size = fs::file_size(path);
  fs::resize_file(path, size - 10);  // the last record loses 10 octets of data
  for (std::uintmax_t cut_header : {0, 1}) {
    if (cut_header) {
      // Cut inside the last record's 16-octet header instead.
      fs::resize_file(path, size - written.back().data.size() - 16 + 5);
    }
    std::string error;
    auto r = CaptureReader::open(path, error);
    ASSERT_TRUE(r) << error;
    Frame f;
    std::size_t n = 0;
    while (r->next(f))
      ++n;
    EXPECT_EQ(n, 3u);
    EXPECT_NE(r->error(), "");
    EXPECT_NE(r->error().find("truncated"), std::string::npos) << r->error();
    EXPECT_FALSE(r->next(f));  // stays at the end
  }
}

TEST(CaptureIo, MissingFileFailsWithAMessage) {
  std::string error;
  auto r = CaptureReader::open(temp_path(".does-not-exist.pcap"), error);
  EXPECT_FALSE(r);
  EXPECT_NE(error, "");
}

TEST(CaptureIo, NotACaptureFailsWithAMessage) {
  std::string path = temp_path(".txt");
  std::ofstream(path) << "this is not a capture file, not even close\n";
  std::string error;
  EXPECT_FALSE(CaptureReader::open(path, error));
  EXPECT_NE(error, "");
}

TEST(CaptureIo, WriterFailsOnBadPath) {
  std::string error;
  EXPECT_FALSE(CaptureWriter::open("/nonexistent-dir/x.pcap", 1, error));
  // The path once (libpcap's message already starts with it), what failed, and why.
  EXPECT_EQ(error, "cannot write /nonexistent-dir/x.pcap: No such file or directory");
}

bool have_tool(const char* path) {
  return fs::exists(path);
}

TEST(CaptureIo, ReadsPcapng) {
  if (!have_tool("/usr/bin/editcap")) GTEST_SKIP() << "editcap is not installed";
  std::string pcap = temp_path(".pcap");
  std::string pcapng = temp_path(".pcapng");
  std::vector<Written> written = write_sample(pcap, 3);
  fs::remove(pcapng);
  std::string cmd = "/usr/bin/editcap -F pcapng '" + pcap + "' '" + pcapng + "'";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  std::string error;
  auto r = CaptureReader::open(pcapng, error);
  ASSERT_TRUE(r) << error;
  EXPECT_EQ(r->link_type(), 1u);
  Frame f;
  std::size_t n = 0;
  while (r->next(f)) {
    ASSERT_LT(n, written.size());
    EXPECT_EQ(f.number, n + 1);
    EXPECT_EQ(f.ts_ns, written[n].ts_ns);
    EXPECT_EQ(Bytes(f.data.begin(), f.data.end()), written[n].data);
    ++n;
  }
  EXPECT_EQ(n, written.size());
  EXPECT_EQ(r->error(), "");
}

// libpcap (1.10) presents one link type per file: when it meets a second interface
// description block with another link type, next() fails with libpcap's message. mergecap
// writes both interface blocks before any packet, so libpcap reads no frame at all. The mapped
// reader (the default, issue 43) reads every frame with its own interface's link type.
TEST(CaptureIo, PcapngWithMixedLinkTypes) {
  if (!have_tool("/usr/bin/mergecap")) GTEST_SKIP() << "mergecap is not installed";
  std::string eth = temp_path(".eth.pcap");
  std::string raw = temp_path(".raw.pcap");
  std::string merged = temp_path(".pcapng");
  write_sample(eth, 2);
  {
    std::string error;
    auto w = CaptureWriter::open(raw, 101, error);
    ASSERT_TRUE(w) << error;
    Bytes f = net::encode_tcp_frame(spec(7), view("raw"));
    w->write(1'800'000'000'000'000'000LL, ByteView(f).subspan(14));  // after the Ethernet ones
    ASSERT_TRUE(w->close(error)) << error;
  }
  fs::remove(merged);
  std::string cmd = "/usr/bin/mergecap -F pcapng -w '" + merged + "' '" + eth + "' '" + raw + "'";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  std::string error;
  {
    auto r = CaptureReader::open(merged, error);
    ASSERT_TRUE(r) << error;
    EXPECT_STREQ(r->backend(), "mapped");
    Frame f;
    std::vector<std::uint32_t> links;
    while (r->next(f)) {
      links.push_back(f.link_type);
      EXPECT_EQ(net::decode_frame(f.link_type, f.data, f.wire_length).status,
                net::FrameStatus::tcp);
    }
    EXPECT_EQ(links, (std::vector<std::uint32_t>{1, 1, 101}));
    EXPECT_EQ(r->error(), "");
  }
  auto r = CaptureReader::open(merged, error, ReaderKind::libpcap);
  if (!r) {
    EXPECT_NE(error, "");  // rejected up front: also acceptable, as long as it says why
    return;
  }
  Frame f;
  std::size_t n = 0;
  while (r->next(f))
    ++n;
  EXPECT_LE(n, 2u);
  EXPECT_NE(r->error().find("different from the type of the first interface"), std::string::npos)
      << r->error();
}

TEST(CaptureIo, SharedRpingCapture) {
  std::string path = std::string(DDPSCOPE_SHARED_DIR) + "/captures/softuiwarp-rping.pcap";
  if (!fs::exists(path)) GTEST_SKIP() << path << " is missing";
  std::string error;
  auto r = CaptureReader::open(path, error);
  ASSERT_TRUE(r) << error;
  EXPECT_EQ(r->link_type(), 1u);
  Frame f;
  std::size_t n = 0;
  const auto client = net::Endpoint{*net::Address::parse("10.10.1.1"), 42742};
  const auto server = net::Endpoint{*net::Address::parse("10.10.1.2"), 9999};
  std::int64_t last_ts = 0;
  while (r->next(f)) {
    ++n;
    EXPECT_EQ(f.number, n);
    EXPECT_GE(f.ts_ns, last_ts);
    last_ts = f.ts_ns;
    net::FrameDecode d = net::decode_frame(f.link_type, f.data, f.wire_length);
    ASSERT_EQ(d.status, net::FrameStatus::tcp) << "frame " << n << ": " << d.detail;
    bool forward = d.tcp.src == client && d.tcp.dst == server;
    bool reverse = d.tcp.src == server && d.tcp.dst == client;
    EXPECT_TRUE(forward || reverse) << d.tcp.src.to_string() << " -> " << d.tcp.dst.to_string();
    if (n == 1) {
      EXPECT_TRUE(forward);
    }
  }
  EXPECT_EQ(r->error(), "");
  EXPECT_EQ(n, 15u);
}

// A real TCP connection over 127.0.0.1, seen by a live capture on "lo".
TEST(LiveCaptureTest, SeesLoopbackTcp) {
  int listener = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(listener, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  sa.sin_port = 0;  // the kernel picks a free port
  ASSERT_EQ(::bind(listener, reinterpret_cast<sockaddr*>(&sa), sizeof sa), 0);
  ASSERT_EQ(::listen(listener, 1), 0);
  socklen_t len = sizeof sa;
  ASSERT_EQ(::getsockname(listener, reinterpret_cast<sockaddr*>(&sa), &len), 0);
  const std::uint16_t port = ntohs(sa.sin_port);

  std::string error;
  auto live = LiveCapture::open("lo", "tcp port " + std::to_string(port), error);
  if (!live) {
    ::close(listener);
    if (error.find("ermission") != std::string::npos ||
        error.find("not permitted") != std::string::npos) {
      GTEST_SKIP() << "live capture needs root or CAP_NET_RAW: " << error;
    }
    FAIL() << error;
  }
  EXPECT_TRUE(net::is_supported_link_type(live->link_type())) << live->link_type();

  int client = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(client, 0);
  ASSERT_EQ(::connect(client, reinterpret_cast<sockaddr*>(&sa), sizeof sa), 0);
  int server = ::accept(listener, nullptr, nullptr);
  ASSERT_GE(server, 0);
  const std::string message = "ddpscope live capture " + std::to_string(port);
  ASSERT_EQ(::send(client, message.data(), message.size(), 0),
            static_cast<ssize_t>(message.size()));

  bool seen = false;
  std::uint64_t last_number = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!seen && std::chrono::steady_clock::now() < deadline) {
    Frame f;
    int rc = live->next(f, 200);
    ASSERT_GE(rc, 0) << live->error();
    if (rc == 0) continue;
    EXPECT_EQ(f.number, last_number + 1);
    last_number = f.number;
    net::FrameDecode d = net::decode_frame(f.link_type, f.data, f.wire_length);
    if (d.status != net::FrameStatus::tcp) continue;
    EXPECT_TRUE(d.tcp.src.port == port || d.tcp.dst.port == port);
    std::string_view payload(reinterpret_cast<const char*>(d.tcp.payload.data()),
                             d.tcp.payload.size());
    if (payload == message) {
      seen = true;
      EXPECT_EQ(d.tcp.dst.port, port);
      EXPECT_EQ(d.tcp.src.addr.to_string(), "127.0.0.1");
    }
  }
  EXPECT_TRUE(seen) << "no frame carried the message; " << live->stats();
  EXPECT_NE(live->stats().find("received"), std::string::npos);

  // stop() ends the wait promptly, from the same or another thread.
  live->stop();
  Frame f;
  EXPECT_EQ(live->next(f, 5000), -1);
  ::close(server);
  ::close(client);
  ::close(listener);
}

TEST(LiveCaptureTest, BadFilterFailsWithAMessage) {
  std::string error;
  auto live = LiveCapture::open("lo", "this is not bpf", error);
  EXPECT_FALSE(live);
  EXPECT_NE(error, "");
}

TEST(LiveCaptureTest, MissingInterfaceFails) {
  std::string error;
  auto live = LiveCapture::open("ddpscope-no-such-if0", "", error);
  EXPECT_FALSE(live);
  EXPECT_NE(error, "");
}

}  // namespace
}  // namespace ddpscope::capture
