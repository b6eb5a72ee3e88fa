// SPDX-License-Identifier: GPL-2.0-or-later
// Upper-layer buffer advertisements: an upper layer tells its peer an STag, a base TO and a
// length inside an untagged message (rping in its SEND; NVMe-oF, iSER, NFS/RDMA and SMB Direct
// in their own PDUs). A decoder turns such a payload into regions the engine then checks
// against, and, for a ULP with commands, tells which command each region belongs to and which
// message completes it (the engine's ULP checks, analysis/engine_ulp.cpp, are the same for
// every ULP).
//
// One decoder object serves every stream; what it must remember of one stream (whether the
// stream carries its ULP, which command a key belongs to) lives in the UlpStreamState it makes
// for that stream, never in the decoder. A stream a decoder claims (its set-up or content says
// it carries that ULP) is decoded by that decoder alone.
#pragma once

#include <bit>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ddpscope/common/bytes.h"
#include "ddpscope/net/packet.h"

namespace ddpscope {

struct AdvertContext {
  std::uint8_t opcode = 0;  // RDMAP opcode of the message (a Send variant)
  net::Endpoint sender;     // who advertised (owns the memory); port 0: not known
  net::Endpoint receiver;   // port 0: not known
  std::uint32_t stream = 0;
  // The message's whole length: the body handed over may be its first octets only.
  std::uint64_t length = 0;
  // The STag a Send with Invalidate names (RFC 5040 §5.3); 0 for the other Sends.
  std::uint32_t invalidate_stag = 0;
  // The sender is the stream's MPA initiator (nullopt: no handshake seen).
  std::optional<bool> from_initiator;
  // The message's MSN on its queue (RFC 5041 §5.1: a stream's first Send has MSN 1); 0: not
  // known. With from_initiator it tells the initiator's opening message (UlpStreamDecoders).
  std::uint32_t msn = 0;
  // Either end uses `port` (a ULP's well-known port: a hint, never proof).
  bool uses_port(std::uint16_t port) const { return sender.port == port || receiver.port == port; }
};

struct AdvertisedRegion {
  std::uint32_t stag = 0;
  std::uint64_t base = 0;
  std::uint64_t length = 0;
  net::Address owner;
  // The upper layer registers the region for this connection only (its own protection domain):
  // using it on another stream while this one lasts is a violation.
  bool per_connection = false;
  // What the command that advertised it implies (ddp::access bits: remote_write for a buffer
  // the peer RDMA-Writes, remote_read for one it RDMA-Reads); nullopt: not said.
  std::optional<std::uint8_t> access;
  // The upper layer asks for the STag to be invalidated when the command completes (NVMe-oF:
  // keyed SGL sub-type Fh): after the completion it is not valid.
  bool invalidate = false;
};

// A command that names buffers of its sender's; it lasts until a UlpCompletion with its id.
struct UlpCommand {
  std::uint64_t id = 0;  // unique among the stream's outstanding commands (NVMe: the CID)
  std::string name;      // "NVMe Read cid 12 nsid 1"
  // The name without what identifies this one command ("NVMe Read"): what response-time
  // tables group by. Empty: the name is used.
  std::string operation;
  std::vector<AdvertisedRegion> regions;
  // Octets the command itself says it transfers (NVMe: NUMD of Get Log Page, Identify's 4096),
  // when its own fields say so; compared with what was placed at its completion.
  std::optional<std::uint64_t> transfer_length;
  // Not every data descriptor was read (an SGL list past the octets kept): the regions are a
  // lower bound, so no transfer check is made.
  bool partial = false;
};

struct UlpCompletion {
  std::uint64_t id = 0;  // the command it completes
  bool success = true;   // the status says the command succeeded (its data was transferred)
  std::string status;    // e.g. "status 0x0002", for messages
  // Octets of the command's data the completion says were not transferred (iSCSI residual
  // underflow): the transfer is complete at that many fewer, and more placed is a mismatch.
  std::uint64_t residual = 0;
  // Octets the completion says the command's data came to (SMB2 READ/WRITE response), when it
  // says so: the same judgement as a residual, from the other end.
  std::optional<std::uint64_t> transferred;
};

// What one complete untagged message told.
struct UlpEvents {
  std::vector<AdvertisedRegion> regions;  // advertisements of no command (rping)
  std::vector<UlpCommand> commands;
  std::vector<UlpCompletion> completions;
  bool empty() const { return regions.empty() && commands.empty() && completions.empty(); }
};

// The connection set-up a ULP recognises itself by: the ULP's part of the MPA Request's and
// Reply's private data (after the RFC 6581 word), which is the RDMA CM private data.
struct UlpSetup {
  std::optional<Bytes> request;  // nullopt: no Request seen
  std::optional<Bytes> reply;
  net::Endpoint initiator;
  net::Endpoint responder;
};

// A decoder's memory of one stream.
class UlpStreamState {
 public:
  virtual ~UlpStreamState() = default;
  // The stream carries this decoder's ULP (set-up or content said so). Once true, it stays
  // true for the stream (UlpStreamDecoders keeps the answer). A flag, not a virtual call:
  // UlpStreamDecoders asks it after every decoder, for every untagged message.
  bool claimed() const { return recognised; }
  // What recognised it and what the set-up said ("qid 1, hsqsize 127"), for reports.
  virtual std::string describe() const { return {}; }
  // Set by the decoder when it recognises the stream (what claimed() answers).
  bool recognised = false;
};

class AdvertisementDecoder {
 public:
  virtual ~AdvertisementDecoder() = default;
  virtual std::string_view name() const = 0;  // "rping", "nvme-rdma"
  // A fresh state for a new stream (nullptr: the decoder needs none).
  virtual std::unique_ptr<UlpStreamState> new_stream() const { return nullptr; }
  // The stream's MPA Request and Reply (at the Reply).
  virtual void setup(UlpStreamState* /*state*/, const UlpSetup& /*setup*/) const {}
  // What one complete untagged message tells. `state` is new_stream()'s for this stream.
  virtual void decode(const AdvertContext& ctx, UlpStreamState* state, ByteView message,
                      UlpEvents& out) const = 0;
  // What the command `message` (one decode() named) asks, apart from the identifier and
  // buffers its sender chose, as a hash: two commands with the same signature ask the same, so
  // a replay can tell which captured command a live peer's stands for when the peer picks its
  // identifiers anew. 0: the ULP gives none. Only replay asks (not the analysis' hot path).
  virtual std::uint64_t command_signature(ByteView /*message*/) const { return 0; }
  // Whether `first`, whole, can be the first message the stream's MPA initiator sends when the
  // stream carries this decoder's ULP, or the stream may still be claimed for another reason
  // (its well-known port, a set-up hint in `state`). Asked once per stream, about the
  // initiator's first Send with content, after decode() did not claim the stream on it: false
  // rules the decoder out for the stream, which it is then never asked about again. A ULP that
  // opens with a message of its own (NVMe-oF's Connect, SMB Direct's Negotiate Request) says so
  // here; the default, true, keeps the decoder asked about every message.
  virtual bool may_open(const AdvertContext& /*ctx*/, const UlpStreamState* /*state*/,
                        ByteView /*first*/) const {
    return true;
  }
  // The one size of message octets decode() can find anything in, for a ULP whose messages
  // have one size (rping's advertisement); 0, the default: any size. A decoder is not asked
  // about a message of another size on a stream it has not claimed (decode() would return at
  // once: the question itself is what a Send costs on a stream no ULP has claimed).
  virtual std::size_t message_size() const { return 0; }
};

// rping (rdma-core librdmacm/examples/rping.c): a 16-octet SEND holding
// { be64 buf; be32 rkey; be32 size; }, taken to be one by ulp::rping_advertisement (rping.h).
// rping allocates a protection domain per connection and registers its buffers in it, so the
// region is per connection.
class RpingAdvertisementDecoder final : public AdvertisementDecoder {
 public:
  std::string_view name() const override { return "rping"; }
  std::size_t message_size() const override;
  void decode(const AdvertContext& ctx, UlpStreamState* state, ByteView message,
              UlpEvents& out) const override;
};

std::vector<std::unique_ptr<AdvertisementDecoder>> default_advertisement_decoders();

// The name views give one untagged message from what it told (the GUI's MSN chart and stream
// tree): its commands' names ("NVMe Read cid 97 nsid 1"), and each completion as "completion
// of " and its command's name, with the completion's status when it says the command failed;
// "; " between several. `command_name(id)`: the name of the command a completion completes
// (empty when that command was not seen: then "<ulp> completion of id N"). Empty when the
// message named no command. At most kMaxMessageName octets (longer names are cut, "…" ending).
inline constexpr std::size_t kMaxMessageName = 160;
std::string ulp_message_name(std::string_view ulp, const UlpEvents& events,
                             const std::function<std::string(std::uint64_t)>& command_name);

// The decoders' states of one stream, and which decoder claimed it: the one loop every host of
// the decoders (the analysis engine, the synthetic generator's oracle) runs.
class UlpStreamDecoders {
 public:
  explicit UlpStreamDecoders(const std::vector<std::unique_ptr<AdvertisementDecoder>>& decoders);
  void setup(const UlpSetup& setup);
  // Each event list is tagged with the index of the decoder that produced it.
  struct Decoded {
    std::size_t decoder = 0;
    UlpEvents events;
  };
  std::vector<Decoded> decode(const AdvertContext& ctx, ByteView message);
  // Whether decode() of `size` message octets at `msn` can do anything: a decoder would be
  // asked about them (the claiming one; one asked whose message_size() fits), or it is the
  // message the stream's opening is judged on. A host may skip decode() when not.
  bool wants(std::size_t size, std::uint32_t msn) const {
    if (claimed_ || (opening_msn_ != 0 && msn == opening_msn_)) return true;
    return (asked_ & ~sized_) != 0 || asked_sized(size) != 0;
  }
  // Decoder i can still claim this stream (not ruled out by its may_open).
  bool asked(std::size_t i) const { return (asked_ >> i) & 1u; }
  // The decoder that claimed the stream (nullopt: none).
  std::optional<std::size_t> claimed() const { return claimed_; }
  const AdvertisementDecoder& decoder(std::size_t i) const { return *decoders_[i]; }
  const UlpStreamState* state(std::size_t i) const { return states_[i].get(); }

 private:
  void judge_opening(const AdvertContext& ctx, ByteView message);
  // The asked decoders that read messages of one size only and would find something in `size`
  // octets.
  std::uint32_t asked_sized(std::size_t size) const {
    std::uint32_t fit = 0;
    for (std::uint32_t left = asked_ & sized_; left != 0; left &= left - 1) {
      const auto i = static_cast<std::size_t>(std::countr_zero(left));
      if (sizes_[i] == size) fit |= 1u << i;
    }
    return fit;
  }
  const std::vector<std::unique_ptr<AdvertisementDecoder>>& decoders_;
  std::vector<std::unique_ptr<UlpStreamState>> states_;
  // The claiming decoder, once one has claimed (a claim is never taken back).
  std::optional<std::size_t> claimed_;
  // Bit i: decoder i is still asked about each message (not ruled out by may_open).
  std::uint32_t asked_ = 0;
  // Bit i: decoder i reads messages of one size, sizes_[i] (its message_size()), only.
  std::uint32_t sized_ = 0;
  std::vector<std::size_t> sizes_;
  // The MSN the initiator's opening message is expected at (a zero-length Send before it, an
  // RFC 6581 RTR, moves it on); 0: judged, or not to be judged.
  std::uint32_t opening_msn_ = 1;
};

}  // namespace ddpscope
