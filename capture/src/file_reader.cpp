// SPDX-License-Identifier: GPL-2.0-or-later
#include "ddpscope/capture/file_reader.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <zlib.h>

#include "link_type.h"
#include "mapped_reader.h"

namespace ddpscope::capture {
namespace {

using detail::dlt_to_linktype;

constexpr std::int64_t ns_per_s = 1'000'000'000;
// stdio buffer of a capture file being read. libpcap reads every record with two fread()s; with
// the default buffer (st_blksize, 4 KiB) that is a read() system call per 4 KiB, about a third
// of the analyzer's time on a page-cached file. 256 KiB stays within a core's L2 cache.
constexpr std::size_t kReadBuffer = 256u << 10;

// pcapng timestamps are 64-bit: a hostile file's seconds may not fit in int64 nanoseconds.
// Such times saturate at the int64 range instead of overflowing.
std::int64_t to_ns(const struct timeval& ts, bool nano) {
  std::int64_t sec_ns = 0;
  std::int64_t ns = 0;
  const std::int64_t frac = static_cast<std::int64_t>(ts.tv_usec) * (nano ? 1 : 1000);
  if (__builtin_mul_overflow(static_cast<std::int64_t>(ts.tv_sec), ns_per_s, &sec_ns) ||
      __builtin_add_overflow(sec_ns, frac, &ns)) {
    return ts.tv_sec < 0 ? INT64_MIN : INT64_MAX;
  }
  return ns;
}

void fill(Frame& frame, std::uint64_t number, std::uint32_t link_type, const pcap_pkthdr* hdr,
          const u_char* data, bool nano) {
  frame.number = number;
  frame.ts_ns = to_ns(hdr->ts, nano);
  frame.link_type = link_type;
  frame.data = ByteView(data, hdr->caplen);
  frame.wire_length = hdr->len;
  frame.interface_id = 0;
}

// A FILE reading the decompressed octets of a gzip file, for libpcap (pcap_fopen_offline).
// fclose() (from pcap_close) closes the gzFile.
ssize_t gz_read(void* cookie, char* buf, size_t size) {
  const unsigned n = static_cast<unsigned>(std::min<size_t>(size, 1u << 30));
  const int got = gzread(static_cast<gzFile>(cookie), buf, n);
  if (got < 0) {
    errno = EIO;
    return -1;
  }
  return got;
}

int gz_close(void* cookie) {
  return gzclose(static_cast<gzFile>(cookie)) == Z_OK ? 0 : EOF;
}

std::FILE* open_gzip(const std::string& path, gzFile& gz, std::string& error) {
  gz = gzopen(path.c_str(), "rb");
  if (gz == nullptr) {
    error = path + ": " + std::strerror(errno ? errno : ENOMEM);
    return nullptr;
  }
  gzbuffer(gz, static_cast<unsigned>(kReadBuffer));
  cookie_io_functions_t io{};
  io.read = gz_read;
  io.close = gz_close;
  std::FILE* f = fopencookie(gz, "rb", io);
  if (f == nullptr) {
    error = path + ": " + std::strerror(errno);
    gzclose(gz);
    gz = nullptr;
  }
  return f;
}

}  // namespace

bool parse_reader_kind(std::string_view name, ReaderKind& kind) {
  if (name == "auto")
    kind = ReaderKind::automatic;
  else if (name == "mapped")
    kind = ReaderKind::mapped;
  else if (name == "libpcap")
    kind = ReaderKind::libpcap;
  else
    return false;
  return true;
}

// A compiled BPF program for one link type (null: it does not compile for that link type).
struct CaptureReader::Filter {
  std::uint32_t link_type = 0;
  std::unique_ptr<bpf_program, void (*)(bpf_program*)> program{nullptr, nullptr};
};

namespace {

// `expression` compiled for frames of `link_type`, or null with `error` set.
std::unique_ptr<bpf_program, void (*)(bpf_program*)> compile_filter(const std::string& expression,
                                                                    std::uint32_t link_type,
                                                                    std::uint32_t snaplen,
                                                                    std::string& error) {
  auto prog =
      std::unique_ptr<bpf_program, void (*)(bpf_program*)>(new bpf_program{}, [](bpf_program* p) {
        pcap_freecode(p);
        delete p;
      });
  pcap_t* dead = pcap_open_dead_with_tstamp_precision(detail::linktype_to_dlt(link_type),
                                                      snaplen ? static_cast<int>(snaplen) : 262144,
                                                      PCAP_TSTAMP_PRECISION_NANO);
  if (dead == nullptr) {
    error = "filter \"" + expression + "\": out of memory";
    return {nullptr, nullptr};
  }
  if (pcap_compile(dead, prog.get(), expression.c_str(), 1, PCAP_NETMASK_UNKNOWN) != 0) {
    error = "filter \"" + expression + "\": " + pcap_geterr(dead);
    pcap_close(dead);
    // prog's deleter: pcap_freecode() of a program never compiled frees nothing.
    return {nullptr, nullptr};
  }
  pcap_close(dead);
  return prog;
}

}  // namespace

std::unique_ptr<CaptureReader> CaptureReader::open(const std::string& path, std::string& error,
                                                   ReaderKind kind) {
  if (kind == ReaderKind::automatic) {
    const char* env = std::getenv("DDPSCOPE_READER");
    if (env != nullptr && *env != '\0' && !parse_reader_kind(env, kind)) {
      error = std::string("DDPSCOPE_READER=") + env + ": not auto, mapped or libpcap";
      return nullptr;
    }
  }
  std::unique_ptr<CaptureReader> r(new CaptureReader());
  r->path_ = path;
  if (kind != ReaderKind::libpcap && path != "-") {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      error = path + ": " + std::strerror(errno);
      return nullptr;
    }
    struct stat st {};
    std::string why = "not a regular file";
    if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
      r->file_size_ = static_cast<std::uint64_t>(st.st_size);
      r->mapped_ = detail::MappedReader::open(fd, r->file_size_, why);
    }
    ::close(fd);  // the mapping stays
    if (r->mapped_) {
      r->link_type_ = r->mapped_->link_type();
      r->snaplen_ = r->mapped_->snaplen();
      r->stay_valid_ = !r->mapped_->gzip();
      return r;
    }
    if (kind == ReaderKind::mapped) {
      // Said as libpcap would, when it can; the mapped reader's reason otherwise.
      std::string libpcap_error;
      if (r->open_libpcap(libpcap_error))
        error = path + ": not read by the mapped reader (" + why + "); libpcap reads it";
      else
        error = libpcap_error;
      return nullptr;
    }
  }
  if (!r->open_libpcap(error)) return nullptr;
  return r;
}

bool CaptureReader::open_libpcap(std::string& error) {
  const std::string& path = path_;
  char errbuf[PCAP_ERRBUF_SIZE] = {};
  pcap_t* p = nullptr;
  if (path == "-") {
    // libpcap's name for the standard input.
    p = pcap_open_offline_with_tstamp_precision(path.c_str(), PCAP_TSTAMP_PRECISION_NANO, errbuf);
  } else {
    // Opened here rather than by libpcap so that the FILE gets a large buffer (kReadBuffer).
    std::FILE* f = std::fopen(path.c_str(), "rb");
    if (f == nullptr) {
      error = path + ": " + std::strerror(errno);
      return false;
    }
    // Said plainly rather than as libpcap's "tried to read 4 file header bytes, only got 0".
    struct stat fst {};
    if (::fstat(::fileno(f), &fst) == 0 && S_ISREG(fst.st_mode) && fst.st_size < 24) {
      error = path + (fst.st_size == 0 ? std::string(": empty file")
                                       : ": " + std::to_string(fst.st_size) +
                                             " octets, too short for a pcap or pcapng header");
      std::fclose(f);
      return false;
    }
    unsigned char magic[2] = {};
    const bool gzip = std::fread(magic, 1, 2, f) == 2 && magic[0] == 0x1f && magic[1] == 0x8b;
    if (gzip) {
      // RFC 1952's magic: decompress through zlib under a FILE that libpcap reads.
      std::fclose(f);
      gzFile gz = nullptr;
      f = open_gzip(path, gz, error);
      if (f == nullptr) return false;
      gzip_ = gz;
    } else {
      std::rewind(f);
      read_buffer_.reset(new char[kReadBuffer]);
      std::setvbuf(f, read_buffer_.get(), _IOFBF, kReadBuffer);
      ::posix_fadvise(::fileno(f), 0, 0, POSIX_FADV_SEQUENTIAL);
    }
    p = pcap_fopen_offline_with_tstamp_precision(f, PCAP_TSTAMP_PRECISION_NANO, errbuf);
    if (p == nullptr) {
      std::fclose(f);  // on success pcap_close() closes it (and the gzFile)
      gzip_ = nullptr;
      if (gzip) {
        error = path + ": gzip-compressed, but not a capture inside: " + errbuf;
        return false;
      }
    }
  }
  if (p == nullptr) {
    error = path + ": " + errbuf;
    return false;
  }
  handle_ = p;
  link_type_ = dlt_to_linktype(pcap_datalink(p));
  snaplen_ = static_cast<std::uint32_t>(std::max(pcap_snapshot(p), 0));
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) file_size_ = static_cast<std::uint64_t>(st.st_size);
  return true;
}

// The mapped reader met a pcapng interface whose records libpcap rewrites: libpcap reads the
// file again from the start and skips the records already handed out.
bool CaptureReader::switch_to_libpcap() {
  const std::uint64_t skip = mapped_->records();
  retired_ = std::move(mapped_);
  stay_valid_ = false;
  std::string error;
  if (!open_libpcap(error)) {
    error_ = error;
    return false;
  }
  pcap_pkthdr* hdr = nullptr;
  const u_char* data = nullptr;
  for (std::uint64_t i = 0; i < skip; ++i) {
    if (pcap_next_ex(handle_, &hdr, &data) != 1) {
      error_ = pcap_geterr(handle_);
      if (error_.empty()) error_ = "libpcap ended before the records the mapped reader read";
      return false;
    }
  }
  return true;
}

std::string CaptureReader::link_type_name(std::uint32_t link_type) {
  const int dlt = detail::linktype_to_dlt(link_type);
  const char* name = pcap_datalink_val_to_name(dlt);
  const char* description = pcap_datalink_val_to_description(dlt);
  std::string out = name ? name : "unknown";
  // LINKTYPE_USER0..15 (147..162), private use: older libpcaps name none of them.
  if (!name && link_type >= 147 && link_type <= 162) out = "USER" + std::to_string(link_type - 147);
  out += " (";
  if (description) out += std::string(description) + ", ";
  return out + std::to_string(link_type) + ")";
}

bool CaptureReader::set_filter(const std::string& expression, std::string& error) {
  Filter f;
  f.link_type = link_type_;
  f.program = compile_filter(expression, link_type_, snaplen_, error);
  if (!f.program) return false;
  filter_expression_ = expression;
  filters_.clear();
  filters_.push_back(std::move(f));
  return true;
}

bool CaptureReader::filtered_out(std::uint32_t link_type, std::uint32_t caplen,
                                 std::uint32_t wire_length, const std::uint8_t* data) {
  const Filter* f = &filters_.front();
  if (f->link_type != link_type) {
    auto it = std::find_if(filters_.begin(), filters_.end(),
                           [&](const Filter& g) { return g.link_type == link_type; });
    if (it == filters_.end()) {
      std::string ignored;
      Filter g;
      g.link_type = link_type;
      g.program = compile_filter(filter_expression_, link_type, snaplen_, ignored);
      filters_.push_back(std::move(g));
      it = filters_.end() - 1;
    }
    f = &*it;
  }
  if (!f->program) return true;
  pcap_pkthdr hdr{};
  hdr.caplen = caplen;
  hdr.len = wire_length;
  return pcap_offline_filter(f->program.get(), &hdr, data) == 0;
}

CaptureReader::~CaptureReader() {
  if (handle_ != nullptr) pcap_close(handle_);
}

bool CaptureReader::next(Frame& frame) {
  // The common record of a mapped classic pcap file, without a filter: read inline.
  if (!done_ && mapped_ && filters_.empty() && mapped_->next_common(frame)) [[likely]] {
    frame.number = ++number_;
    return true;
  }
  return next_other(frame);
}

// Every other record, and the end: out of next()'s way (its frame and saved registers).
bool CaptureReader::next_other(Frame& frame) {
  if (done_) return false;
  if (mapped_) {
    if (filters_.empty() && mapped_->next_common_epb(frame)) [[likely]] {
      frame.number = ++number_;
      return true;
    }
    for (;;) {
      const auto got = mapped_->next(frame);
      if (got == detail::MappedReader::Next::record) {
        ++number_;
        if (!filters_.empty() &&
            filtered_out(frame.link_type, static_cast<std::uint32_t>(frame.data.size()),
                         frame.wire_length, frame.data.data())) {
          ++filtered_out_;
          continue;
        }
        frame.number = number_;
        return true;
      }
      if (got == detail::MappedReader::Next::use_libpcap) break;
      done_ = true;
      if (got == detail::MappedReader::Next::error) error_ = mapped_->error();
      return false;
    }
    if (!switch_to_libpcap()) {
      done_ = true;
      return false;
    }
  }
  pcap_pkthdr* hdr = nullptr;
  const u_char* data = nullptr;
  int rc = 0;
  while ((rc = pcap_next_ex(handle_, &hdr, &data)) == 1) {
    ++number_;
    if (!filters_.empty() && filtered_out(link_type_, hdr->caplen, hdr->len, data)) {
      ++filtered_out_;
      continue;
    }
    fill(frame, number_, link_type_, hdr, data, true);
    return true;
  }
  done_ = true;
  if (rc == PCAP_ERROR_BREAK) return false;  // clean end of file
  error_ = pcap_geterr(handle_);
  if (error_.empty()) error_ = "read error (pcap_next_ex returned " + std::to_string(rc) + ")";
  return false;
}

void CaptureReader::hold_frames() {
  if (mapped_) mapped_->hold_records();
}

void CaptureReader::frames_done(ByteView last_done) {
  // After a hand-over to libpcap the retired map keeps every page it still has.
  if (mapped_) mapped_->records_done(last_done.data() + last_done.size());
}

bool CaptureReader::gzip() const {
  return mapped_ ? mapped_->gzip() : gzip_ != nullptr;
}

std::uint64_t CaptureReader::bytes_read() const {
  if (done_) return file_size_;
  if (mapped_) return std::min(mapped_->bytes_read(), file_size_);
  if (gzip_ != nullptr) {
    const z_off_t at = gzoffset(static_cast<gzFile>(gzip_));
    return at < 0 ? 0 : std::min(static_cast<std::uint64_t>(at), file_size_);
  }
  std::FILE* f = pcap_file(handle_);
  if (f == nullptr) return 0;
  long pos = std::ftell(f);
  return pos < 0 ? 0 : std::min(static_cast<std::uint64_t>(pos), file_size_);
}

}  // namespace ddpscope::capture
