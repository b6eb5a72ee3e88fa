// SPDX-License-Identifier: GPL-2.0-or-later
// Reading capture files (pcap and pcapng). Writing is file_writer.h, live capture
// live_capture.h, feeding a file to the analysis feed.h.
// This header does not include <pcap.h>; only the library's .cpp files do.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "ddpscope/capture/frame.h"

struct pcap;         // pcap_t
struct bpf_program;  // a compiled BPF filter

namespace ddpscope::capture {

namespace detail {
class MappedReader;
}

// Which parser reads a file.
//   automatic: the mapped reader (the file mapped, records handed out where they lie, gzip
//     inflated as it is read) for regular files it reads; libpcap for the rest (standard input,
//     pipes, pcap versions before 2.4, a few link types whose pseudo-header libpcap rewrites)
//     and for anything it does not take for a capture (libpcap then says why, as before).
//     The environment variable DDPSCOPE_READER (auto, mapped, libpcap) picks another default.
//   mapped: the mapped reader only; a file it does not read is an error.
//   libpcap: libpcap only (pcap_next_ex, a copy of every record), for comparison.
enum class ReaderKind { automatic, mapped, libpcap };
// "auto", "mapped", "libpcap": false for anything else.
bool parse_reader_kind(std::string_view name, ReaderKind& kind);

// Reads pcap and pcapng files with nanosecond timestamps, plain or gzip-compressed (as
// Wireshark does: .pcap.gz, .pcapng.gz, recognised by content, through zlib). Both parsers
// hand out the same frames and stop at the same damage with the same words (libpcap's);
// where libpcap 1.10 stops at a valid pcapng file (interfaces of another link type or snapshot
// length than the first's, sections of another byte order), the mapped reader goes on.
class CaptureReader {
 public:
  // nullptr and `error` set when the file is missing, unreadable or not a capture.
  static std::unique_ptr<CaptureReader> open(const std::string& path, std::string& error,
                                             ReaderKind kind = ReaderKind::automatic);
  ~CaptureReader();
  CaptureReader(const CaptureReader&) = delete;
  CaptureReader& operator=(const CaptureReader&) = delete;

  // The next frame; false at the end of the file or on error. After false, error() is
  // non-empty when the file did not end cleanly (a record cut short: "truncated dump file;
  // ..." in libpcap's words) or could not be read.
  bool next(Frame& frame);
  // A BPF capture filter (pcap-filter(7), as `live -f` and `tshark -f` take) applied while
  // reading: frames it rejects are skipped but keep their numbers, so frame N is the file's
  // frame N as Wireshark numbers it. False with `error` set when the expression does not compile
  // for the file's (first interface's) link type. A pcapng interface of another link type
  // gets the filter compiled for its own; where it does not compile, its frames are filtered out.
  bool set_filter(const std::string& expression, std::string& error);
  std::uint64_t frames_filtered_out() const { return filtered_out_; }
  const std::string& error() const { return error_; }
  std::uint32_t link_type() const { return link_type_; }
  // libpcap's name and description of a LINKTYPE_* value: "USER0 (User 0, 147)".
  static std::string link_type_name(std::uint32_t link_type);
  std::uint32_t snaplen() const { return snaplen_; }
  std::uint64_t file_size() const { return file_size_; }
  bool gzip() const;
  // Which parser is reading: "mapped" or "libpcap" (the mapped reader hands over to libpcap
  // mid-file at a pcapng interface whose pseudo-header libpcap rewrites).
  const char* backend() const { return mapped_ ? "mapped" : "libpcap"; }
  // The last frame next() handed out lies in the mapped file (not in a copy the next call
  // overwrites) and stays valid as long as this reader: true for the mapped reader on an
  // uncompressed file. A consumer that keeps frames for later (feed's pipeline) need not copy
  // them then.
  bool frames_stay_valid() const { return stay_valid_; }
  // A mapped file's pages leave the process's memory behind the frames in use (the file's
  // octets stay in the kernel's page cache). Unless held, a frame is in use until the next call
  // of next(). A consumer that keeps frames valid past that (feed's pipeline) holds them, then
  // says which it is done with: every frame handed out up to and including the one whose
  // octets (Frame::data) are `last_done`.
  void hold_frames();
  void frames_done(ByteView last_done);
  // Approximate read position in the file (compressed octets for gzip), for a progress bar.
  std::uint64_t bytes_read() const;

 private:
  struct Filter;
  CaptureReader() = default;
  bool open_libpcap(std::string& error);
  bool switch_to_libpcap();
  [[gnu::noinline]] bool next_other(Frame& frame);
  bool filtered_out(std::uint32_t link_type, std::uint32_t caplen, std::uint32_t wire_length,
                    const std::uint8_t* data);
  std::string path_;
  std::unique_ptr<detail::MappedReader> mapped_;
  // The mapped reader once libpcap took over mid-file: its map holds the frames handed out
  // before (frames_stay_valid), kept until this reader ends.
  std::unique_ptr<detail::MappedReader> retired_;
  // frames_stay_valid: read by the mapped reader, uncompressed (asked every frame: inline).
  bool stay_valid_ = false;
  std::unique_ptr<char[]> read_buffer_;  // the FILE's stdio buffer: outlives handle_
  pcap* handle_ = nullptr;
  void* gzip_ = nullptr;  // zlib's gzFile under handle_'s FILE (closed with it), or none
  std::string error_;
  std::uint32_t link_type_ = 0;
  std::uint32_t snaplen_ = 0;
  std::uint64_t file_size_ = 0;
  std::uint64_t number_ = 0;
  std::uint64_t filtered_out_ = 0;
  std::string filter_expression_;
  std::vector<Filter> filters_;  // one per link type met; the first is the file's
  bool done_ = false;
};

}  // namespace ddpscope::capture
