// SPDX-License-Identifier: GPL-2.0-or-later
// The file reader's own parser of capture files (issue 43): the file mapped, each record handed
// out where it lies, classic pcap and pcapng, gzip-compressed through zlib's streaming inflate
// into a sliding buffer. Private to the capture library; CaptureReader (file_reader.h) uses it
// for regular files and keeps libpcap for what it does not read (standard input, pipes, pcap
// versions before 2.4, link types whose pseudo-header libpcap rewrites).
//
// What it reads equals what libpcap 1.10 hands out, record by record (octets, time, lengths,
// link type), and where a file is damaged it stops where libpcap stops, with libpcap's words:
// tests/io/reader_equivalence_test.cpp holds the two to that. Where libpcap gives up on a valid
// pcapng file, it goes on: interfaces of several link types and snapshot lengths, sections of
// either byte order.
//
// The map is of the file's size at open: octets appended later are not read (libpcap would read
// them). A file cut shorter by another process while it is read would end the process with
// SIGBUS (the kernel's answer to a read of a mapped page past the end of the file): a handler
// turns the rest of the map into zero pages instead, and reading stops at the file's new end
// with an error that says the file was cut short (mapped_reader.cpp, GuardedMap). What lay in the
// last page past the new end reads as zeros until then: a record that crossed it is handed out
// with zeros past it, and the next one (read as empty) stops the reading.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ddpscope/capture/frame.h"

namespace ddpscope::capture::detail {

using Record = Frame;  // number is left to the caller

constexpr std::int64_t kNsPerS = 1'000'000'000;

// As CaptureReader turns libpcap's timeval into nanoseconds: saturating at the int64 range.
inline std::int64_t to_ns(std::int64_t sec, std::int64_t frac_ns) {
  std::int64_t sec_ns = 0, ns = 0;
  if (__builtin_mul_overflow(sec, kNsPerS, &sec_ns) ||
      __builtin_add_overflow(sec_ns, frac_ns, &ns)) {
    return sec < 0 ? INT64_MIN : INT64_MAX;
  }
  return ns;
}

// A pcap record's time as libpcap hands it out: its header fields are signed 32-bit, but in a
// file of the other byte order they pass through SWAPLONG, whose result is unsigned (so a
// second or fraction of 2^31 or more is negative in the host's order, positive in the other).
inline std::int64_t pcap_ts(std::uint32_t sec, std::uint32_t frac, bool swapped, bool nano) {
  const std::int64_t s = swapped ? std::int64_t{sec} : std::int64_t{static_cast<std::int32_t>(sec)};
  const std::int64_t f =
      swapped ? std::int64_t{frac} : std::int64_t{static_cast<std::int32_t>(frac)};
  return to_ns(s, f * (nano ? 1 : 1000));
}

// The cut_at of a map without a slot in the SIGBUS handler's table: never cut.
inline const std::atomic<std::size_t> kNeverCut{SIZE_MAX};

class MappedReader {
 public:
  // `again` is internal: a section of the other byte order begins (next() never returns it).
  enum class Next { record, end, error, use_libpcap, again };
  static constexpr std::size_t kRecordHeader = 16;
  static constexpr std::uint32_t kEpbType = 6;  // pcapng's Enhanced Packet Block

  // A reader of `fd` (a regular file of `size` octets, not taken over), or nullptr with `why`
  // set: not a file this reader reads (the caller opens it with libpcap, which reads it or says
  // what is wrong with it in its own words).
  static std::unique_ptr<MappedReader> open(int fd, std::uint64_t size, std::string& why);
  ~MappedReader();
  MappedReader(const MappedReader&) = delete;
  MappedReader& operator=(const MappedReader&) = delete;

  // record: `r` filled. end: the file ended cleanly. error: error() says why (libpcap's words).
  // use_libpcap: the next record is one libpcap rewrites (a byte-swapped pseudo-header of an
  // interface described mid-file); the caller reads the rest of the file with libpcap, after
  // the records() already handed out.
  Next next(Record& r);
  // next() for the common record, inline in the caller (CaptureReader::next): one of an
  // uncompressed classic pcap file of our byte order, within the snapshot length and the file,
  // not empty, not the one at which pages are due for release, the file not cut short. True
  // with `r` filled as next() fills it; false with nothing changed, for next() to read (and
  // decide) whatever else comes. Three calls deep, next() was ~120 instructions a record.
  [[gnu::always_inline]] bool next_common(Record& r) {
    if (!plain_pcap_ || done_) return false;
    const std::uint8_t* const at = cur_;
    if (static_cast<std::size_t>(end_ - at) < kRecordHeader) return false;
    std::uint32_t h[4];  // seconds, fraction, captured length, wire length
    std::memcpy(h, at, sizeof h);
    const std::uint32_t caplen = h[2];
    // caplen - 1: an empty record (check_record's) wraps around past any snapshot length.
    if (caplen - 1 >= snapshot_ || static_cast<std::size_t>(end_ - at) - kRecordHeader < caplen)
      return false;
    const std::uint8_t* const next = at + kRecordHeader + caplen;
    if (reinterpret_cast<std::uintptr_t>(next) >= release_at_ ||
        cut_at_->load(std::memory_order_relaxed) != SIZE_MAX)
      return false;
    r.data = ByteView(at + kRecordHeader, caplen);
    r.wire_length = h[3];
    r.ts_ns = pcap_ts(h[0], h[1], false, nano_);
    r.link_type = link_type_;
    r.interface_id = 0;
    cur_ = next;
    ++records_;
    return true;
  }
  // The same for pcapng (uncompressed, a section of our byte order): an Enhanced Packet Block
  // whose checks next_pcapng would pass (read_block's on its lengths, its interface known, its
  // captured length within that interface's snapshot length and the block). Anything else, an
  // Interface Description or Section Header Block included, is next()'s. Inline in
  // CaptureReader::next_other, not next(): its registers would be saved for every pcap record.
  // ~150 instructions a record through next(), ~50 here.
  [[gnu::always_inline]] bool next_common_epb(Record& r) {
    if (!plain_pcapng_ || done_ || swapped_) return false;
    // Its checks at the end are next_common's, written out in each: one helper for both cost the
    // pcap path 4 instructions a record in the release build.
    static constexpr std::size_t kEpbHeader = 28;  // type, length, interface, time, two lengths
    const std::uint8_t* const at = cur_;
    const auto have = static_cast<std::size_t>(end_ - at);
    if (have < kEpbHeader + 4) return false;
    std::uint32_t h[7];  // type, length, interface, time high, time low, captured, wire length
    std::memcpy(h, at, sizeof h);
    const std::uint32_t length = h[1], caplen = h[5];
    if (h[0] != kEpbType || length % 4 != 0 || length > max_block_ || length > have ||
        length < kEpbHeader + 4 || h[2] >= interface_count_)
      return false;
    std::uint32_t trailer;
    std::memcpy(&trailer, at + length - 4, 4);
    const Interface& in = interfaces_[h[2]];
    if (trailer != length || caplen - 1 >= in.snapshot || length - kEpbHeader - 4 < caplen)
      return false;
    const std::uint8_t* const next = at + length;
    if (reinterpret_cast<std::uintptr_t>(next) >= release_at_ ||
        cut_at_->load(std::memory_order_relaxed) != SIZE_MAX)
      return false;
    r.data = ByteView(at + kEpbHeader, caplen);
    r.wire_length = h[6];
    r.ts_ns = pcapng_ts(in, std::uint64_t{h[3]} << 32 | h[4]);
    r.link_type = in.link_type;
    r.interface_id = h[2];
    cur_ = next;
    ++records_;
    return true;
  }
  const std::string& error() const { return error_; }
  std::uint64_t records() const { return records_; }
  // The first interface's link type (LINKTYPE_*) and snapshot length, as libpcap reports them.
  std::uint32_t link_type() const { return link_type_; }
  std::uint32_t snaplen() const { return snaplen_; }
  bool gzip() const { return gz_ != nullptr; }
  // Octets of the file consumed (compressed octets for gzip).
  std::uint64_t bytes_read() const;
  // The map's pages wholly before the records in use leave the process's memory, every
  // kReleaseStep octets read (gzip: compressed octets inflated). Unless held, a record is in use
  // until the next call of next(); held, until records_done() names it or a later one.
  void hold_records();
  // Every record handed out up to the one ending at `last_done` (a pointer into a record's
  // octets, or just past them) is no longer used. Ignored unless held; a pointer outside the
  // map is ignored.
  void records_done(const std::uint8_t* last_done);
  static constexpr std::size_t kReleaseStep = 4u << 20;

 private:
  enum class Format { pcap, pcapng };
  struct Interface {
    std::uint32_t link_type;  // LINKTYPE_*
    std::uint32_t snapshot;   // libpcap's adjusted snapshot length
    std::uint64_t tsresol;    // units per second
    std::uint64_t tsoffset;   // seconds
    std::uint64_t scale;      // the power-of-ten factor to or from nanoseconds
    enum : std::uint8_t { pass, up_dec, down_dec, binary } scale_type;
  };
  // A packet block's time `t`, in the interface's units, as libpcap hands it out: its
  // arithmetic, wrap-arounds included: seconds and the fraction in the interface's units, the
  // fraction scaled to nanoseconds, then time_t and int.
  static std::int64_t pcapng_ts(const Interface& in, std::uint64_t t) {
    // Nanoseconds or microseconds without an offset (nearly every file): what the arithmetic
    // below comes to, without its divisions, while the result fits (to_ns saturates).
    if (in.tsoffset == 0) {
      if (in.scale_type == Interface::pass && t <= INT64_MAX) return static_cast<std::int64_t>(t);
      if (in.scale_type == Interface::up_dec && in.tsresol == 1000000 && t <= INT64_MAX / 1000)
        return static_cast<std::int64_t>(t) * 1000;
    }
    std::uint64_t sec = 0, frac = 0;
    switch (in.scale_type) {
      case Interface::pass:
        sec = t / 1000000000u + in.tsoffset;
        frac = t % 1000000000u;
        break;
      case Interface::up_dec:
        if (in.tsresol == 1000000) {
          sec = t / 1000000u + in.tsoffset;
          frac = t % 1000000u * 1000u;
        } else {
          sec = t / in.tsresol + in.tsoffset;
          frac = t % in.tsresol * in.scale;
        }
        break;
      case Interface::down_dec:
        sec = t / in.tsresol + in.tsoffset;
        frac = t % in.tsresol / in.scale;
        break;
      case Interface::binary:
        sec = t / in.tsresol + in.tsoffset;
        frac = t % in.tsresol * 1000000000u / in.tsresol;
        break;
    }
    return to_ns(static_cast<std::int64_t>(sec), static_cast<int>(frac));
  }
  struct Inflater;

  MappedReader() = default;
  // The file's (section's) byte order as a template argument: no test of it per field.
  template <bool Swapped>
  Next next_pcap(Record& r);
  template <bool Swapped>
  Next next_pcapng(Record& r);
  Next pcapng_section(const std::uint8_t* body, std::size_t body_len);
  Next pcap_slow(Record& r, std::uint32_t caplen, std::uint32_t len, std::uint32_t sec,
                 std::uint32_t frac);
  bool open_pcap(std::string& why);
  bool open_pcapng(std::string& why);
  // One pcapng block at cur_ (whole, trailer checked): its type, length and body, or false with
  // error_ set (or at a clean end: end_of_file set).
  bool read_block(std::uint32_t& type, std::uint32_t& length, bool& end_of_file);
  bool add_interface(const std::uint8_t* body, std::size_t body_len);
  [[gnu::cold, gnu::noinline]] Next fail(std::string_view message);
  // fail() with libpcap's printf-style words; out of the record loops' way.
  [[gnu::cold, gnu::noinline]] Next failf(const char* fmt, ...)
      __attribute__((format(printf, 2, 3)));
  // At least `n` octets from cur_ in [cur_, end_), inflating more into the sliding buffer for
  // gzip; false when the file holds fewer (all it holds is then in [cur_, end_)).
  bool fill(std::size_t n) {
    if (static_cast<std::size_t>(end_ - cur_) >= n) return true;
    return gz_ != nullptr && refill(n);
  }
  bool refill(std::size_t n);
  // The offset of the first page past the end of a file cut short while mapped, or SIZE_MAX.
  std::size_t cut_at() const;
  std::optional<std::uint64_t> size_now() const;
  std::size_t still_valid() const;
  [[gnu::cold, gnu::noinline]] Next check_record(Record& r);
  std::string shrunk_message() const;
  [[gnu::cold, gnu::noinline]] void release_before(std::size_t done);
  std::uint32_t u32(const std::uint8_t* p) const;
  std::uint16_t u16(const std::uint8_t* p) const;

  Format format_ = Format::pcap;
  const std::uint8_t* map_ = nullptr;  // the file's octets (compressed ones for gzip)
  std::size_t map_size_ = 0;
  int guard_ = -1;  // the map's slot in the SIGBUS handler's table, or -1
  int fd_ = -1;     // a duplicate of the file's descriptor: its size, should it be cut short
  std::size_t released_ = 0;  // the map's pages before this offset were given back
  bool held_ = false;         // hold_records() was called
  // The address of cur_ at which next() runs release_behind() (uncompressed files; gzip's cur_ is
  // in the inflate buffer, and refill() releases its input)
  std::uintptr_t release_at_ = UINTPTR_MAX;
  const std::uint8_t* cur_ = nullptr;  // the next record (header included)
  const std::uint8_t* end_ = nullptr;  // the end of what is available from cur_
  std::unique_ptr<Inflater> gz_;       // gzip: the inflater and its sliding buffer
  bool swapped_ = false;               // the file's (pcapng: the section's) byte order is not ours
  bool done_ = false;
  bool plain_pcap_ = false;    // next_common's: classic pcap of our byte order, uncompressed
  bool plain_pcapng_ = false;  // next_common_epb's: pcapng, uncompressed (sections: swapped_)
  // The map's cut_at in the SIGBUS handler's table (mapped_reader.cpp, GuardedMap).
  const std::atomic<std::size_t>* cut_at_ = &kNeverCut;
  // Classic pcap.
  bool nano_ = false;
  std::uint32_t snapshot_ = 0;     // libpcap's adjusted snapshot length
  std::uint32_t max_snaplen_ = 0;  // libpcap's max_snaplen_for_dlt
  // pcapng.
  std::vector<Interface> interfaces_;  // of the current section
  std::uint32_t interface_count_ = 0;  // interfaces_.size(), without a division per record
  int first_dlt_ = 0;                  // libpcap's p->linktype: the file's first interface's
  std::uint32_t max_block_ = 0;        // libpcap's max_blocksize
  std::uint32_t link_type_ = 0;
  std::uint32_t snaplen_ = 0;
  std::uint64_t records_ = 0;
  std::string error_;
};

}  // namespace ddpscope::capture::detail
