// SPDX-License-Identifier: GPL-2.0-or-later
// RPC-over-RDMA version 1 (RFC 8166): transport header, RPC message start and CM private data
// codecs, and the advertisement decoder (see rpcrdma.h for the wire layout).
#include "ddpscope/ulp/rpcrdma.h"

#include "ddpscope/ddp/rules.h"
#include "ddpscope/wire/rdmap.h"

namespace ddpscope::ulp {
namespace {

// An XDR cursor over a message: every read is bounds-checked; a failed one leaves ok false.
struct Xdr {
  ByteView d;
  std::size_t at = 0;
  bool ok = true;
  std::uint32_t u32() {
    if (!ok || d.size() - at < 4 || at > d.size()) {
      ok = false;
      return 0;
    }
    const std::uint32_t v = (static_cast<std::uint32_t>(d[at]) << 24) |
                            (static_cast<std::uint32_t>(d[at + 1]) << 16) |
                            (static_cast<std::uint32_t>(d[at + 2]) << 8) | d[at + 3];
    at += 4;
    return v;
  }
  std::uint64_t u64() {
    const std::uint64_t hi = u32();
    return (hi << 32) | u32();
  }
  void skip_opaque() {  // a variable-length opaque: length, then the octets padded to 4
    const std::uint32_t n = u32();
    const std::uint64_t padded = (static_cast<std::uint64_t>(n) + 3) & ~std::uint64_t{3};
    if (!ok || padded > d.size() - at) {
      ok = false;
      return;
    }
    at += static_cast<std::size_t>(padded);
  }
};
void put32(ByteWriter& w, std::uint32_t v) {
  w.u8(static_cast<std::uint8_t>(v >> 24));
  w.u8(static_cast<std::uint8_t>(v >> 16));
  w.u8(static_cast<std::uint8_t>(v >> 8));
  w.u8(static_cast<std::uint8_t>(v));
}
void put_segment(ByteWriter& w, const RdmaSegment& s) {
  put32(w, s.handle);
  put32(w, s.length);
  put32(w, static_cast<std::uint32_t>(s.offset >> 32));
  put32(w, static_cast<std::uint32_t>(s.offset));
}
RdmaSegment segment(Xdr& x) {
  RdmaSegment s;
  s.handle = x.u32();
  s.length = x.u32();
  s.offset = x.u64();
  return s;
}
// A write chunk: count, then that many segments (within the message's and the cap's bounds).
bool write_chunk(Xdr& x, std::vector<RdmaSegment>& out, std::size_t& budget, bool& truncated) {
  const std::uint32_t n = x.u32();
  if (!x.ok || n > (x.d.size() - x.at) / 16) return false;
  for (std::uint32_t i = 0; i < n; ++i) {
    const RdmaSegment s = segment(x);
    if (budget == 0) {
      truncated = true;
      continue;
    }
    --budget;
    out.push_back(s);
  }
  return x.ok;
}

const char* nfs3_name(std::uint32_t proc) {
  static const char* const names[] = {
      "NULL",    "GETATTR",     "SETATTR", "LOOKUP", "ACCESS",   "READLINK", "READ",   "WRITE",
      "CREATE",  "MKDIR",       "SYMLINK", "MKNOD",  "REMOVE",   "RMDIR",    "RENAME", "LINK",
      "READDIR", "READDIRPLUS", "FSSTAT",  "FSINFO", "PATHCONF", "COMMIT"};
  return proc < std::size(names) ? names[proc] : nullptr;
}

}  // namespace

std::optional<RpcRdmaHeader> decode_rpcrdma_header(ByteView m) {
  // The four fixed words first, without building the header and its lists: most messages a
  // decoder is shown are no RPC-over-RDMA (version 1, a known procedure).
  if (m.size() < 16 || load_be32(&m[4]) != 1 || load_be32(&m[12]) > rpcrdma_proc::error)
    return std::nullopt;
  Xdr x{m};
  RpcRdmaHeader h;
  h.xid = x.u32();
  h.vers = x.u32();
  h.credit = x.u32();
  h.proc = x.u32();
  if (!x.ok || h.vers != 1 || h.proc > rpcrdma_proc::error) return std::nullopt;
  if (h.proc == rpcrdma_proc::done) {
    h.size = x.at;
    return h;
  }
  if (h.proc == rpcrdma_proc::error) {
    h.error = x.u32();
    if (!x.ok || (h.error != 1 && h.error != 2)) return std::nullopt;
    if (h.error == 1) x.u64();  // rdma_vers_low, rdma_vers_high
    if (!x.ok) return std::nullopt;
    h.size = x.at;
    return h;
  }
  if (h.proc == rpcrdma_proc::msgp) x.u64();  // rdma_align, rdma_thresh
  std::size_t budget = kRpcRdmaMaxSegments;
  // Read list.
  for (;;) {
    const std::uint32_t more = x.u32();
    if (!x.ok || more > 1) return std::nullopt;
    if (more == 0) break;
    ReadSegment r;
    r.position = x.u32();
    r.segment = segment(x);
    if (!x.ok) return std::nullopt;
    if (budget == 0) {
      h.truncated = true;
      continue;
    }
    --budget;
    h.reads.push_back(r);
  }
  // Write list.
  for (;;) {
    const std::uint32_t more = x.u32();
    if (!x.ok || more > 1) return std::nullopt;
    if (more == 0) break;
    std::vector<RdmaSegment> chunk;
    if (!write_chunk(x, chunk, budget, h.truncated)) return std::nullopt;
    if (h.writes.size() < kRpcRdmaMaxSegments) h.writes.push_back(std::move(chunk));
  }
  // Reply chunk.
  const std::uint32_t reply = x.u32();
  if (!x.ok || reply > 1) return std::nullopt;
  if (reply == 1) {
    std::vector<RdmaSegment> chunk;
    if (!write_chunk(x, chunk, budget, h.truncated)) return std::nullopt;
    h.reply = std::move(chunk);
  }
  h.size = x.at;
  return h;
}

Bytes encode_rpcrdma_header(const RpcRdmaHeader& h) {
  Bytes b;
  ByteWriter w(b);
  put32(w, h.xid);
  put32(w, h.vers);
  put32(w, h.credit);
  put32(w, h.proc);
  if (h.proc == rpcrdma_proc::error) {
    put32(w, h.error);
    if (h.error == 1) {
      put32(w, 1);
      put32(w, 1);
    }
    return b;
  }
  for (const ReadSegment& r : h.reads) {
    put32(w, 1);
    put32(w, r.position);
    put_segment(w, r.segment);
  }
  put32(w, 0);
  for (const auto& chunk : h.writes) {
    put32(w, 1);
    put32(w, static_cast<std::uint32_t>(chunk.size()));
    for (const RdmaSegment& s : chunk)
      put_segment(w, s);
  }
  put32(w, 0);
  if (h.reply) {
    put32(w, 1);
    put32(w, static_cast<std::uint32_t>(h.reply->size()));
    for (const RdmaSegment& s : *h.reply)
      put_segment(w, s);
  } else {
    put32(w, 0);
  }
  return b;
}

std::optional<RpcCall> decode_rpc_call(ByteView m) {
  Xdr x{m};
  RpcCall c;
  c.xid = x.u32();
  const std::uint32_t type = x.u32();
  const std::uint32_t rpcvers = x.u32();
  c.prog = x.u32();
  c.vers = x.u32();
  c.proc = x.u32();
  if (!x.ok || type != 0 || rpcvers != 2) return std::nullopt;
  return c;
}

std::optional<RpcReply> decode_rpc_reply(ByteView m) {
  Xdr x{m};
  RpcReply r;
  r.xid = x.u32();
  const std::uint32_t type = x.u32();
  r.reply_stat = x.u32();
  if (!x.ok || type != 1 || r.reply_stat > 1) return std::nullopt;
  if (r.reply_stat == 0) {  // MSG_ACCEPTED: verifier, accept_stat
    x.u32();                // flavor
    x.skip_opaque();
    r.accept_stat = x.u32();
    if (!x.ok) return std::nullopt;
    r.accepted_success = r.accept_stat == 0;
  }
  return r;
}

Bytes encode_rpc_call(const RpcCall& c) {
  Bytes b;
  ByteWriter w(b);
  for (std::uint32_t v : {c.xid, 0u, 2u, c.prog, c.vers, c.proc, 0u, 0u, 0u, 0u})
    put32(w, v);  // ..., cred AUTH_NONE (flavor, length), verf AUTH_NONE
  return b;
}

Bytes encode_rpc_reply(const RpcReply& r) {
  Bytes b;
  ByteWriter w(b);
  for (std::uint32_t v : {r.xid, 1u, r.reply_stat, 0u, 0u, r.accept_stat})
    put32(w, v);
  return b;
}

std::string rpc_call_name(const RpcCall& c) {
  const std::string xid = " xid " + hex_number(c.xid);
  if (c.prog == 100003 && c.vers == 3)
    if (const char* n = nfs3_name(c.proc)) return std::string("NFSv3 ") + n + xid;
  if (c.prog == 100003 && c.vers == 4 && c.proc <= 1)
    return std::string("NFSv4 ") + (c.proc == 0 ? "NULL" : "COMPOUND") + xid;
  return "RPC prog " + std::to_string(c.prog) + " vers " + std::to_string(c.vers) + " proc " +
         std::to_string(c.proc) + xid;
}

std::optional<RpcRdmaCmPrivateData> decode_rpcrdma_cm(ByteView pd) {
  if (pd.size() < 8) return std::nullopt;
  Xdr x{pd};
  if (x.u32() != kRpcRdmaCmMagic) return std::nullopt;
  RpcRdmaCmPrivateData c;
  c.version = pd[4];
  c.remote_invalidation = pd[5] & 0x01;
  c.max_send = pd[6];
  c.max_recv = pd[7];
  if (c.version != 1) return std::nullopt;
  return c;
}

Bytes encode_rpcrdma_cm(const RpcRdmaCmPrivateData& c) {
  Bytes b;
  ByteWriter w(b);
  put32(w, kRpcRdmaCmMagic);
  w.u8(c.version);
  w.u8(c.remote_invalidation ? 1 : 0);
  w.u8(c.max_send);
  w.u8(c.max_recv);
  return b;
}

std::string RpcRdmaStream::describe() const {
  if (!recognised) return {};
  std::string s = "by " + evidence;
  if (cm_request)
    s += std::string("; remote invalidation ") +
         (cm_request->remote_invalidation ? "offered" : "not offered");
  if (credit) s += "; credits " + std::to_string(credit);
  return s;
}

std::unique_ptr<UlpStreamState> RpcRdmaDecoder::new_stream() const {
  return std::make_unique<RpcRdmaStream>();
}

void RpcRdmaDecoder::setup(UlpStreamState* state, const UlpSetup& setup) const {
  auto* st = static_cast<RpcRdmaStream*>(state);
  if (setup.request) st->cm_request = decode_rpcrdma_cm(*setup.request);
  if (setup.reply) st->cm_reply = decode_rpcrdma_cm(*setup.reply);
  if (st->cm_request || st->cm_reply) {
    st->recognised = true;
    st->evidence = "RPC-over-RDMA CM private data";
    st->requester = setup.initiator;
  }
}

namespace {
// The rest of decode, out of line: most Sends of a stream that is not this ULP are rejected by
// decode's first rules, which then run without this part's stack frame (issue 43).
[[gnu::noinline]] void decode_rpcrdma_body(const AdvertContext& ctx, RpcRdmaStream* st,
                                           const std::optional<RpcRdmaHeader>& h, ByteView message,
                                           UlpEvents& out);
}  // namespace

void RpcRdmaDecoder::decode(const AdvertContext& ctx, UlpStreamState* state, ByteView message,
                            UlpEvents& out) const {
  auto* st = static_cast<RpcRdmaStream*>(state);
  if (!wire::opcode_is_send_family(ctx.opcode)) return;
  const auto h = decode_rpcrdma_header(message);
  if (!h) return;
  decode_rpcrdma_body(ctx, st, h, message, out);
}

// Every message of an RPC-over-RDMA connection, its first too, is a transport header: XID,
// version, credits, procedure (RFC 8166 §4.2). A requester may open with a version its peer
// answers with ERR_VERS before it falls back to version 1, so any small version number is
// allowed here; that other versions keep the version in the second word is assumed (the one
// published version, 1, is the only one checked against its RFC). Port 20049 keeps the decoder
// asked.
bool RpcRdmaDecoder::may_open(const AdvertContext& ctx, const UlpStreamState* /*state*/,
                              ByteView first) const {
  if (ctx.uses_port(kNfsRdmaPort)) return true;
  if (first.size() < 16) return false;
  const std::uint32_t vers = load_be32(&first[4]);
  return vers >= 1 && vers <= 0xFF;
}

namespace {

void decode_rpcrdma_body(const AdvertContext& ctx, RpcRdmaStream* st,
                         const std::optional<RpcRdmaHeader>& h, ByteView message, UlpEvents& out) {
  const ByteView rpc = message.subspan(h->size);
  std::optional<RpcCall> call;
  std::optional<RpcReply> reply;
  if (h->proc == rpcrdma_proc::msg || h->proc == rpcrdma_proc::msgp) {
    call = decode_rpc_call(rpc);
    if (!call) reply = decode_rpc_reply(rpc);
    // The inline RPC message repeats the transport header's XID (RFC 8166).
    if ((call && call->xid != h->xid) || (reply && reply->xid != h->xid)) return;
  }
  if (!st->recognised) {
    const bool port = ctx.uses_port(kNfsRdmaPort);
    if (!call && !reply && !port) return;  // a bare header, short of an RPC message or the port
    st->recognised = true;
    st->evidence = call    ? "an RPC Call in an RDMA_MSG"
                   : reply ? "an RPC Reply in an RDMA_MSG"
                           : "port 20049 and an RPC-over-RDMA header";
  }
  if (!st->requester) {
    if (call || (!reply && (!h->reads.empty() || !h->writes.empty())))
      st->requester = ctx.sender;
    else if (reply)
      st->requester = ctx.receiver;
    else if (ctx.from_initiator)
      st->requester = *ctx.from_initiator ? ctx.sender : ctx.receiver;
  }
  const bool from_requester = st->requester && *st->requester == ctx.sender;
  if (!from_requester) {
    // The responder: its Reply (or error) completes the Call of its XID.
    if (call) return;
    if (h->proc == rpcrdma_proc::done) return;
    st->credit = h->credit;
    UlpCompletion c;
    c.id = h->xid;
    if (h->proc == rpcrdma_proc::error) {
      c.success = false;
      c.status = "RDMA_ERROR " + std::string(h->error == 1 ? "ERR_VERS" : "ERR_CHUNK");
    } else if (reply && !reply->accepted_success) {
      c.success = false;
      c.status = "reply_stat " + std::to_string(reply->reply_stat) + " accept_stat " +
                 std::to_string(reply->accept_stat);
    }
    // What the responder says it wrote: the returned write list's and reply chunk's lengths.
    if (auto it = st->writable.find(h->xid); it != st->writable.end()) {
      std::uint64_t written = 0;
      for (const auto& chunk : h->writes)
        for (const RdmaSegment& s : chunk)
          written += s.length;
      if (h->reply)
        for (const RdmaSegment& s : *h->reply)
          written += s.length;
      if (written < it->second) c.residual = it->second - written;
      st->writable.erase(it);
    }
    out.completions.push_back(std::move(c));
    return;
  }
  if (reply || h->proc == rpcrdma_proc::error || h->proc == rpcrdma_proc::done) return;
  UlpCommand cmd;
  cmd.id = h->xid;
  cmd.name = call ? rpc_call_name(*call) : "RPC Call xid " + hex_number(h->xid) + " (RDMA_NOMSG)";
  cmd.operation = cmd.name.substr(0, cmd.name.find(" xid "));  // "NFSv3 READ", "RPC Call"
  cmd.partial = h->truncated;
  std::uint64_t writable = 0;
  const auto add = [&](const RdmaSegment& s, std::uint8_t access) {
    if (s.length == 0) return;
    AdvertisedRegion r;
    r.stag = s.handle;
    r.base = s.offset;
    r.length = s.length;
    r.owner = ctx.sender.addr;
    r.access = access;
    r.invalidate = true;
    cmd.regions.push_back(r);
  };
  for (const ReadSegment& r : h->reads)
    add(r.segment, ddp::access::remote_read);
  for (const auto& chunk : h->writes)
    for (const RdmaSegment& s : chunk) {
      add(s, ddp::access::remote_write);
      writable += s.length;
    }
  if (h->reply)
    for (const RdmaSegment& s : *h->reply) {
      add(s, ddp::access::remote_write);
      writable += s.length;
    }
  if (writable > 0) {
    // The Reply's lengths say what was written; without room to remember the Call's, its
    // transfer is not judged.
    if (st->writable.size() < RpcRdmaStream::kMaxOutstanding || st->writable.count(h->xid))
      st->writable[h->xid] = writable;
    else
      cmd.partial = true;
  }
  out.commands.push_back(std::move(cmd));
}

}  // namespace

}  // namespace ddpscope::ulp
