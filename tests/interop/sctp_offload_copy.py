#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
# Makes samples/sctp/lab-sctp-kernel-server-offload.pcap from lab-sctp-kernel-server.pcap: the
# capture as a host under checksum offload records it. Every packet the capturing host (SRC)
# sent over UDP (RFC 6951) gets a zero UDP checksum and a zero SCTP CRC32c, which the NIC would
# have filled in after the capture point (the lab's first recording, before offload was
# switched off on the veth, looked like this).
#   sctp_offload_copy.py IN.pcap OUT.pcap [SRC]     (SRC default 192.0.2.1)
import socket
import struct
import sys


def main():
    src = socket.inet_aton(sys.argv[3] if len(sys.argv) > 3 else "192.0.2.1")
    data = bytearray(open(sys.argv[1], "rb").read())
    magic = struct.unpack_from("<I", data, 0)[0]
    if magic != 0xA1B2C3D4 or struct.unpack_from("<I", data, 20)[0] != 1:
        sys.exit("expected a little-endian Ethernet pcap")
    off, changed = 24, 0
    while off + 16 <= len(data):
        incl = struct.unpack_from("<I", data, off + 8)[0]
        pkt = off + 16
        off = pkt + incl
        if incl < 14 + 20 + 8 + 12 or data[pkt + 12:pkt + 14] != b"\x08\x00":
            continue
        ip = pkt + 14
        ihl = (data[ip] & 0x0F) * 4
        if data[ip + 9] != 17 or data[ip + 12:ip + 16] != src:
            continue
        udp = ip + ihl
        data[udp + 6:udp + 8] = b"\x00\x00"       # UDP checksum (RFC 768: 0 = none computed)
        data[udp + 8 + 8:udp + 8 + 12] = b"\x00\x00\x00\x00"  # SCTP common header's CRC32c
        changed += 1
    open(sys.argv[2], "wb").write(data)
    print(f"{changed} packets from {socket.inet_ntoa(src)} with checksums zeroed")


if __name__ == "__main__":
    main()
