// SPDX-License-Identifier: GPL-2.0-or-later
// capture::feed, the loop every host runs from a capture file into the engine: progress, the
// last complete frame, a damaged file reported once as capture.truncated-file at that frame,
// a stop by the progress hook, empty files. On a real sample cut at record boundaries and
// inside records.
#include "ddpscope/capture/feed.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "ddpscope/common/crc32c.h"
#include "ddpscope/findings/catalog.h"
#include "ddpscope/tcp/reassembly.h"

namespace ddpscope::capture {
namespace {

namespace fs = std::filesystem;

constexpr std::size_t kPcapHeader = 24;
constexpr std::size_t kRecordHeader = 16;

Bytes read_bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return Bytes(std::istreambuf_iterator<char>(in), {});
}

// A file path unique to the running test.
fs::path temp_path(const std::string& suffix) {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  const fs::path dir = fs::path(DDPSCOPE_IO_TMP_DIR) / "tmp";
  fs::create_directories(dir);
  // A parameterized test's names hold '/'.
  std::string name = std::string(info->test_suite_name()) + "." + info->name() + suffix;
  std::replace(name.begin(), name.end(), '/', '_');
  return dir / name;
}

fs::path write_file(const std::string& suffix, ByteView data) {
  const fs::path p = temp_path(suffix);
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(data.data()), static_cast<std::streamsize>(data.size()));
  return p;
}

// The sample every case cuts: an iWARP exchange (MPA handshake, Sends with an MSN fault).
const Bytes& sample() {
  static const Bytes b =
      read_bytes(fs::path(DDPSCOPE_SOURCE_DIR) / "samples/synthetic/fault-msn.pcap");
  return b;
}

// Offsets of the records of a little-endian classic pcap file, read from the file itself.
std::vector<std::size_t> record_offsets(const Bytes& file) {
  std::vector<std::size_t> at;
  std::size_t pos = kPcapHeader;
  while (pos + kRecordHeader <= file.size()) {
    at.push_back(pos);
    std::uint32_t caplen = 0;
    std::memcpy(&caplen, file.data() + pos + 8, 4);
    pos += kRecordHeader + caplen;
  }
  return at;
}

Bytes prefix(std::size_t n) {
  return Bytes(sample().begin(), sample().begin() + static_cast<std::ptrdiff_t>(n));
}

std::vector<std::pair<std::string, std::uint64_t>> findings_of(const Model& m) {
  std::vector<std::pair<std::string, std::uint64_t>> v;
  for (const auto& f : m.findings)
    v.emplace_back(std::string(f.code()), f.frame);
  return v;
}

std::vector<std::uint64_t> truncated_frames(const Model& m) {
  std::vector<std::uint64_t> v;
  for (const auto& f : m.findings)
    if (f.id == FindingId::capture_truncated_file) v.push_back(f.frame);
  return v;
}

std::unique_ptr<CaptureReader> open(const fs::path& p) {
  std::string error;
  auto r = CaptureReader::open(p.string(), error);
  EXPECT_TRUE(r) << error;
  return r;
}

// The engine fed by hand, frame by frame, then finished: what feed() must equal on a clean file.
std::vector<std::pair<std::string, std::uint64_t>> reference_findings(const fs::path& p) {
  auto r = open(p);
  Analyzer an;
  Frame f;
  while (r && r->next(f))
    an.feed_frame(f.number, f.ts_ns, f.link_type, f.data, f.wire_length);
  an.finish();
  return findings_of(an.model());
}

// Every test runs on the one-thread loop and on the two-thread pipeline, the latter with a
// queue of 6 frames and 4 KiB (one frame a batch; frames over 680 octets travel alone in a batch
// of their own size), so that the reader waits on the engine again and again.
class Feed : public ::testing::TestWithParam<unsigned> {
 protected:
  static FeedOptions options() {
    FeedOptions o;
    o.threads = GetParam();
    o.pipeline_frames = 6;
    o.pipeline_octets = 4096;
    return o;
  }
};

TEST_P(Feed, WholeFileEqualsTheEngineFedByHandAndFinished) {
  const auto at = record_offsets(sample());
  ASSERT_GT(at.size(), 10u);
  const fs::path p = write_file(".pcap", sample());
  auto r = open(p);
  ASSERT_TRUE(r);
  Analyzer an;
  const FeedResult fed = feed(*r, an, options());
  EXPECT_EQ(fed.frames, at.size());
  EXPECT_EQ(fed.last_frame, at.size());
  EXPECT_TRUE(fed.error.empty()) << fed.error;
  EXPECT_FALSE(fed.cancelled);
  EXPECT_EQ(an.model().frames, at.size());
  EXPECT_TRUE(truncated_frames(an.model()).empty());
  const auto got = findings_of(an.model());
  EXPECT_FALSE(got.empty());  // the sample's MSN fault, at least
  EXPECT_EQ(got, reference_findings(p));
}

TEST_P(Feed, ProgressIsCalledEveryNFramesWithTheReadersPosition) {
  const auto at = record_offsets(sample());
  const fs::path p = write_file(".pcap", sample());
  for (std::uint64_t every : {1u, 5u}) {
    auto r = open(p);
    ASSERT_TRUE(r);
    Analyzer an;
    std::vector<FeedProgress> calls;
    FeedOptions o = options();
    o.progress_every = every;
    o.progress = [&](const FeedProgress& pr) {
      calls.push_back(pr);
      // The engine has been fed exactly the frames reported.
      EXPECT_EQ(an.model().frames, pr.frames);
      return true;
    };
    const FeedResult fed = feed(*r, an, o);
    ASSERT_EQ(calls.size(), at.size() / every) << "every " << every;
    for (std::size_t i = 0; i < calls.size(); ++i) {
      EXPECT_EQ(calls[i].frames, (i + 1) * every);
      EXPECT_EQ(calls[i].last_frame, (i + 1) * every);
      EXPECT_EQ(calls[i].file_size, sample().size());
      EXPECT_LE(calls[i].bytes_read, sample().size());
      if (i > 0) {
        EXPECT_GE(calls[i].bytes_read, calls[i - 1].bytes_read);
      }
    }
    EXPECT_EQ(fed.frames, at.size());
  }
}

TEST_P(Feed, OnFrameSeesEveryFrameInOrderBeforeTheEngine) {
  const fs::path p = write_file(".pcap", sample());
  auto r = open(p);
  ASSERT_TRUE(r);
  Analyzer an;
  std::vector<std::uint64_t> seen;
  FeedOptions o = options();
  o.on_frame = [&](const Frame& f) {
    EXPECT_EQ(an.model().frames, seen.size());  // not yet fed
    seen.push_back(f.number);
  };
  const FeedResult fed = feed(*r, an, o);
  ASSERT_EQ(seen.size(), fed.frames);
  for (std::size_t i = 0; i < seen.size(); ++i)
    EXPECT_EQ(seen[i], i + 1);
}

TEST_P(Feed, CutInsideARecordIsReportedOnceAtTheLastCompleteFrame) {
  const auto at = record_offsets(sample());
  for (std::size_t k : {std::size_t{1}, std::size_t{11}, at.size() - 1}) {
    // The file cut cleanly before record k: k complete frames, no damage.
    const fs::path clean = write_file(".clean.pcap", prefix(at[k]));
    auto expected = reference_findings(clean);
    // Cut inside record k's header (7 octets of it) and inside its data (header + 20).
    for (std::size_t extra : {std::size_t{7}, kRecordHeader + 20}) {
      const fs::path cut = write_file(".cut.pcap", prefix(at[k] + extra));
      auto r = open(cut);
      ASSERT_TRUE(r);
      Analyzer an;
      const FeedResult fed = feed(*r, an, options());
      EXPECT_EQ(fed.frames, k);
      EXPECT_EQ(fed.last_frame, k) << "cut inside record " << k + 1;
      EXPECT_NE(fed.error.find("truncated"), std::string::npos) << fed.error;
      EXPECT_FALSE(fed.cancelled);
      EXPECT_EQ(truncated_frames(an.model()), std::vector<std::uint64_t>{k});
      // Everything before the damage is analysed as in the clean file.
      auto got = findings_of(an.model());
      got.erase(std::remove_if(got.begin(), got.end(),
                               [](const auto& f) { return f.first == "capture.truncated-file"; }),
                got.end());
      EXPECT_EQ(got, expected) << "cut inside record " << k + 1;
    }
  }
}

TEST_P(Feed, CutInsideTheFirstRecordIsReportedAtFrameZero) {
  const fs::path cut = write_file(".pcap", prefix(kPcapHeader + 10));
  auto r = open(cut);
  ASSERT_TRUE(r);
  Analyzer an;
  const FeedResult fed = feed(*r, an, options());
  EXPECT_EQ(fed.frames, 0u);
  EXPECT_EQ(fed.last_frame, 0u);
  EXPECT_FALSE(fed.error.empty());
  EXPECT_EQ(truncated_frames(an.model()), std::vector<std::uint64_t>{0});
}

TEST_P(Feed, FileWithNoRecords) {
  // Only the file header: a capture with nothing in it.
  const fs::path empty = write_file(".pcap", prefix(kPcapHeader));
  auto r = open(empty);
  ASSERT_TRUE(r);
  Analyzer an;
  int calls = 0;
  FeedOptions o = options();
  o.progress_every = 1;
  o.progress = [&](const FeedProgress&) { return ++calls, true; };
  const FeedResult fed = feed(*r, an, o);
  EXPECT_EQ(fed.frames, 0u);
  EXPECT_EQ(fed.last_frame, 0u);
  EXPECT_TRUE(fed.error.empty()) << fed.error;
  EXPECT_EQ(calls, 0);
  EXPECT_EQ(an.model().frames, 0u);
  EXPECT_TRUE(an.model().findings.empty());
  // A file of zero octets is not a capture: the reader refuses it, there is nothing to feed.
  std::string error;
  EXPECT_FALSE(CaptureReader::open(write_file(".zero.pcap", {}).string(), error));
  EXPECT_FALSE(error.empty());
}

TEST_P(Feed, StopFromProgressLeavesTheAnalysisUnfinished) {
  const auto at = record_offsets(sample());
  // Damaged near the end, stopped before: no capture.truncated-file, no finish().
  const fs::path cut = write_file(".pcap", prefix(at.back() + 7));
  auto r = open(cut);
  ASSERT_TRUE(r);
  Analyzer an;
  FeedOptions o = options();
  o.progress_every = 4;
  o.progress = [](const FeedProgress& pr) { return pr.frames < 8; };
  const FeedResult fed = feed(*r, an, o);
  EXPECT_TRUE(fed.cancelled);
  EXPECT_EQ(fed.frames, 8u);
  EXPECT_EQ(fed.last_frame, 8u);
  EXPECT_TRUE(fed.error.empty());
  EXPECT_EQ(an.model().frames, 8u);
  EXPECT_TRUE(truncated_frames(an.model()).empty());
  // One thread: the rest of the file is still there for the host to read. Two: the reader
  // thread has read ahead (at most the queue's frames and the one it was holding).
  Frame f;
  ASSERT_TRUE(r->next(f));
  if (GetParam() == 1)
    EXPECT_EQ(f.number, 9u);
  else
    EXPECT_LE(f.number, 9u + 6 + 1 + 1);
}

// A layer that wants only the frames that carry no TCP payload and puts a copy of each in its
// place, under the same number: it is asked about exactly those, in order, and the analysis is
// the same as without it (the copies' decode, the others' views moved to the pipeline's batch).
class CopyingLayer final : public FrameLayer {
 public:
  const Frame* replace(const Frame& frame, LayerNotes&) override {
    asked.push_back(frame.number);
    copy = Bytes(frame.data.begin(), frame.data.end());
    out = frame;
    out.data = copy;
    return &out;
  }
  bool wants(const net::FrameDecode& d) const override {
    return d.status != net::FrameStatus::tcp || d.tcp.payload_length == 0;
  }
  void finish(Analyzer&) override {}
  std::vector<std::uint64_t> asked;

 private:
  Bytes copy;
  Frame out;
};

TEST_P(Feed, ALayerIsAskedOnlyAboutTheFramesItWants) {
  const fs::path p = write_file(".pcap", sample());
  std::vector<std::uint64_t> without_payload;
  {
    auto r = open(p);
    ASSERT_TRUE(r);
    Frame f;
    while (r->next(f)) {
      const auto d = net::decode_frame(f.link_type, f.data, f.wire_length);
      ASSERT_EQ(d.status, net::FrameStatus::tcp);
      if (d.tcp.payload_length == 0) without_payload.push_back(f.number);
    }
  }
  ASSERT_GT(without_payload.size(), 2u);  // the handshake's and the ACKs
  ASSERT_LT(without_payload.size(), record_offsets(sample()).size());
  auto r = open(p);
  ASSERT_TRUE(r);
  Analyzer an;
  CopyingLayer layer;
  FeedOptions o = options();
  o.layer = &layer;
  const FeedResult fed = feed(*r, an, o);
  EXPECT_EQ(layer.asked, without_payload);
  EXPECT_EQ(fed.frames, record_offsets(sample()).size());
  EXPECT_EQ(findings_of(an.model()), reference_findings(p));
}

// Frames used where they lie (a mapped file) with a layer's copies that fill a batch's octets
// before its frame count: the frame whose copy does not fit moves to the next batch.
TEST(FeedInPlace, ALayersCopyThatDoesNotFitMovesItsFrameToTheNextBatch) {
  const fs::path p = write_file(".pcap", sample());
  auto r = open(p);
  ASSERT_TRUE(r);
  Analyzer an;
  CopyingLayer layer;
  FeedOptions o;
  o.threads = 2;
  o.pipeline_frames = 6 * 100;  // 100 frames a batch
  o.pipeline_octets = 6 * 150;  // 150 octets: two or three copies
  o.layer = &layer;
  std::vector<std::uint64_t> seen;
  o.on_frame = [&](const Frame& f) { seen.push_back(f.number); };
  const FeedResult fed = feed(*r, an, o);
  const std::size_t frames = record_offsets(sample()).size();
  EXPECT_EQ(fed.frames, frames);
  ASSERT_EQ(seen.size(), frames);
  for (std::size_t i = 0; i < seen.size(); ++i) {
    EXPECT_EQ(seen[i], i + 1);
  }
  EXPECT_GT(layer.asked.size(), 3u);
  EXPECT_EQ(findings_of(an.model()), reference_findings(p));
}

// What the analysis and on_frame see of a file, for comparing two ways of feeding it.
struct FedView {
  std::vector<std::tuple<std::string, std::uint64_t, std::string>> findings;
  std::vector<std::uint64_t> counts;  // per stream direction: TCP octets, FPDUs, octets placed
  std::uint64_t frames = 0;
  std::uint64_t frame_octets = 0;  // the CRC32Cs of the frames on_frame saw, in order, summed up
  bool operator==(const FedView&) const = default;
};

// `refer`: the analysis takes the frames the feed says stay valid at their word
// (AnalyzerOptions::frames_stay_valid: TCP's retransmission history refers to them).
FedView feed_view(const fs::path& p, ReaderKind kind, unsigned threads, bool refer = false) {
  std::string error;
  auto r = CaptureReader::open(p.string(), error, kind);
  EXPECT_TRUE(r) << p << ": " << error;
  FedView v;
  if (!r) return v;
  AnalyzerOptions options;
  options.frames_stay_valid = refer;
  Analyzer an(options);
  FeedOptions o;
  o.threads = threads;
  o.pipeline_frames = 6;  // a batch every frame: batches recycled many times
  o.pipeline_octets = 4096;
  o.on_frame = [&](const Frame& f) { v.frame_octets = v.frame_octets * 31 + crc32c(f.data); };
  v.frames = feed(*r, an, o).frames;
  for (const auto& f : an.model().findings)
    v.findings.emplace_back(std::string(f.code()), f.frame, f.message);
  for (const auto& s : an.model().streams)
    for (const auto& d : s.dirs) {
      v.counts.push_back(d.tcp_bytes);
      v.counts.push_back(d.fpdus);
      v.counts.push_back(d.bytes_placed);
    }
  return v;
}

// The pipeline uses a mapped file's frames where they lie (CaptureReader::frames_stay_valid)
// instead of copying them into its batches: on every sample, what the engine and on_frame get
// equals the copies' (libpcap's frames, copied) and the one-thread loop's. So does the analysis
// that refers to those frames from its retransmission history, fed by either loop.
TEST(FeedInPlace, EverySampleTheSameAsCopiedFrames) {
  std::size_t files = 0;
  for (const auto& e :
       fs::recursive_directory_iterator(fs::path(DDPSCOPE_SOURCE_DIR) / "samples")) {
    const auto ext = e.path().extension();
    if (ext != ".pcap" && ext != ".pcapng") continue;
    std::string error;
    auto r = CaptureReader::open(e.path().string(), error, ReaderKind::mapped);
    if (!r) continue;  // a file only libpcap reads
    Frame f;
    if (r->next(f)) {
      EXPECT_TRUE(r->frames_stay_valid()) << e.path();
    }
    ++files;
    const FedView in_place = feed_view(e.path(), ReaderKind::mapped, 2);
    EXPECT_GT(in_place.frames, 0u) << e.path();
    EXPECT_EQ(in_place, feed_view(e.path(), ReaderKind::libpcap, 2)) << e.path();
    EXPECT_EQ(in_place, feed_view(e.path(), ReaderKind::mapped, 1)) << e.path();
    EXPECT_EQ(in_place, feed_view(e.path(), ReaderKind::mapped, 2, true)) << e.path();
    EXPECT_EQ(in_place, feed_view(e.path(), ReaderKind::mapped, 1, true)) << e.path();
  }
  EXPECT_GT(files, 20u);
}

TEST(FeedInPlace, OnlyAMappedUncompressedFileKeepsItsFrames) {
  const fs::path p = write_file(".pcap", sample());
  const fs::path gp = temp_path(".pcap.gz");
  gzFile g = gzopen(gp.string().c_str(), "wb");
  ASSERT_NE(g, nullptr);
  gzwrite(g, sample().data(), static_cast<unsigned>(sample().size()));
  gzclose(g);
  for (const auto& [path, kind, stays] :
       {std::tuple{p, ReaderKind::mapped, true}, std::tuple{p, ReaderKind::libpcap, false},
        std::tuple{gp, ReaderKind::mapped, false}}) {
    std::string error;
    auto r = CaptureReader::open(path.string(), error, kind);
    ASSERT_TRUE(r) << error;
    Frame f;
    ASSERT_TRUE(r->next(f));
    EXPECT_EQ(r->frames_stay_valid(), stays) << path << " " << r->backend();
    EXPECT_EQ(feed_view(path, kind, 2), feed_view(p, ReaderKind::libpcap, 1)) << path;
    EXPECT_EQ(feed_view(path, kind, 1, true), feed_view(p, ReaderKind::libpcap, 1)) << path;
  }
}

// Where TCP's retransmission history reads, seen by changing the file under the reader on
// purpose (on Linux a private map's untouched pages show the file's current octets): a data
// segment is retransmitted at the end of the file, and its first copy in the file is changed
// just before the retransmission is fed. An analysis that refers to the mapped frames (the
// option on, and the feed saying they stay valid: one thread or two) finds the retransmission
// different; one that copied them (the option off, or libpcap's frames) does not.
TEST(FeedInPlace, FramesThatStayValidAreReadWhereTheFileHoldsThem) {
  Bytes file = sample();
  const std::vector<std::size_t> at = record_offsets(file);
  std::uint32_t link_type = 0;
  std::memcpy(&link_type, file.data() + 20, 4);
  std::size_t record = 0, record_size = 0, payload_at = 0;
  for (std::size_t i = 0; i < at.size() && payload_at == 0; ++i) {
    std::uint32_t caplen = 0;
    std::memcpy(&caplen, file.data() + at[i] + 8, 4);
    const ByteView frame(file.data() + at[i] + kRecordHeader, caplen);
    const net::FrameDecode d = net::decode_frame(link_type, frame, caplen);
    if (d.status != net::FrameStatus::tcp || d.tcp.payload.size() < TcpReassembler::kMinSpan)
      continue;
    record = i;
    record_size = kRecordHeader + caplen;
    payload_at =
        at[i] + kRecordHeader + static_cast<std::size_t>(d.tcp.payload.data() - frame.data());
  }
  ASSERT_NE(payload_at, 0u);
  const Bytes copy(file.begin() + static_cast<std::ptrdiff_t>(at[record]),
                   file.begin() + static_cast<std::ptrdiff_t>(at[record] + record_size));
  file.insert(file.end(), copy.begin(), copy.end());
  const std::uint64_t retransmission = at.size() + 1;
  auto conflicts = [&](ReaderKind kind, unsigned threads, bool refer) {
    const fs::path p = write_file(".pcap", file);
    std::string error;
    auto r = CaptureReader::open(p.string(), error, kind);
    EXPECT_TRUE(r) << error;
    if (!r) return std::size_t{0};
    AnalyzerOptions options;
    options.frames_stay_valid = refer;
    Analyzer an(options);
    FeedOptions o;
    o.threads = threads;
    o.on_frame = [&](const Frame& f) {
      if (f.number != retransmission) return;
      std::fstream out(p, std::ios::binary | std::ios::in | std::ios::out);
      out.seekp(static_cast<std::streamoff>(payload_at + 5));
      out.put(static_cast<char>(file[payload_at + 5] ^ 0x40));
    };
    const FeedResult fed = feed(*r, an, o);
    EXPECT_EQ(fed.frames, retransmission);
    return an.model()
        .finding_counts[static_cast<std::size_t>(FindingId::tcp_retransmission_conflict)];
  };
  const std::size_t copied = conflicts(ReaderKind::libpcap, 1, true);
  EXPECT_EQ(conflicts(ReaderKind::mapped, 1, false), copied);
  EXPECT_EQ(conflicts(ReaderKind::mapped, 2, false), copied);
  EXPECT_EQ(conflicts(ReaderKind::mapped, 1, true), copied + 1);
  EXPECT_EQ(conflicts(ReaderKind::mapped, 2, true), copied + 1);
}

INSTANTIATE_TEST_SUITE_P(Threads, Feed, ::testing::Values(1u, 2u),
                         [](const auto& info) { return "threads" + std::to_string(info.param); });

}  // namespace
}  // namespace ddpscope::capture
