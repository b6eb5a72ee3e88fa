# SPDX-License-Identifier: GPL-2.0-or-later
# DDP over SCTP (issue 13): our endpoint on the guest kernel's SCTP against our endpoint on
# usrsctp, both directions, `ddpscope rping --llp sctp` with verified data, recorded on the link.
# Two network namespaces joined by a veth pair: k (192.0.2.1, kernel SCTP) and u (192.0.2.2,
# usrsctp). They speak SCTP over UDP (RFC 6951, port 9899): once the sctp module is loaded the
# kernel answers every native SCTP packet for a port it does not serve with an ABORT (in every
# namespace), so a user-space stack beside it cannot use native SCTP; the kernel's own UDP
# encapsulation (net.sctp.udp_port / encap_port, Linux 5.11+) is enabled in k only.
#   lab-sctp-kernel-server.pcap  kernel server in k, usrsctp client in u
#   lab-sctp-user-server.pcap    usrsctp server in u, kernel client in k
#   tests/interop/lab.sh sctp DDPSCOPE OUT      (or LAB_DDPSCOPE=DDPSCOPE lab.sh run sctp.sh OUT)

DDPSCOPE=/out/lab/ddpscope
RPING="-C 10 -S 4096 --llp sctp"

sctp_net_up() {
  modprobe sctp || return 1
  modprobe veth 2>/dev/null
  ip link set lo up
  ip netns add k && ip netns add u || return 1
  ip link add k0 type veth peer name u0 || return 1
  ip link set k0 netns k && ip link set u0 netns u || return 1
  ip -n k addr add 192.0.2.1/24 dev k0 && ip -n u addr add 192.0.2.2/24 dev u0 || return 1
  for n in k u; do ip -n $n link set lo up; ip -n $n link set ${n}0 up; done
  # No checksum offload on the veth pair: the sender's capture would show SCTP packets whose
  # CRC32c is left 0 for a device that never fills it in.
  for n in k u; do ip netns exec $n ethtool -K ${n}0 tx off gso off > /dev/null || return 1; done
  ip netns exec k sh -c 'echo 9899 > /proc/sys/net/sctp/udp_port && echo 9899 > /proc/sys/net/sctp/encap_port' ||
    { lab_note "kernel SCTP over UDP not available"; return 1; }
  lab_note "kernel SCTP over UDP in k: udp_port $(ip netns exec k cat /proc/sys/net/sctp/udp_port), encap_port $(ip netns exec k cat /proc/sys/net/sctp/encap_port)"
}

# sctp_run NAME SERVER_NS SERVER_ARGS CLIENT_NS CLIENT_ARGS
sctp_run() {
  name=$1 sns=$2 sargs=$3 cns=$4 cargs=$5
  lab_note "=== $name: server in $sns ($sargs), client in $cns ($cargs)"
  ip netns exec k tcpdump -i k0 -n -s 0 -B 8192 -w "/tmp/$name.pcap" 'udp port 9899 or sctp' \
    > "/tmp/$name.tcpdump.log" 2>&1 &
  w=$!
  sleep 2
  $T 90 ip netns exec "$sns" "$DDPSCOPE" rping -s $RPING $sargs > /tmp/srv.log 2>&1 &
  spid=$!
  sleep 4  # usrsctp under TCG can take seconds to listen
  crc=0
  $T 90 ip netns exec "$cns" "$DDPSCOPE" rping -c $RPING $cargs > /tmp/cli.log 2>&1 || crc=$?
  src=0
  wait "$spid" || src=$?
  lab_note "client exit $crc, server exit $src"
  sed 's/^/  client| /' /tmp/cli.log | tail -6
  sed 's/^/  server| /' /tmp/srv.log | tail -6
  sleep 2
  kill -INT $w
  wait $w 2>/dev/null
  lab_note "tcpdump $name: $(tr '\n' ' ' < "/tmp/$name.tcpdump.log")"
  cp "/tmp/$name.pcap" "/out/$name.pcap"
  [ "$crc" = 0 ] && [ "$src" = 0 ]
}

sctp_net_up || exit 1
fails=0
sctp_run lab-sctp-kernel-server \
  k "-a 192.0.2.1 --sctp-stack kernel" \
  u "-a 192.0.2.1 --sctp-stack user --sctp-udp-port 9899 --sctp-peer-udp-port 9899" ||
  fails=$((fails + 1))
sctp_run lab-sctp-user-server \
  u "-a 192.0.2.2 --sctp-stack user --sctp-udp-port 9899" \
  k "-a 192.0.2.2 --sctp-stack kernel" ||
  fails=$((fails + 1))
[ $fails = 0 ]
