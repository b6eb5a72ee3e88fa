# SPDX-License-Identifier: GPL-2.0-or-later
"""A capture of MPA probes against a listener (issue 39): one TCP connection per MPA Request
variant, each answered as Linux siw answers it: a Request it cannot parse (a foreign key, an
unknown revision) by a reset, a valid one by its MPA Reply (RFC 5044 §7.1, RFC 6581 §3: the
Enhanced flag and the IRD/ORD word in the private data) and an orderly close.
PROBES lists (name, MPA revision sent or None, CRC flag, answered with a Reply)."""
import struct

REQ_KEY = b"MPA ID Req Frame"
REP_KEY = b"MPA ID Rep Frame"
CLIENT, SERVER, PORT = bytes([10, 0, 0, 1]), bytes([10, 0, 0, 2]), 7174


def _csum(b):
    if len(b) % 2:
        b += b"\0"
    s = sum(struct.unpack(f"!{len(b) // 2}H", b))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def _frame(src, dst, sport, dport, seq, ack, flags, payload=b""):
    tcp = struct.pack("!HHIIBBHHH", sport, dport, seq, ack, 5 << 4, flags, 65535, 0, 0)
    pseudo = src + dst + struct.pack("!BBH", 0, 6, len(tcp) + len(payload))
    tcp = tcp[:16] + struct.pack("!H", _csum(pseudo + tcp + payload)) + tcp[18:]
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(tcp) + len(payload), 0, 0x4000, 64, 6, 0,
                     src, dst)
    ip = ip[:10] + struct.pack("!H", _csum(ip)) + ip[12:]
    return b"\x02\0\0\0\0\x02" + b"\x02\0\0\0\0\x01" + b"\x08\x00" + ip + tcp + payload


def _mpa(key, flags, rev, pd=b""):
    return key + bytes([flags, rev]) + struct.pack("!H", len(pd)) + pd


# RFC 6581 §3: A (peer-to-peer) with IRD 8; C (a zero-length RDMA Write as the RTR, siw's
# default) with ORD 8.
_IRD_ORD = struct.pack("!HH", 0x8000 | 8, 0x8000 | 8)
_M, _C, _ENHANCED = 0x80, 0x40, 0x10

# (name, request octets, reply octets or None for a reset, revision, crc)
_PROBES = [
    ("garbage key", b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", None, None, False),
    ("wrong revision", _mpa(REQ_KEY, 0, 7), None, 7, False),
    ("v1", _mpa(REQ_KEY, 0, 1), _mpa(REP_KEY, 0, 1), 1, False),
    ("v2", _mpa(REQ_KEY, _ENHANCED, 2, _IRD_ORD), _mpa(REP_KEY, _ENHANCED, 2, _IRD_ORD), 2, False),
    ("v2 crc", _mpa(REQ_KEY, _ENHANCED | _C, 2, _IRD_ORD),
     _mpa(REP_KEY, _ENHANCED | _C, 2, _IRD_ORD), 2, True),
]
PROBES = [(name, rev, crc, reply is not None) for name, _, reply, rev, crc in _PROBES]


def write(path, one_port=False):
    """Writes the capture; returns per probe (client port, request frame, reply frame or None).
    one_port: every connection from the same client port (a prober reusing its 4-tuple)."""
    frames, where = [], []
    for i, (_, req, rep, _, _) in enumerate(_PROBES):
        cport, cseq, sseq = 40001 + (0 if one_port else i), 1000 * (i + 1), 5000 * (i + 1)
        frames.append(_frame(CLIENT, SERVER, cport, PORT, cseq, 0, 0x02))
        frames.append(_frame(SERVER, CLIENT, PORT, cport, sseq, cseq + 1, 0x12))
        frames.append(_frame(CLIENT, SERVER, cport, PORT, cseq + 1, sseq + 1, 0x10))
        frames.append(_frame(CLIENT, SERVER, cport, PORT, cseq + 1, sseq + 1, 0x18, req))
        req_frame = len(frames)
        cend = cseq + 1 + len(req)
        if rep is None:
            frames.append(_frame(SERVER, CLIENT, PORT, cport, sseq + 1, cend, 0x14))  # RST
            where.append((cport, req_frame, None))
            continue
        frames.append(_frame(SERVER, CLIENT, PORT, cport, sseq + 1, cend, 0x18, rep))
        where.append((cport, req_frame, len(frames)))
        send = sseq + 1 + len(rep)
        frames.append(_frame(CLIENT, SERVER, cport, PORT, cend, send, 0x11))
        frames.append(_frame(SERVER, CLIENT, PORT, cport, send, cend + 1, 0x11))
        frames.append(_frame(CLIENT, SERVER, cport, PORT, cend + 1, send + 1, 0x10))
    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
        for n, fr in enumerate(frames):
            f.write(struct.pack("<IIII", 1700000000, 20 * n, len(fr), len(fr)) + fr)
    return where
