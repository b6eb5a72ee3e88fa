// SPDX-License-Identifier: GPL-2.0-or-later
// NVMe-oF over RDMA: capsule and CM private data codecs, and the advertisement decoder (see
// nvmeof.h for the wire layout).
#include "ddpscope/ulp/nvmeof.h"

#include <algorithm>

#include "ddpscope/ddp/rules.h"
#include "ddpscope/wire/rdmap.h"

namespace ddpscope::ulp {
namespace {

// An SQE's flags octet as NVMe over Fabrics has it: PSDT (bits 7:6) 01b or 10b (SGLs: fabrics
// use no PRPs), reserved bits 5:2 zero.
bool sqe_flags_plausible(std::uint8_t flags) {
  const std::uint8_t psdt = static_cast<std::uint8_t>(flags >> 6);
  return (psdt == 1 || psdt == 2) && (flags & 0x3C) == 0;
}

bool all_zero(ByteView d) {
  return std::all_of(d.begin(), d.end(), [](std::uint8_t b) { return b == 0; });
}

// A NUL-terminated (or full-width) ASCII field, printable characters only.
std::string ascii_field(ByteView d) {
  std::string s;
  for (std::uint8_t b : d) {
    if (b == 0) break;
    s.push_back(b >= 0x20 && b < 0x7F ? static_cast<char>(b) : '?');
  }
  return s;
}

const char* admin_name(std::uint8_t op) {
  switch (op) {
    case 0x00:
      return "Delete I/O SQ";
    case 0x01:
      return "Create I/O SQ";
    case 0x02:
      return "Get Log Page";
    case 0x04:
      return "Delete I/O CQ";
    case 0x05:
      return "Create I/O CQ";
    case 0x06:
      return "Identify";
    case 0x08:
      return "Abort";
    case 0x09:
      return "Set Features";
    case 0x0A:
      return "Get Features";
    case 0x0C:
      return "Asynchronous Event Request";
    case 0x0D:
      return "Namespace Management";
    case 0x10:
      return "Firmware Commit";
    case 0x11:
      return "Firmware Image Download";
    case 0x18:
      return "Keep Alive";
    default:
      return nullptr;
  }
}
const char* io_name(std::uint8_t op) {
  switch (op) {
    case 0x00:
      return "Flush";
    case 0x01:
      return "Write";
    case 0x02:
      return "Read";
    case 0x04:
      return "Write Uncorrectable";
    case 0x05:
      return "Compare";
    case 0x08:
      return "Write Zeroes";
    case 0x09:
      return "Dataset Management";
    default:
      return nullptr;
  }
}
const char* fabrics_name(std::uint8_t fctype) {
  switch (fctype) {
    case 0x00:
      return "Property Set";
    case 0x01:
      return "Connect";
    case 0x04:
      return "Property Get";
    case 0x05:
      return "Authentication Send";
    case 0x06:
      return "Authentication Receive";
    case 0x08:
      return "Disconnect";
    default:
      return nullptr;
  }
}

constexpr std::uint8_t kFctypeConnect = 0x01;

}  // namespace

std::optional<NvmeCmRequest> decode_nvme_cm_request(ByteView pd) {
  if (pd.size() != kNvmeCmPrivateDataSize) return std::nullopt;
  NvmeCmRequest r;
  r.recfmt = le16(pd, 0);
  r.qid = le16(pd, 2);
  r.hrqsize = le16(pd, 4);
  r.hsqsize = le16(pd, 6);
  r.cntlid = le16(pd, 8);
  if (r.recfmt != 0 || r.hrqsize == 0 || r.hsqsize == 0 || !all_zero(pd.subspan(10)))
    return std::nullopt;
  return r;
}

std::optional<NvmeCmReply> decode_nvme_cm_reply(ByteView pd) {
  if (pd.size() != kNvmeCmPrivateDataSize) return std::nullopt;
  NvmeCmReply r;
  r.recfmt = le16(pd, 0);
  r.crqsize = le16(pd, 2);
  if (r.recfmt != 0 || r.crqsize == 0 || !all_zero(pd.subspan(4))) return std::nullopt;
  return r;
}

Bytes encode_nvme_cm_request(const NvmeCmRequest& r) {
  Bytes b;
  ByteWriter w(b);
  w.le(r.recfmt, 2);
  w.le(r.qid, 2);
  w.le(r.hrqsize, 2);
  w.le(r.hsqsize, 2);
  w.le(r.cntlid, 2);
  w.zeros(kNvmeCmPrivateDataSize - 10);
  return b;
}

Bytes encode_nvme_cm_reply(const NvmeCmReply& r) {
  Bytes b;
  ByteWriter w(b);
  w.le(r.recfmt, 2);
  w.le(r.crqsize, 2);
  w.zeros(kNvmeCmPrivateDataSize - 4);
  return b;
}

NvmeSgl decode_nvme_sgl(ByteView d) {
  NvmeSgl s;
  s.address = le64(d, 0);
  s.type = static_cast<std::uint8_t>(d[15] >> 4);
  s.subtype = static_cast<std::uint8_t>(d[15] & 0x0F);
  if (s.type == sgl_type::keyed_data_block) {
    s.length = le24(d, 8);
    s.key = le32(d, 11);
  } else {
    s.length = le32(d, 8);
  }
  return s;
}

void encode_nvme_sgl(const NvmeSgl& s, ByteWriter& w) {
  w.le(s.address, 8);
  if (s.type == sgl_type::keyed_data_block) {
    w.le(s.length & 0xFFFFFF, 3);
    w.le(s.key, 4);
  } else {
    w.le(s.length, 4);
    w.zeros(3);
  }
  w.u8(static_cast<std::uint8_t>((s.type << 4) | (s.subtype & 0x0F)));
}

std::optional<NvmeSqe> decode_nvme_sqe(ByteView capsule) {
  if (capsule.size() < kNvmeSqeSize) return std::nullopt;
  NvmeSqe q;
  q.opcode = capsule[0];
  q.flags = capsule[1];
  q.cid = le16(capsule, 2);
  q.nsid = le32(capsule, 4);
  q.sgl1 = decode_nvme_sgl(capsule.subspan(24, kNvmeSglSize));
  for (std::size_t i = 0; i < q.cdw.size(); ++i)
    q.cdw[i] = le32(capsule, 40 + 4 * i);
  return q;
}

Bytes encode_nvme_sqe(const NvmeSqe& q) {
  Bytes b;
  ByteWriter w(b);
  w.u8(q.opcode);
  w.u8(q.flags);
  w.le(q.cid, 2);
  w.le(q.nsid, 4);
  w.zeros(16);  // CDW2-3, MPTR
  encode_nvme_sgl(q.sgl1, w);
  for (std::uint32_t d : q.cdw)
    w.le(d, 4);
  return b;
}

std::optional<NvmeCqe> decode_nvme_cqe(ByteView capsule) {
  if (capsule.size() != kNvmeCqeSize) return std::nullopt;
  NvmeCqe c;
  c.dw0 = le32(capsule, 0);
  c.dw1 = le32(capsule, 4);
  c.sqhd = le16(capsule, 8);
  c.sqid = le16(capsule, 10);
  c.cid = le16(capsule, 12);
  c.status = le16(capsule, 14);
  return c;
}

Bytes encode_nvme_cqe(const NvmeCqe& c) {
  Bytes b;
  ByteWriter w(b);
  w.le(c.dw0, 4);
  w.le(c.dw1, 4);
  w.le(c.sqhd, 2);
  w.le(c.sqid, 2);
  w.le(c.cid, 2);
  w.le(c.status, 2);
  return b;
}

NvmeDataDirection nvme_data_direction(const NvmeSqe& sqe) {
  const std::uint8_t bits = sqe.opcode == kNvmeFabricsOpcode ? sqe.fctype() : sqe.opcode;
  return static_cast<NvmeDataDirection>(bits & 0x03);
}

std::string nvme_command_name(const NvmeSqe& sqe, std::optional<bool> admin) {
  if (sqe.opcode == kNvmeFabricsOpcode) {
    const char* n = fabrics_name(sqe.fctype());
    std::string s = "NVMe-oF " + (n ? std::string(n) : "fctype " + hex_number(sqe.fctype())) +
                    " cid " + std::to_string(sqe.cid);
    if (sqe.fctype() == kFctypeConnect) s += " qid " + std::to_string(sqe.cdw[0] >> 16);
    return s;
  }
  // Admin and I/O opcodes overlap (0x02 is Get Log Page or Read): without the queue id (a
  // capture that starts after the Connect), both names.
  std::string n;
  const char* a = admin_name(sqe.opcode);
  const char* io = io_name(sqe.opcode);
  if (admin && *admin && a)
    n = a;
  else if (admin && !*admin && io)
    n = io;
  else if (!admin && (a || io))
    n = a && io ? std::string(io) + " or " + a : std::string(a ? a : io);
  if (n.empty()) n = "opcode " + hex_number(sqe.opcode);
  std::string s = "NVMe " + n + " cid " + std::to_string(sqe.cid);
  if (sqe.nsid != 0 && sqe.nsid != 0xFFFFFFFF) s += " nsid " + std::to_string(sqe.nsid);
  if (admin && *admin) s += " (admin)";
  return s;
}

NvmeCapsuleBuffers nvme_capsule_buffers(const NvmeSqe& sqe, ByteView capsule) {
  NvmeCapsuleBuffers out;
  if (sqe.psdt() == 0) return out;  // PRPs: not used over fabrics
  const NvmeSgl& s = sqe.sgl1;
  if (s.type == sgl_type::keyed_data_block) {
    if (s.length > 0) out.keyed.push_back(s);
    return out;
  }
  if (s.type != sgl_type::segment && s.type != sgl_type::last_segment) return out;
  if (s.subtype != sgl_subtype::offset) {
    out.partial = true;  // a list in host memory: not in the capture's Sends
    return out;
  }
  // The descriptor list in the in-capsule data (which starts after the SQE).
  const ByteView icd = capsule.size() > kNvmeSqeSize ? capsule.subspan(kNvmeSqeSize) : ByteView{};
  std::uint64_t n = s.length / kNvmeSglSize;
  if (n > kNvmeMaxKeyedDescriptors) {
    n = kNvmeMaxKeyedDescriptors;
    out.partial = true;
  }
  for (std::uint64_t i = 0; i < n; ++i) {
    const std::uint64_t at = s.address + i * kNvmeSglSize;
    if (at < s.address || at > icd.size() || icd.size() - at < kNvmeSglSize) {
      out.partial = true;
      break;
    }
    const NvmeSgl d = decode_nvme_sgl(icd.subspan(static_cast<std::size_t>(at), kNvmeSglSize));
    if (d.type == sgl_type::keyed_data_block) {
      if (d.length > 0) out.keyed.push_back(d);
    } else if (d.type == sgl_type::segment || d.type == sgl_type::last_segment) {
      out.partial = true;  // a chained list: not followed
      break;
    }
  }
  return out;
}

std::optional<std::uint64_t> nvme_command_transfer_length(const NvmeSqe& sqe, bool admin) {
  if (sqe.opcode == kNvmeFabricsOpcode)
    return sqe.fctype() == kFctypeConnect ? std::optional<std::uint64_t>(kNvmeConnectDataSize)
                                          : std::nullopt;
  if (!admin) return std::nullopt;
  if (sqe.opcode == 0x06) return 4096;  // every Identify data structure
  if (sqe.opcode == 0x02) {
    const std::uint64_t numd = (static_cast<std::uint64_t>(sqe.cdw[1] & 0xFFFF) << 16) |
                               (sqe.cdw[0] >> 16);  // NUMDU:NUMDL, dwords minus one
    return (numd + 1) * 4;
  }
  return std::nullopt;
}

bool nvme_sqe_plausible(const NvmeSqe& sqe, std::uint64_t capsule_length) {
  if (capsule_length < kNvmeSqeSize) return false;
  if (!sqe_flags_plausible(sqe.flags)) return false;
  const NvmeSgl& s = sqe.sgl1;
  switch (s.type) {
    case sgl_type::data_block:
      return s.subtype == sgl_subtype::address || s.subtype == sgl_subtype::offset;
    case sgl_type::segment:
    case sgl_type::last_segment:
      return s.subtype == sgl_subtype::address || s.subtype == sgl_subtype::offset;
    case sgl_type::keyed_data_block:
      return s.subtype == sgl_subtype::address || s.subtype == sgl_subtype::invalidate_key;
    default:
      return false;
  }
}

std::string NvmeRdmaStream::describe() const {
  if (!recognised) return {};
  std::string s = "by " + evidence;
  if (qid) s += "; qid " + std::to_string(*qid) + (*qid == 0 ? " (admin)" : "");
  if (cm_request)
    s += ", hrqsize " + std::to_string(cm_request->hrqsize) + ", hsqsize " +
         std::to_string(cm_request->hsqsize);
  if (cm_reply) s += ", crqsize " + std::to_string(cm_reply->crqsize);
  if (sqsize) s += "; Connect sqsize " + std::to_string(*sqsize);
  if (kato) s += ", kato " + std::to_string(*kato) + " ms";
  if (!hostnqn.empty()) s += ", hostnqn " + hostnqn;
  if (!subnqn.empty()) s += ", subnqn " + subnqn;
  return s;
}

std::unique_ptr<UlpStreamState> NvmeRdmaDecoder::new_stream() const {
  return std::make_unique<NvmeRdmaStream>();
}

void NvmeRdmaDecoder::setup(UlpStreamState* state, const UlpSetup& setup) const {
  auto* st = static_cast<NvmeRdmaStream*>(state);
  if (setup.request) st->cm_request = decode_nvme_cm_request(*setup.request);
  if (setup.reply) st->cm_reply = decode_nvme_cm_reply(*setup.reply);
  // The host's CM Request private data is the set-up's own statement; the Reply's alone (the
  // Request before the capture) is taken too. Either names the host: the initiator.
  if (st->cm_request || (st->cm_reply && !setup.request)) {
    st->recognised = true;
    st->evidence = "RDMA CM private data";
    if (st->cm_request) st->qid = st->cm_request->qid;
    st->host = setup.initiator;
  }
}

namespace {
[[gnu::noinline]] void decode_response(ByteView message, UlpEvents& out);
[[gnu::noinline]] void decode_command(const AdvertContext& ctx, NvmeRdmaStream* st,
                                      ByteView message, UlpEvents& out);
}  // namespace

void NvmeRdmaDecoder::decode(const AdvertContext& ctx, UlpStreamState* state, ByteView message,
                             UlpEvents& out) const {
  auto* st = static_cast<NvmeRdmaStream*>(state);
  if (!wire::opcode_is_send_family(ctx.opcode)) return;
  const bool from_host = st->host && *st->host == ctx.sender;
  const bool to_host = st->host && *st->host == ctx.receiver;
  if (ctx.length == kNvmeCqeSize) {
    // A response capsule: only on a stream known to be NVMe, and never from the host.
    if (!st->recognised || from_host) return;
    decode_response(message, out);
    return;
  }
  if (to_host) return;  // a controller sends no command capsules
  // What rejects most Sends of a stream that is not NVMe, before the whole SQE is decoded:
  // shorter than an SQE, or flags no SQE over RDMA has (both of nvme_sqe_plausible's rules).
  if (message.size() < kNvmeSqeSize || ctx.length < kNvmeSqeSize ||
      !sqe_flags_plausible(message[1]))
    return;
  decode_command(ctx, st, message, out);
}

// A queue is created by its Connect: the host's first capsule on it is the Fabrics Connect
// command (NVMe over Fabrics; the section is not re-checked here, but Linux's target,
// nvmet_req_init, answers any other command on a queue not yet connected with an error). The
// opcode and FCTYPE decide, plausible or not: a
// malformed Connect still opens an NVMe stream, which the decoder then judges. Port 4420 keeps
// the decoder asked (it claims a stream on the port and a command capsule).
bool NvmeRdmaDecoder::may_open(const AdvertContext& ctx, const UlpStreamState* /*state*/,
                               ByteView first) const {
  if (ctx.uses_port(kNvmeRdmaPort)) return true;
  return first.size() >= kNvmeSqeSize && first[0] == kNvmeFabricsOpcode &&
         first[4] == kFctypeConnect;
}

std::uint64_t nvme_command_signature(ByteView sqe) {
  if (sqe.size() < kNvmeSqeSize) return 0;
  // FNV-1a over octet 0 (opcode), octet 1's FUSE bits, octets 4..7 (NSID, or a Fabrics
  // command's FCTYPE) and 40..63 (CDW10..CDW15); CID (2..3), MPTR and DPTR are left out.
  std::uint64_t h = 0xcbf29ce484222325ULL;
  const auto mix = [&h](std::uint8_t b) { h = (h ^ b) * 0x100000001b3ULL; };
  mix(sqe[0]);
  mix(sqe[1] & 0x03);
  for (std::size_t i = 4; i < 8; ++i)
    mix(sqe[i]);
  for (std::size_t i = 40; i < kNvmeSqeSize; ++i)
    mix(sqe[i]);
  return h ? h : 1;
}

Bytes nvme_cqe_with_cid(ByteView cqe, std::uint16_t cid) {
  auto c = decode_nvme_cqe(cqe);
  if (!c) return Bytes(cqe.begin(), cqe.end());
  c->cid = cid;
  return encode_nvme_cqe(*c);
}

namespace {

// Response and command capsules, out of line: most Sends of a stream that is not NVMe are
// rejected by decode's first rules, which then run without these parts' stack frames (issue 43).
void decode_response(ByteView message, UlpEvents& out) {
  const auto cqe = decode_nvme_cqe(message);
  if (!cqe) return;
  UlpCompletion c;
  c.id = cqe->cid;
  c.success = cqe->success();
  if (!c.success) c.status = "status " + hex_number(cqe->status >> 1);
  out.completions.push_back(std::move(c));
}

void decode_command(const AdvertContext& ctx, NvmeRdmaStream* st, ByteView message,
                    UlpEvents& out) {
  const auto sqe = decode_nvme_sqe(message);
  if (!sqe || !nvme_sqe_plausible(*sqe, ctx.length)) return;
  const bool connect = sqe->opcode == kNvmeFabricsOpcode && sqe->fctype() == kFctypeConnect;
  if (!st->recognised) {
    const bool port = ctx.uses_port(kNvmeRdmaPort);
    if (!connect && !port) return;  // content alone, short of a Connect, is not enough
    st->recognised = true;
    st->evidence = connect ? "Fabrics Connect" : "port 4420 and an NVMe command capsule";
  }
  if (!st->host) st->host = ctx.sender;
  if (connect) {
    // Connect SQE: CDW10 RECFMT | QID << 16, CDW11 SQSIZE | CATTR << 16, CDW12 KATO.
    st->qid = static_cast<std::uint16_t>(sqe->cdw[0] >> 16);
    st->sqsize = static_cast<std::uint16_t>(sqe->cdw[1] & 0xFFFF);
    st->kato = sqe->cdw[2];
    if (message.size() >= kNvmeSqeSize + kNvmeConnectDataSize) {
      const ByteView data = message.subspan(kNvmeSqeSize, kNvmeConnectDataSize);
      st->subnqn = ascii_field(data.subspan(256, 256));
      st->hostnqn = ascii_field(data.subspan(512, 256));
    }
  }
  const bool admin = st->admin();
  UlpCommand cmd;
  cmd.id = sqe->cid;
  cmd.name = nvme_command_name(*sqe, st->qid ? std::optional<bool>(admin) : std::nullopt);
  cmd.operation = cmd.name.substr(0, cmd.name.find(" cid "));  // "NVMe Read", "NVMe-oF Connect"
  const NvmeDataDirection dir = nvme_data_direction(*sqe);
  if (dir != NvmeDataDirection::none) {
    const NvmeCapsuleBuffers bufs = nvme_capsule_buffers(*sqe, message);
    std::uint8_t access = 0;
    if (dir == NvmeDataDirection::controller_to_host || dir == NvmeDataDirection::both)
      access |= ddp::access::remote_write;
    if (dir == NvmeDataDirection::host_to_controller || dir == NvmeDataDirection::both)
      access |= ddp::access::remote_read;
    for (const NvmeSgl& k : bufs.keyed) {
      AdvertisedRegion r;
      r.stag = k.key;
      r.base = k.address;
      r.length = k.length;
      r.owner = ctx.sender.addr;
      r.access = access;
      r.invalidate = k.subtype == sgl_subtype::invalidate_key;
      cmd.regions.push_back(r);
    }
    cmd.partial = bufs.partial;
    if (!cmd.regions.empty()) cmd.transfer_length = nvme_command_transfer_length(*sqe, admin);
  }
  out.commands.push_back(std::move(cmd));
}

}  // namespace

}  // namespace ddpscope::ulp
