// SPDX-License-Identifier: GPL-2.0-or-later
#include "mapped_reader.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <climits>
#include <csignal>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <optional>

#include <zlib.h>

namespace ddpscope::capture::detail {
namespace {

// libpcap 1.10's constants (pcap-int.h, pcap-common.c, sf-pcapng.c), so that a file is refused
// where libpcap refuses it.
constexpr std::uint32_t kMaximumSnaplen = 262144;  // MAXIMUM_SNAPLEN
constexpr int kDltDbus = 231, kDltEbhscr = 279, kDltUsbpcap = 249;
constexpr std::uint32_t kPcapMagicMicro = 0xA1B2C3D4, kPcapMagicNano = 0xA1B23C4D;
constexpr std::uint32_t kBlockShb = 0x0A0D0D0A, kBlockIdb = 1, kBlockPb = 2, kBlockSpb = 3,
                        kBlockEpb = 6;
static_assert(kBlockEpb == MappedReader::kEpbType);
constexpr std::uint32_t kByteOrderMagic = 0x1A2B3C4D;
constexpr std::uint32_t kShbInsaneMax = 1024u * 1024u;
constexpr std::uint32_t kInitialMaxBlock = 16u * 1024u * 1024u;
constexpr std::size_t kPcapHeader = 24;  // kRecordHeader: MappedReader's
// The sliding buffer of a gzip file: records are handed out from it, so it grows to the largest
// record or block (bounded by the caps above, as libpcap's buffer is).
constexpr std::size_t kInflateBuffer = 1u << 20;

std::uint32_t max_snaplen_for_dlt(int dlt) {
  switch (dlt) {
    case kDltDbus:
      return 128u * 1024u * 1024u;
    case kDltEbhscr:
      return 8u * 1024u * 1024u;
    case kDltUsbpcap:
      return 1024u * 1024u;
    default:
      return kMaximumSnaplen;
  }
}

std::uint32_t adjust_snapshot(int dlt, std::uint32_t snaplen) {
  return snaplen == 0 || snaplen > INT_MAX ? max_snaplen_for_dlt(dlt) : snaplen;
}

std::uint32_t max_block_for_snaplen(std::uint32_t max_snaplen) {
  return 8 + 20 + max_snaplen + 131072 + 4;
}

// The link types whose LINKTYPE_* value libpcap's DLT_* round trip (and CaptureReader's
// dlt_to_linktype) leave as they are on Linux: 0-10, raw IP (101), and libpcap's "matching"
// range 104-289 but ATM_CLIP (106). Others are read by libpcap.
bool same_through_libpcap(std::uint32_t lt) {
  return lt <= 10 || lt == 101 || (lt >= 104 && lt <= 289 && lt != 106);
}

// libpcap's DLT for such a link type: itself, but raw IP.
int dlt_of(std::uint32_t lt) {
  return lt == 101 ? 12 : static_cast<int>(lt);
}

// Link types whose pseudo-header libpcap rewrites in the octets it hands out: byte-swapped
// (PFLOG, LINUX_SLL, LINUX_SLL2, USB_LINUX, USB_LINUX_MMAPPED, NFLOG) or with a length fixed up
// (USB_LINUX_MMAPPED, any byte order). Records are handed out in place here, so libpcap reads
// those files.
bool rewritten_by_libpcap(std::uint32_t lt, bool swapped) {
  if (lt == 220) return true;
  return swapped && (lt == 117 || lt == 113 || lt == 276 || lt == 189 || lt == 239);
}

// to_ns and pcap_ts: mapped_reader.h (next_common's too).

std::string format(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
std::string format(const char* fmt, ...) {
  char buf[256];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  return buf;
}

template <bool Swapped>
std::uint32_t ld32(const std::uint8_t* p) {
  std::uint32_t v;
  std::memcpy(&v, p, 4);
  return Swapped ? __builtin_bswap32(v) : v;
}

template <bool Swapped>
std::uint16_t ld16(const std::uint8_t* p) {
  std::uint16_t v;
  std::memcpy(&v, p, 2);
  return Swapped ? __builtin_bswap16(v) : v;
}

// ---- a file cut shorter while it is mapped ------------------------------------------------
// A read of a mapped page past the end of a file that another process truncated raises SIGBUS,
// which would end the process. While a reader's map is live it is in this table; the handler
// turns the faulting page and the rest of that map into zero pages (the read is retried and
// sees zeros) and marks the map cut. The reader checks the mark after each record and stops
// at the file's new end with an error that says so (capture.truncated-file), not a crash.
// The handler may neither allocate nor lock: a fixed table of atomics. A SIGBUS that is not
// about one of these maps goes to the handler that was there before (or the default action).
struct GuardedMap {
  std::atomic<std::uintptr_t> start{0};  // 0: the slot is free
  std::atomic<std::size_t> size{0};
  std::atomic<std::size_t> cut_at{SIZE_MAX};  // offset of the first page that faulted
};
constexpr int kGuardedMaps = 64;
GuardedMap g_guarded[kGuardedMaps];
struct sigaction g_previous_sigbus;
std::uintptr_t g_page_size = 4096;

void pass_on_sigbus(int sig, siginfo_t* info, void* context) {
  const struct sigaction& prev = g_previous_sigbus;
  if ((prev.sa_flags & SA_SIGINFO) != 0 && prev.sa_sigaction != nullptr) {
    prev.sa_sigaction(sig, info, context);
    return;
  }
  if (prev.sa_handler != SIG_DFL && prev.sa_handler != SIG_IGN) {
    prev.sa_handler(sig);
    return;
  }
  // As if this handler were not there: the default action, which the faulting read taken
  // again (or a SIGBUS sent by a process, raised again) brings about.
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  sigaction(SIGBUS, &dfl, nullptr);
  if (info == nullptr || info->si_code <= 0) raise(sig);
}

void on_sigbus(int sig, siginfo_t* info, void* context) {
  const auto addr = reinterpret_cast<std::uintptr_t>(info != nullptr ? info->si_addr : nullptr);
  for (GuardedMap& m : g_guarded) {
    const std::uintptr_t start = m.start.load(std::memory_order_acquire);
    const std::size_t size = m.size.load(std::memory_order_relaxed);
    if (start <= 1 || addr < start || addr - start >= size) continue;
    const std::uintptr_t page = addr & ~(g_page_size - 1);
    void* zeros = mmap(reinterpret_cast<void*>(page), start + size - page, PROT_READ,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
    if (zeros == MAP_FAILED) break;
    std::size_t at = m.cut_at.load(std::memory_order_relaxed);
    while (page - start < at &&
           !m.cut_at.compare_exchange_weak(at, page - start, std::memory_order_release)) {
    }
    return;
  }
  pass_on_sigbus(sig, info, context);
}

// A slot for a map of `size` octets at `start`, or -1 (no slot free: unguarded, as before).
int guard_map(const void* start, std::size_t size) {
  static std::once_flag installed;
  std::call_once(installed, [] {
    const long page = sysconf(_SC_PAGESIZE);
    if (page > 0) g_page_size = static_cast<std::uintptr_t>(page);
    struct sigaction sa {};
    sa.sa_sigaction = on_sigbus;
    sa.sa_flags = SA_SIGINFO | SA_NODEFER;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGBUS, &sa, &g_previous_sigbus);
  });
  for (int i = 0; i < kGuardedMaps; ++i) {
    std::uintptr_t free_slot = 0;
    // Claimed with a placeholder (1, which the handler skips), described, then published.
    if (!g_guarded[i].start.compare_exchange_strong(free_slot, 1, std::memory_order_acq_rel))
      continue;
    g_guarded[i].size.store(size, std::memory_order_relaxed);
    g_guarded[i].cut_at.store(SIZE_MAX, std::memory_order_relaxed);
    g_guarded[i].start.store(reinterpret_cast<std::uintptr_t>(start), std::memory_order_release);
    return i;
  }
  return -1;
}

void unguard_map(int slot) {
  if (slot >= 0) g_guarded[slot].start.store(0, std::memory_order_release);
}

}  // namespace

// zlib's streaming inflate of the mapped gzip file into `buf`; [cur_, end_) of the reader lies
// in it.
struct MappedReader::Inflater {
  z_stream strm{};
  std::vector<std::uint8_t> buf;
  bool finished = false;  // the compressed input is used up, or ended in damage
  std::string damage;     // zlib's error, when the compressed data is not valid
  ~Inflater() { inflateEnd(&strm); }
};

std::uint32_t MappedReader::u32(const std::uint8_t* p) const {
  std::uint32_t v;
  std::memcpy(&v, p, 4);
  return swapped_ ? __builtin_bswap32(v) : v;
}

std::uint16_t MappedReader::u16(const std::uint8_t* p) const {
  std::uint16_t v;
  std::memcpy(&v, p, 2);
  return swapped_ ? __builtin_bswap16(v) : v;
}

std::unique_ptr<MappedReader> MappedReader::open(int fd, std::uint64_t size, std::string& why) {
  if (size < kPcapHeader || size > SIZE_MAX / 2) {
    why = "size";
    return nullptr;
  }
  void* m = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  if (m == MAP_FAILED) {
    why = std::string("mmap: ") + std::strerror(errno);
    return nullptr;
  }
  ::madvise(m, size, MADV_SEQUENTIAL);
  std::unique_ptr<MappedReader> r(new MappedReader());
  r->map_ = static_cast<const std::uint8_t*>(m);
  r->map_size_ = static_cast<std::size_t>(size);
  r->guard_ = guard_map(m, r->map_size_);
  r->release_at_ = reinterpret_cast<std::uintptr_t>(r->map_) + kReleaseStep;
  r->fd_ = ::fcntl(fd, F_DUPFD_CLOEXEC, 0);  // for the file's size, should it be cut short
  r->cur_ = r->map_;
  r->end_ = r->map_ + r->map_size_;
  if (r->map_[0] == 0x1f && r->map_[1] == 0x8b) {
    // RFC 1952: inflated as it is read, never whole.
    r->gz_ = std::make_unique<Inflater>();
    r->release_at_ = UINTPTR_MAX;  // refill() releases the compressed input
    z_stream& s = r->gz_->strm;
    if (inflateInit2(&s, 15 + 16) != Z_OK) {
      why = "zlib";
      return nullptr;
    }
    s.next_in = const_cast<Bytef*>(r->map_);
    s.avail_in = 0;  // handed out in pieces: avail_in is 32 bits
    r->gz_->buf.resize(kInflateBuffer);
    r->cur_ = r->end_ = r->gz_->buf.data();
    if (!r->fill(kPcapHeader)) {
      why = "gzip: too short";
      return nullptr;
    }
  }
  std::uint32_t magic;
  std::memcpy(&magic, r->cur_, 4);
  const bool ok = magic == kBlockShb ? r->open_pcapng(why) : r->open_pcap(why);
  if (!ok) return nullptr;
  r->plain_pcap_ = r->format_ == Format::pcap && !r->swapped_ && !r->gz_;
  r->plain_pcapng_ = r->format_ == Format::pcapng && !r->gz_;
  if (r->guard_ >= 0) r->cut_at_ = &g_guarded[r->guard_].cut_at;
  return r;
}

MappedReader::~MappedReader() {
  unguard_map(guard_);
  if (map_ != nullptr) ::munmap(const_cast<std::uint8_t*>(map_), map_size_);
  if (fd_ >= 0) ::close(fd_);
}

std::uint64_t MappedReader::bytes_read() const {
  if (gz_) return std::min<std::uint64_t>(gz_->strm.total_in, map_size_);
  return static_cast<std::uint64_t>(cur_ - map_);
}

bool MappedReader::refill(std::size_t n) {
  // The compressed input inflated is done with (zlib keeps its window in its own memory).
  if (gz_->strm.total_in >= released_ + kReleaseStep) release_before(gz_->strm.total_in);
  Inflater& g = *gz_;
  // Slide what is left to the front, then inflate behind it.
  const std::size_t have = static_cast<std::size_t>(end_ - cur_);
  if (n > g.buf.size()) {
    std::vector<std::uint8_t> bigger(std::max(n, g.buf.size() * 2));
    std::memcpy(bigger.data(), cur_, have);
    g.buf.swap(bigger);
  } else if (cur_ != g.buf.data()) {
    std::memmove(g.buf.data(), cur_, have);
  }
  cur_ = g.buf.data();
  end_ = cur_ + have;
  z_stream& s = g.strm;
  const std::uint8_t* in_end = map_ + map_size_;
  while (static_cast<std::size_t>(end_ - cur_) < n && !g.finished) {
    if (s.avail_in == 0) {
      const std::size_t left = static_cast<std::size_t>(in_end - s.next_in);
      if (left == 0) {
        g.finished = true;  // cut short: what was inflated is the file, as gzread has it
        break;
      }
      s.avail_in = static_cast<uInt>(std::min<std::size_t>(left, 1u << 30));
    }
    s.next_out = const_cast<Bytef*>(end_);
    s.avail_out = static_cast<uInt>(g.buf.data() + g.buf.size() - end_);
    const Bytef* in_before = s.next_in;
    const int rc = inflate(&s, Z_NO_FLUSH);
    const bool progress = s.next_out != end_ || s.next_in != in_before;
    end_ = s.next_out;
    if (rc == Z_STREAM_END) {
      // Another gzip member may follow (as gzread reads them); anything else is ignored.
      const auto left = static_cast<std::size_t>(in_end - s.next_in);
      if (left >= 2 && s.next_in[0] == 0x1f && s.next_in[1] == 0x8b) {
        inflateReset(&s);
      } else {
        g.finished = true;
      }
    } else if (rc == Z_BUF_ERROR && !progress) {
      g.finished = true;  // cannot happen with input and room left; never loop on it
    } else if (rc != Z_OK && rc != Z_BUF_ERROR) {
      g.finished = true;
      g.damage = s.msg ? s.msg : "zlib error " + std::to_string(rc);
    }
  }
  return static_cast<std::size_t>(end_ - cur_) >= n;
}

std::size_t MappedReader::cut_at() const {
  return guard_ < 0 ? SIZE_MAX : g_guarded[guard_].cut_at.load(std::memory_order_acquire);
}

// How much of the map is still the file's: less than the map when the file was cut short
// (a page past its new end faulted, or its size says so).
// The file's size now (it may have been cut short since it was mapped), or nothing.
std::optional<std::uint64_t> MappedReader::size_now() const {
  struct stat st;
  if (fd_ < 0 || fstat(fd_, &st) != 0) return std::nullopt;
  return static_cast<std::uint64_t>(st.st_size);
}

std::size_t MappedReader::still_valid() const {
  std::size_t valid = std::min(cut_at(), map_size_);
  if (const auto now = size_now(); now && *now < valid) valid = static_cast<std::size_t>(*now);
  return valid;
}

// A record read after the map was cut, or an empty one (what the zeros past the end of a cut
// file, in its last page, read as): it stands if the file still holds it; else reading stops.
MappedReader::Next MappedReader::check_record(Record& r) {
  const std::size_t valid = still_valid();
  if (valid == map_size_) return Next::record;
  if (!gz_ && r.data.data() + r.data.size() <= map_ + valid) return Next::record;
  --records_;
  return fail("");
}

// The pages of the file wholly before `done` leave the process (the kernel keeps them in its
// page cache): a mapped file read through would otherwise count whole in the process's resident
// memory (2.2 GB peak RSS on a 2.2 GB capture, where the 64 MiB target is for everything). A
// page given back that is read again (a frame still in use after all, which no caller should
// have) is read again from the file: a private map never written holds the file's octets.
void MappedReader::release_before(std::size_t done) {
  const std::size_t upto = std::min(done, map_size_) & ~static_cast<std::size_t>(g_page_size - 1);
  if (upto > released_) {
    ::madvise(const_cast<std::uint8_t*>(map_) + released_, upto - released_, MADV_DONTNEED);
    released_ = upto;
  }
}

void MappedReader::hold_records() {
  held_ = true;
  release_at_ = UINTPTR_MAX;  // records_done() releases
}

void MappedReader::records_done(const std::uint8_t* last_done) {
  if (gz_ || !held_ || last_done < map_ || last_done > map_ + map_size_) return;
  const auto done = static_cast<std::size_t>(last_done - map_);
  if (done >= released_ + kReleaseStep) release_before(done);
}

std::string MappedReader::shrunk_message() const {
  const auto size = size_now();
  const std::string now = size ? std::to_string(*size) : "fewer";
  return "the capture file was cut short while it was read (" + now + " octets now, " +
         std::to_string(map_size_) +
         " when opened): the records past its new end are not read (a record that crossed it "
         "reads zeros past it)";
}

MappedReader::Next MappedReader::failf(const char* fmt, ...) {
  char buf[256];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  return fail(buf);
}

MappedReader::Next MappedReader::fail(std::string_view message) {
  done_ = true;
  // A file cut short while mapped reads as zeros from there on: that is the cause of whatever
  // damage follows. Damaged compressed data is the cause of whatever the octets inflated so far
  // lack.
  if (map_ != nullptr && still_valid() < map_size_)
    error_ = shrunk_message();
  else if (gz_ && !gz_->damage.empty())
    error_ = "error reading dump file: gzip data invalid (" + gz_->damage + ")";
  else
    error_ = std::string(message);  // may be error_ itself
  return Next::error;
}

// ---- classic pcap -----------------------------------------------------------------------

bool MappedReader::open_pcap(std::string& why) {
  std::uint32_t magic;
  std::memcpy(&magic, cur_, 4);
  if (magic != kPcapMagicMicro && magic != kPcapMagicNano) {
    magic = __builtin_bswap32(magic);
    if (magic != kPcapMagicMicro && magic != kPcapMagicNano) {
      why = "not a pcap or pcapng file this reader knows";  // libpcap's words follow
      return false;
    }
    swapped_ = true;
  }
  nano_ = magic == kPcapMagicNano;
  // Versions other than 2.4 may have caplen and len the other way round (libpcap guesses);
  // libpcap reads them, or says why not.
  if (u16(cur_ + 4) != 2 || u16(cur_ + 6) != 4) {
    why = "pcap version";
    return false;
  }
  const std::uint32_t lt = u32(cur_ + 20) & 0x03FFFFFF;  // LT_LINKTYPE: the FCS bits above
  if (!same_through_libpcap(lt) || rewritten_by_libpcap(lt, swapped_)) {
    why = "link type";
    return false;
  }
  format_ = Format::pcap;
  link_type_ = lt;
  max_snaplen_ = max_snaplen_for_dlt(dlt_of(lt));
  snapshot_ = adjust_snapshot(dlt_of(lt), u32(cur_ + 16));
  snaplen_ = snapshot_;
  cur_ += kPcapHeader;
  return true;
}

MappedReader::Next MappedReader::next(Record& r) {
  Next got;
  if (format_ == Format::pcap) {
    got = swapped_ ? next_pcap<true>(r) : next_pcap<false>(r);
  } else {
    do {
      got = swapped_ ? next_pcapng<true>(r) : next_pcapng<false>(r);
    } while (got == Next::again);
  }
  // Not held (hold_records): the record handed out before this one is done.
  if (__builtin_expect(reinterpret_cast<std::uintptr_t>(cur_) >= release_at_, 0)) {
    const std::uint8_t* in_use =
        got == Next::record && r.data.data() >= map_ ? r.data.data() : cur_;
    release_before(static_cast<std::size_t>(std::min(in_use, cur_) - map_));
    release_at_ = reinterpret_cast<std::uintptr_t>(cur_) + kReleaseStep;
  }
  if (__builtin_expect(got == Next::record &&
                           (r.data.empty() ||
                            (guard_ >= 0 &&
                             g_guarded[guard_].cut_at.load(std::memory_order_relaxed) != SIZE_MAX)),
                       0))
    return check_record(r);
  return got;
}

// The common record: within the snapshot length and wholly in the file.
template <bool Swapped>
MappedReader::Next MappedReader::next_pcap(Record& r) {
  if (__builtin_expect(!fill(kRecordHeader), 0)) {
    const auto have = static_cast<std::size_t>(end_ - cur_);
    if (done_) return error_.empty() ? Next::end : Next::error;
    if (have == 0) {
      if (gz_ && !gz_->damage.empty()) return fail("");
      done_ = true;
      return Next::end;
    }
    return failf("truncated dump file; tried to read %zu header bytes, only got %zu", kRecordHeader,
                 have);
  }
  const std::uint32_t sec = ld32<Swapped>(cur_), frac = ld32<Swapped>(cur_ + 4);
  const std::uint32_t caplen = ld32<Swapped>(cur_ + 8), len = ld32<Swapped>(cur_ + 12);
  if (__builtin_expect(caplen > snapshot_ || !fill(kRecordHeader + caplen), 0))
    return pcap_slow(r, caplen, len, sec, frac);
  r.data = ByteView(cur_ + kRecordHeader, caplen);
  r.wire_length = len;
  r.ts_ns = pcap_ts(sec, frac, Swapped, nano_);
  r.link_type = link_type_;
  r.interface_id = 0;
  cur_ += kRecordHeader + caplen;
  ++records_;
  return Next::record;
}

// A record past the snapshot length or cut short: libpcap's sf-pcap.c, case by case.
MappedReader::Next MappedReader::pcap_slow(Record& r, std::uint32_t caplen, std::uint32_t len,
                                           std::uint32_t sec, std::uint32_t frac) {
  if (done_) return error_.empty() ? Next::end : Next::error;
  if (caplen > max_snaplen_) {
    if (caplen > snapshot_)
      return failf("invalid packet capture length %u, bigger than snaplen of %d", caplen,
                   static_cast<int>(snapshot_));
    return failf("invalid packet capture length %u, bigger than maximum of %u", caplen,
                 max_snaplen_);
  }
  fill(kRecordHeader + caplen);
  const auto have = static_cast<std::size_t>(end_ - cur_) - kRecordHeader;
  std::uint32_t handed = caplen;
  if (caplen > snapshot_) {
    // libpcap reads the first snapshot octets, discards the rest, and says the record was cut
    // to the snapshot length (a Solaris 2.3 bufmod bug, or a damaged file).
    if (have < snapshot_)
      return failf("truncated dump file; tried to read %d captured bytes, only got %zu",
                   static_cast<int>(snapshot_), have);
    handed = snapshot_;
  }
  if (have < caplen)
    return fail(
        format("truncated dump file; tried to read %u captured bytes, only got %zu", caplen, have));
  r.data = ByteView(cur_ + kRecordHeader, handed);
  r.wire_length = len;
  r.ts_ns = pcap_ts(sec, frac, swapped_, nano_);
  r.link_type = link_type_;
  r.interface_id = 0;
  cur_ += kRecordHeader + caplen;
  ++records_;
  return Next::record;
}

// ---- pcapng -----------------------------------------------------------------------------

bool MappedReader::read_block(std::uint32_t& type, std::uint32_t& length, bool& end_of_file) {
  end_of_file = false;
  if (!fill(8)) {
    const auto have = static_cast<std::size_t>(end_ - cur_);
    if (have == 0 && (!gz_ || gz_->damage.empty())) {
      end_of_file = true;
      return false;
    }
    failf("truncated pcapng dump file; tried to read %zu bytes, only got %zu", std::size_t{8},
          have);
    return false;
  }
  type = u32(cur_);
  length = u32(cur_ + 4);
  if (length < 12) {
    failf("block in pcapng dump file has a length of %u < %zu", length, std::size_t{12});
    return false;
  }
  if (length % 4 != 0) {
    fail(
        format("block in pcapng dump file has a length of %u that is not a multiple of 4", length));
    return false;
  }
  if (length > max_block_) {
    failf("pcapng block size %u > maximum %u", length, max_block_);
    return false;
  }
  if (!fill(length)) {
    failf("truncated pcapng dump file; tried to read %zu bytes, only got %zu",
          std::size_t{length} - 8, static_cast<std::size_t>(end_ - cur_) - 8);
    return false;
  }
  if (u32(cur_ + length - 4) != length) {
    fail("block total length in header and trailer don't match");
    return false;
  }
  return true;
}

// An Interface Description Block's body (libpcap's add_interface and process_idb_options); false
// with error_ set when libpcap refuses it.
bool MappedReader::add_interface(const std::uint8_t* body, std::size_t body_len) {
  if (body_len < 8) {
    error_ = format("block of type %u in pcapng dump file is too short", kBlockIdb);
    return false;
  }
  Interface i{};
  i.link_type = u16(body);
  i.snapshot = adjust_snapshot(dlt_of(i.link_type), u32(body + 4));
  std::uint64_t tsresol = 1000000;
  bool binary = false, saw_tsresol = false, saw_tsoffset = false;
  const std::uint8_t* p = body + 8;
  std::size_t left = body_len - 8;
  while (left != 0) {
    if (left < 4) {
      error_ = format("block of type %u in pcapng dump file is too short", kBlockIdb);
      return false;
    }
    const std::uint16_t code = u16(p), olen = u16(p + 2);
    p += 4;
    left -= 4;
    const std::size_t padded = (std::size_t{olen} + 3) / 4 * 4;
    if (left < padded) {
      error_ = format("block of type %u in pcapng dump file is too short", kBlockIdb);
      return false;
    }
    const std::uint8_t* value = p;
    p += padded;
    left -= padded;
    if (code == 0) {  // opt_endofopt
      if (olen != 0) {
        error_ =
            format("Interface Description Block has opt_endofopt option with length %u != 0", olen);
        return false;
      }
      break;
    }
    if (code == 9) {  // if_tsresol
      if (olen != 1) {
        error_ =
            format("Interface Description Block has if_tsresol option with length %u != 1", olen);
        return false;
      }
      if (saw_tsresol) {
        error_ = "Interface Description Block has more than one if_tsresol option";
        return false;
      }
      saw_tsresol = true;
      const std::uint8_t v = value[0];
      if (v & 0x80) {
        const unsigned shift = v & 0x7F;
        if (shift > 63) {
          error_ = format(
              "Interface Description Block if_tsresol option resolution 2^-%u is too high", shift);
          return false;
        }
        binary = true;
        tsresol = std::uint64_t{1} << shift;
      } else {
        if (v > 19) {
          error_ = format(
              "Interface Description Block if_tsresol option resolution 10^-%u is too high", v);
          return false;
        }
        binary = false;
        tsresol = 1;
        for (unsigned k = 0; k < v; ++k)
          tsresol *= 10;
      }
    } else if (code == 14) {  // if_tsoffset
      if (olen != 8) {
        error_ =
            format("Interface Description Block has if_tsoffset option with length %u != 8", olen);
        return false;
      }
      if (saw_tsoffset) {
        error_ = "Interface Description Block has more than one if_tsoffset option";
        return false;
      }
      saw_tsoffset = true;
      std::uint64_t off;
      std::memcpy(&off, value, 8);
      i.tsoffset = swapped_ ? __builtin_bswap64(off) : off;
    }
  }
  constexpr std::uint64_t kUser = 1000000000;  // nanoseconds, as CaptureReader asks libpcap
  i.tsresol = tsresol;
  if (tsresol == kUser) {
    i.scale_type = Interface::pass;
  } else if (binary) {
    i.scale_type = Interface::binary;
  } else if (tsresol > kUser) {
    i.scale_type = Interface::down_dec;
    i.scale = tsresol / kUser;
  } else {
    i.scale_type = Interface::up_dec;
    i.scale = kUser / tsresol;
  }
  interfaces_.push_back(i);
  interface_count_ = static_cast<std::uint32_t>(interfaces_.size());
  return true;
}

bool MappedReader::open_pcapng(std::string& why) {
  // libpcap's pcap_ng_check_header: the Section Header Block, then blocks up to the first
  // Interface Description Block. Anything it refuses here is left to it (its words).
  if (!fill(28)) {
    why = "short";
    return false;
  }
  std::uint32_t bom;
  std::memcpy(&bom, cur_ + 8, 4);
  if (bom != kByteOrderMagic) {
    if (__builtin_bswap32(bom) != kByteOrderMagic) {
      why = "byte order magic";
      return false;
    }
    swapped_ = true;
  }
  const std::uint32_t shb_len = u32(cur_ + 4);
  if (shb_len < 28 || shb_len > kShbInsaneMax || !fill(shb_len)) {
    why = "section header length";
    return false;
  }
  const std::uint16_t major = u16(cur_ + 12), minor = u16(cur_ + 14);
  if (major != 1 || (minor != 0 && minor != 2)) {
    why = "pcapng version";
    return false;
  }
  cur_ += shb_len;  // libpcap does not look at this block's trailer
  format_ = Format::pcapng;
  max_block_ = kInitialMaxBlock;
  for (;;) {
    std::uint32_t type = 0, length = 0;
    bool eof = false;
    if (!read_block(type, length, eof)) {
      why = eof ? "no interface" : error_;
      return false;
    }
    if (type == kBlockEpb || type == kBlockSpb || type == kBlockPb) {
      why = "a packet before any interface";
      return false;
    }
    if (type == kBlockIdb) {
      if (!add_interface(cur_ + 8, length - 12)) {
        why = error_;
        return false;
      }
      const Interface& first = interfaces_.front();
      if (!same_through_libpcap(first.link_type) ||
          rewritten_by_libpcap(first.link_type, swapped_)) {
        why = "link type";
        return false;
      }
      first_dlt_ = dlt_of(first.link_type);
      link_type_ = first.link_type;
      snaplen_ = first.snapshot;
      max_block_ = std::max(max_block_, max_block_for_snaplen(max_snaplen_for_dlt(first_dlt_)));
      cur_ += length;
      return true;
    }
    cur_ += length;  // any other block before the first interface: skipped, as libpcap does
  }
}

// A Section Header Block met while reading (its byte order already taken): libpcap's checks.
MappedReader::Next MappedReader::pcapng_section(const std::uint8_t* body, std::size_t body_len) {
  if (body_len < 16) return failf("block of type %u in pcapng dump file is too short", kBlockShb);
  if (u32(body) != kByteOrderMagic)
    return fail("the file has a section with a bad byte order magic field");
  const std::uint16_t major = u16(body + 4);
  if (major != 1) return failf("unknown pcapng savefile major version number %u", major);
  interfaces_.clear();  // each section describes its own interfaces
  interface_count_ = 0;
  return Next::record;  // go on
}

template <bool Swapped>
MappedReader::Next MappedReader::next_pcapng(Record& r) {
  if (done_) return error_.empty() ? Next::end : Next::error;
  for (;;) {
    // The common block, checked as read_block() does, in one pass; anything odd goes through
    // read_block() for libpcap's words.
    std::uint32_t type = 0, length = 0;
    if (__builtin_expect(fill(12), 1)) {
      type = ld32<Swapped>(cur_);
      if (type == kBlockShb) {
        // A new section, of its own byte order (the block type reads the same in both): taken
        // from its magic before its length is read.
        std::uint32_t bom;
        std::memcpy(&bom, cur_ + 8, 4);
        if (bom == kByteOrderMagic)
          swapped_ = false;
        else if (__builtin_bswap32(bom) == kByteOrderMagic)
          swapped_ = true;
        std::uint32_t shb_type = 0, shb_length = 0;
        bool eof = false;
        if (!read_block(shb_type, shb_length, eof)) return Next::error;
        if (pcapng_section(cur_ + 8, shb_length - 12) == Next::error) return Next::error;
        cur_ += shb_length;
        if (swapped_ != Swapped) return Next::again;
        continue;
      }
      length = ld32<Swapped>(cur_ + 4);
    }
    if (__builtin_expect(length < 12 || length % 4 != 0 || length > max_block_ || !fill(length) ||
                             ld32<Swapped>(cur_ + length - 4) != length,
                         0)) {
      // Fresh variables: the fast path's stay in registers.
      std::uint32_t slow_type = 0, slow_length = 0;
      bool eof = false;
      if (!read_block(slow_type, slow_length, eof)) {
        if (!eof) return Next::error;
        done_ = true;
        return Next::end;
      }
      type = slow_type;
      length = slow_length;
    }
    const std::uint8_t* body = cur_ + 8;
    const std::size_t body_len = length - 12;
    std::uint32_t iface = 0, caplen = 0, len = 0;
    std::uint64_t t = 0;
    std::size_t fixed = 0;
    if (__builtin_expect(type == kBlockEpb, 1)) {
      if (body_len < 20) return failf("block of type %u in pcapng dump file is too short", type);
      iface = ld32<Swapped>(body);
      t = std::uint64_t{ld32<Swapped>(body + 4)} << 32 | ld32<Swapped>(body + 8);
      caplen = ld32<Swapped>(body + 12);
      len = ld32<Swapped>(body + 16);
      fixed = 20;
    } else if (type == kBlockSpb) {
      if (body_len < 4) return failf("block of type %u in pcapng dump file is too short", type);
      len = ld32<Swapped>(body);
      caplen = len;
      // No captured length: the packet's, up to the snapshot length (libpcap's, the file's
      // first interface's; here the section's first interface's, the SPB's).
      if (!interfaces_.empty()) caplen = std::min(caplen, interfaces_.front().snapshot);
      fixed = 4;
    } else if (type == kBlockPb) {
      if (body_len < 20) return failf("block of type %u in pcapng dump file is too short", type);
      iface = ld16<Swapped>(body);
      t = std::uint64_t{ld32<Swapped>(body + 4)} << 32 | ld32<Swapped>(body + 8);
      caplen = ld32<Swapped>(body + 12);
      len = ld32<Swapped>(body + 16);
      fixed = 20;
    } else if (type == kBlockIdb) {
      const std::size_t before = interfaces_.size();
      if (!add_interface(body, body_len)) return fail(error_);
      const Interface& added = interfaces_[before];
      if (!same_through_libpcap(added.link_type) ||
          rewritten_by_libpcap(added.link_type, swapped_)) {
        interfaces_.pop_back();
        interface_count_ = static_cast<std::uint32_t>(interfaces_.size());
        return Next::use_libpcap;  // cur_ stays: libpcap reads on from the records handed out
      }
      cur_ += length;
      continue;
    } else {
      cur_ += length;  // a block this reader has no use for
      continue;
    }
    if (__builtin_expect(iface >= interface_count_, 0))
      return fail(
          format("a packet arrived on interface %u, but there's no Interface Description "
                 "Block for that interface",
                 iface));
    const Interface& in = interfaces_[iface];
    if (__builtin_expect(caplen > in.snapshot, 0))
      return failf("invalid packet capture length %u, bigger than snaplen of %d", caplen,
                   static_cast<int>(in.snapshot));
    if (__builtin_expect(body_len - fixed < caplen, 0))
      return failf("block of type %u in pcapng dump file is too short", type);
    r.data = ByteView(body + fixed, caplen);
    r.wire_length = len;
    r.ts_ns = pcapng_ts(in, t);
    r.link_type = in.link_type;
    r.interface_id = iface;
    cur_ += length;
    ++records_;
    return Next::record;
  }
}

}  // namespace ddpscope::capture::detail
