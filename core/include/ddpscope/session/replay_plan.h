// SPDX-License-Identifier: GPL-2.0-or-later
// Replaying one side of a captured stream against a live peer: the half without I/O. From the
// analyzer's view of a capture it builds
//  - the stream's RDMAP messages, assembled from their DDP segments (MessageAssembler);
//  - the SessionConfig that repeats the side's captured MPA Request or Reply, or SCTP Session
//    Initiate or Accept, on either LLP (replay_session_config);
//  - the plan the host walks (make_replay_plan): the messages to send and to expect, in capture
//    order, the regions to register under the captured STags with the contents the live peer
//    must find there, and the comparison of each live message with the captured one.
// Whatever an upper layer says of its buffers and commands is read by the ULP decoders
// (ulp/advert.h), the same the analyzer runs: the side that advertises (NVMe-oF host, iSER
// initiator, NFS/RDMA client, SMB Direct client, rping) registers every region it advertised
// under the captured STag; the side that uses the peer's buffers learns the live STags from the
// live peer's commands, matched to the captured ones by the ULP's own identity (NVMe CID on the
// stream's queue, iSER ITT, RPC XID, SMB2 MessageId), never by message position.
// The host (`ddpscope replay`) reads the capture, feeds the Analyzer and drives the socket.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "ddpscope/analysis/model.h"
#include "ddpscope/analysis/pdu_event.h"
#include "ddpscope/common/bytes.h"
#include "ddpscope/session/session.h"
#include "ddpscope/ulp/advert.h"
#include "ddpscope/wire/rdmap.h"
#include "ddpscope/wire/terminate_error.h"

namespace ddpscope::session {

// The side replayed; its value is the direction it sends (0: client -> server).
enum class ReplaySide : std::uint8_t { client = 0, server = 1 };

// One captured RDMAP message: every DDP segment up to and including the one with L set.
struct CapturedMessage {
  int direction = 0;
  std::uint8_t opcode = 0;
  bool tagged = false;
  // From the first segment's header.
  std::uint32_t qn = 0, msn = 0, rsvd_ulp1 = 0;
  std::uint32_t stag = 0;
  std::uint64_t to = 0;
  Bytes data;  // the payload, at MO (untagged) or TO - first TO (tagged)
  std::optional<wire::ReadRequest> read_request;
  std::optional<wire::AtomicRequest> atomic_request;
  std::optional<wire::AtomicResponse> atomic_response;
  std::optional<std::uint64_t> immediate;
  std::optional<TerminateError> terminate;
  std::uint64_t frame = 0;  // frame of the first segment
  std::int64_t ts_ns = 0;   // when the last segment was captured
};
std::string describe(const CapturedMessage& m);  // "Send, 16 octets"

// Assembles the messages of one stream from the PDUs the Analyzer reports. Only FPDUs whose CRC
// held count. Untagged segments join the open message of their queue (RFC 5041 §5.3, at MO);
// tagged ones the direction's open tagged message (RFC 5041 §5.2, at TO). Payload beyond 64 MiB
// into a message is dropped, so a hostile capture cannot grow one without bound.
class MessageAssembler final : public AnalysisObserver {
 public:
  explicit MessageAssembler(std::uint32_t stream) : stream_(stream) {}
  // Time of the frame about to be fed (a PduEvent names its frames, not their times).
  void set_frame_time(std::int64_t ts_ns) { now_ns_ = ts_ns; }
  void on_pdu(const PduEvent& p) override;
  // The complete messages of both directions, in the order their last segments arrived.
  const std::vector<CapturedMessage>& messages() const { return messages_; }
  std::vector<CapturedMessage> take_messages() { return std::move(messages_); }

  static constexpr std::uint64_t kMaxMessageOctets = std::uint64_t{64} << 20;

 private:
  static constexpr std::uint32_t kTaggedKey = 0xFFFFFFFFu;  // not a QN a message can use here
  std::uint32_t stream_;
  std::int64_t now_ns_ = 0;
  std::map<std::uint32_t, CapturedMessage> open_[2];  // by QN, or kTaggedKey
  std::vector<CapturedMessage> messages_;
};

// What one side's captured connection setup said, over either LLP: its MPA Request (client) or
// Reply (server) (RFC 5044 §7.1, RFC 6581 §5), or over SCTP its DDP Stream Session Initiate or
// Accept (RFC 5043 §6, RFC 6581 §8), which carry the same private data and enhanced word but no
// revision, CRC or markers. nullopt when the capture has no such message.
struct CapturedSetup {
  Llp llp = Llp::mpa;                    // the LLP it was captured on
  std::optional<std::uint8_t> revision;  // MPA only
  bool crc = false, markers = false;     // MPA only
  std::optional<wire::MpaEnhancedPd> enhanced;
  ByteView ulp_private_data;  // the RDMA CM's part, after the word (a view into `stream`)
};
std::optional<CapturedSetup> captured_setup(const StreamModel& stream, ReplaySide side);

// The connection parameters of `side` as its captured setup gave them, for a replay on `llp`:
// the ULP's private data and, with the enhanced word, IRD, ORD, peer-to-peer and the RTR types,
// whichever LLP the capture and the replay use (the DDP/RDMAP plan does not depend on it).
// Over MPA also the revision, CRC and markers of a captured MPA frame (an SCTP capture's
// replay: revision 2, no CRC, no markers); over SCTP none of them (SCTP's CRC32c covers every
// message, RFC 4960 §6.8; DDP messages map onto user messages, RFC 5043 §4, so nothing to mark).
// A replayed responder whose word names no RTR type accepts a zero-length Write. nullopt when
// the capture has no setup of `side`. `pd` is left 0: the host allocates it.
std::optional<SessionConfig> replay_session_config(const StreamModel& stream, ReplaySide side,
                                                   Llp llp = Llp::mpa);
// What of the captured setup of `side` does not carry over as captured to a replay on `llp`,
// one line each (empty when the replay repeats it as captured): the setup message it becomes,
// and the captured CRC, markers and revision that the other LLP has no place for.
std::vector<std::string> replay_setup_notes(const StreamModel& stream, ReplaySide side, Llp llp);

// The identity of a ULP command or completion on one stream: the ULP's own id (NVMe CID, iSER
// ITT, RPC XID, SMB2 MessageId) and how many earlier messages of the same kind and direction
// carried the same id (a CID is used again once its command completed).
struct UlpKey {
  bool completion = false;
  std::uint64_t id = 0;
  std::uint32_t occurrence = 0;
  auto operator<=>(const UlpKey&) const = default;
};

// What the ULP decoders said of one message (captured or live). Empty for a message that is
// none of a ULP's commands or completions (tagged messages, rping advertisements).
struct UlpMessageInfo {
  std::optional<UlpKey> key;              // the message's first command or completion
  std::string name;                       // "NVMe Read cid 97 nsid 1" (a completion: its command's)
  std::vector<AdvertisedRegion> regions;  // the command's buffers
  std::optional<UlpCompletion> completion;
  std::uint64_t signature = 0;  // a command's, AdvertisementDecoder::command_signature
};

// Fields of a ULP message that legitimately differ between two runs and are not compared
// (replay_varying_fields): stable names, `replay --ignore NAME`.
struct VaryingField {
  std::string_view name;  // "nvme.cntlid"
  std::string_view what;  // one line for --help and the README
  bool by_default;        // ignored without --ignore
};
const std::vector<VaryingField>& replay_varying_fields();
// Octet ranges [first, second) of `message` holding the named fields, as the ULP `ulp` (a
// decoder name) lays them out in a Send; `command` is the name of the command the message
// carries or completes.
std::vector<std::pair<std::size_t, std::size_t>> varying_ranges(
    std::string_view ulp, const std::vector<std::string>& fields, std::string_view command,
    ByteView message);

// Live message as the host's session reported it.
struct LiveMessage {
  std::int64_t at_ns = 0;
  std::uint8_t opcode = 0;
  Bytes data;  // a Send's payload, or the octets a Write or Read Response placed
  std::uint32_t stag = 0;
  std::uint64_t to = 0;
  std::uint32_t length = 0;
  std::uint64_t value = 0;  // Immediate Data, or an Atomic's original value
  TerminateError terminate{};
  UlpMessageInfo ulp;    // set by ReplayPlan::observe_live
  bool matched = false;  // observe_live: it stands for the captured message of key ulp.key
};
std::string describe(const LiveMessage& m);

// A region registered under a captured STag: the octets [base, base + mem.size()).
struct ReplayRegion {
  std::uint64_t base = 0;
  Bytes mem;
  // The first script message that names the STag: the host registers the region before it
  // (an upper layer that registers one buffer again under a new key, as Linux's fast
  // registrations do, reuses the STag's index: the older region goes when the newer comes).
  std::size_t first_use = 0;
};

class ReplayPlan {
 public:
  ReplaySide side = ReplaySide::client;
  int us() const { return static_cast<int>(side); }
  // The captured messages after the handshake's RTR (and the Read Response to a Read RTR).
  std::vector<CapturedMessage> script;
  // Our side's memory the live peer may reach, by captured STag: what our side advertised,
  // the sinks of our Read Requests, and whatever the peer wrote, read or used atomically.
  std::map<std::uint32_t, ReplayRegion> regions;
  // Largest Send the peer sent (at least 4096): the size of the receive buffers to post.
  std::size_t max_send = 4096;
  // The ULP a decoder recognised on the stream ("nvme-rdma"; empty: none) and what it said of
  // each script message (same index).
  std::string ulp;
  std::vector<UlpMessageInfo> ulp_info;
  // Fields not compared (replay_varying_fields' names): the defaults and --ignore's.
  std::vector<std::string> ignored;
  // NVMe-oF (NVMe-oF 1.1 §3.3): the controller ID to put in our Connect commands (what the
  // live controller assigned at an earlier stream's admin Connect; nullopt: as captured), and
  // what the live controller's Connect response on this stream assigned.
  std::optional<std::uint16_t> nvme_cntlid, learned_cntlid;

  // "NVMe Read cid 97 nsid 1" for a ULP command or its completion, "RDMA Write for NVMe Read
  // cid 97 nsid 1" for a transfer into or out of a command's buffer, else describe(m).
  std::string label(std::size_t i) const;
  // Decodes a live message of the peer, in the order they arrive, setting l.ulp; a command the
  // capture has teaches live_stag_to() its live buffers. A command stands for the captured one
  // of the same UlpKey when both ask the same (AdvertisementDecoder::command_signature), else for
  // the first captured command not matched yet that asks the same (a peer that picks its
  // identifiers anew, as Linux's NVMe host picks CIDs from its block layer's tags): l.ulp.key
  // becomes that command's, and our response to it carries the live identifier (outgoing()).
  void observe_live(LiveMessage& l);
  // Our script[i], as we send it, told to the decoders that read the live stream.
  void observe_sent(std::size_t i);
  // Which live message stands for script[i] (a message of the peer): the one with the same ULP
  // identity; for an RDMA Write or Read Request, the first of its opcode into the same region of
  // ours; else the first one of no ULP identity. nullopt: none yet.
  std::optional<std::size_t> pick(std::size_t i, const std::deque<LiveMessage>& live) const;
  // The live peer never sent script[i]: the line that says so, and the buffers of its command
  // are out of reach (our messages into them are not sent: blocked_by()).
  std::string missing(std::size_t i);
  // Our message script[i] would use a buffer of a command the live peer did not send: that
  // command's label, else empty.
  std::string blocked_by(std::size_t i) const;
  // A live message matched to no captured one: the line that says what it was.
  std::string extra(const LiveMessage& l) const;
  // Our Send script[i] as it goes to the live peer: chunk lists naming the peer's buffers
  // (RPC-over-RDMA's Reply echoes the requester's segments) rewritten onto the live STags, an
  // NVMe-oF I/O queue's Connect given nvme_cntlid, a response to a live command of another
  // identifier given that identifier (NVMe: the CQE's CID).
  Bytes outgoing(std::size_t i) const;

  // A message the host posts itself (not a response, which our session produces).
  bool ours_to_send(const CapturedMessage& m) const;
  // Writes into `regions` what our side's Read Responses carried, for each Read Request of the
  // peer in script[from, next message ours to send): the data as it was when the peer read it.
  void apply_fills(std::size_t from);
  // The octets of a region, or empty when [to, to + len) is not wholly inside one.
  Bytes region_bytes(std::uint32_t stag, std::uint64_t to, std::size_t len) const;

  // The live STag and TO for the captured peer's (stag, to), once the live peer's advertisement
  // in the same position was seen; unchanged before.
  std::pair<std::uint32_t, std::uint64_t> live_stag_to(std::uint32_t stag, std::uint64_t to) const;
  // How the live message differs from the captured one; empty when it does not. A pair of
  // rping advertisements (ulp/rping.h) teaches live_stag_to() the live peer's buffers.
  std::string compare(const CapturedMessage& captured, const LiveMessage& live);
  // The same for script[i], knowing its ULP: a completion's status is compared first, the
  // `ignored` fields are left out, and a difference names the first octet that differs.
  std::string compare(std::size_t i, const LiveMessage& live);

 private:
  friend std::optional<ReplayPlan> make_replay_plan(const StreamModel&, ReplaySide,
                                                    std::vector<CapturedMessage>, std::string&,
                                                    std::uint64_t);
  struct Fill {
    std::size_t at;        // script index of the peer's Read Request
    std::uint32_t stag;    // our region it read
    std::uint64_t to;      // where
    std::size_t response;  // script index of our Read Response
  };
  std::vector<Fill> fills_;
  std::array<std::uint16_t, 2> ports_{};  // by direction: the captured sender's TCP port
  struct LiveBuffer {
    std::uint32_t stag;
    std::uint64_t captured_base, live_base;
  };
  std::map<std::uint32_t, LiveBuffer> live_;  // by the captured peer's STag
  // The decoders and the live stream's states (the captured one's are only needed once).
  std::shared_ptr<const std::vector<std::unique_ptr<AdvertisementDecoder>>> decoders_;
  std::shared_ptr<UlpStreamDecoders> live_decoders_;
  std::array<net::Endpoint, 2> ends_{};   // by direction: the captured sender
  std::map<UlpKey, std::size_t> by_key_;  // the peer's captured commands/completions
  // The peer's captured commands by signature, in captured order; those a live command stood
  // for; the live identifier of each captured command matched to one of another identifier.
  std::map<std::uint64_t, std::deque<std::size_t>> by_signature_;
  std::set<UlpKey> matched_;
  std::map<UlpKey, std::uint64_t> live_id_;
  std::map<std::pair<bool, std::uint64_t>, std::uint32_t> live_seen_;  // occurrences so far
  std::map<std::uint32_t, std::string> unreachable_;  // captured STag -> missing command
  std::map<std::uint32_t, std::string> stag_owner_;   // captured STag -> its command's name
  UlpMessageInfo decode_ulp(UlpStreamDecoders& d,
                            std::map<std::pair<bool, std::uint64_t>, std::uint32_t>& seen,
                            int direction, std::uint8_t opcode, std::uint32_t invalidate_stag,
                            ByteView data) const;
};

// Region caps: one region at most kMaxRegion octets, all of them together kMaxRegions.
inline constexpr std::uint64_t kReplayMaxRegion = std::uint64_t{256} << 20;
inline constexpr std::uint64_t kReplayMaxRegions = std::uint64_t{1} << 30;

// The plan for `side` of `stream` from its assembled messages. nullopt with `error` set when a
// region would be empty or exceed the caps (`max_regions`: all regions together, at most
// kReplayMaxRegions).
std::optional<ReplayPlan> make_replay_plan(const StreamModel& stream, ReplaySide side,
                                           std::vector<CapturedMessage> messages,
                                           std::string& error,
                                           std::uint64_t max_regions = kReplayMaxRegions);

}  // namespace ddpscope::session
