# SPDX-License-Identifier: GPL-2.0-or-later
# iWARP over IPsec (issue 17): two network namespaces joined by a veth pair (a0 192.0.2.1,
# b0 192.0.2.2), one strongSwan charon in each, IKEv2 with a pre-shared key negotiating an ESP
# tunnel-mode CHILD_SA between the two hosts, and `ddpscope rping` (MPA rev 2, CRC on) across
# it. For each ESP proposal (AES-GCM-16 128, and AES-CBC-128 with HMAC-SHA-256-128):
#   lab-esp-NAME-tunnel.pcap        the outer link (a0): IKE and ESP, as a tap on the wire sees it
#   lab-esp-NAME-tunnel-in-a.pcap,  the same exchange decrypted: what a0 and b0 saw come out of
#   lab-esp-NAME-tunnel-in-b.pcap   the tunnel (a tunnel-mode packet is seen again on its way in
#                                   after decryption); `lab.sh ipsec` merges the two on the host
#                                   into lab-esp-NAME-tunnel-clear.pcap
#   lab-esp-NAME-tunnel.xfrm        `ip -s xfrm state` in namespace a: both SAs with their keys
# Needs the host's ddpscope in the guest: LAB_DDPSCOPE=build/dev/analyzer/ddpscope
#   tests/interop/lab.sh ipsec DDPSCOPE OUT      (or LAB_DDPSCOPE=DDPSCOPE lab.sh run ipsec.sh OUT)

DDPSCOPE=/out/lab/ddpscope

ipsec_net_up() {
  for m in veth esp4 xfrm_user xfrm_algo af_key authenc cbc hmac sha256_generic aes_generic \
           gcm ghash_generic ctr seqiv echainiv; do
    modprobe "$m" 2>/dev/null || lab_note "modprobe $m failed (built in?)"
  done
  ip link set lo up
  ip netns add a || return 1
  ip netns add b || return 1
  ip link add a0 type veth peer name b0 || return 1
  ip link set a0 netns a && ip link set b0 netns b || return 1
  ip -n a addr add 192.0.2.1/24 dev a0 && ip -n b addr add 192.0.2.2/24 dev b0 || return 1
  for n in a b; do ip -n $n link set lo up; ip -n $n link set ${n}0 up; done
}

# charon_conf NS: strongswan.conf and swanctl.conf of namespace NS (a initiates, b responds)
charon_conf() {
  ns=$1 esp=$2
  d=/tmp/ipsec-$ns
  mkdir -p "$d"
  if [ "$ns" = a ]; then me=192.0.2.1 peer=192.0.2.2; else me=192.0.2.2 peer=192.0.2.1; fi
  cat > "$d/strongswan.conf" <<EOF
charon {
  load_modular = no
  load = random nonce openssl aes sha1 sha2 hmac gcm kdf pem pkcs1 x509 pubkey kernel-netlink socket-default vici
  filelog {
    lab {
      path = $d/charon.log
      default = 1
      ike = 2
      knl = 1
    }
  }
  plugins {
    vici {
      socket = unix://$d/charon.vici
    }
  }
}
swanctl {
  load = pem pkcs1 x509 pubkey openssl random
}
EOF
  cat > "$d/swanctl.conf" <<EOF
connections {
  lab {
    version = 2
    local_addrs = $me
    remote_addrs = $peer
    proposals = aes128-sha256-modp2048
    local {
      auth = psk
      id = $me
    }
    remote {
      auth = psk
      id = $peer
    }
    children {
      rping {
        mode = tunnel
        esp_proposals = $esp
      }
    }
  }
}
secrets {
  ike-lab {
    id-a = 192.0.2.1
    id-b = 192.0.2.2
    secret = "ddpscope-lab-not-a-secret"
  }
}
EOF
}

# charon_up NS: charon in NS, in a mount namespace of its own (a private /run for its pid file)
charon_up() {
  ns=$1 d=/tmp/ipsec-$1
  ip netns exec "$ns" unshare -m sh -c \
    "mount -t tmpfs none /run && STRONGSWAN_CONF=$d/strongswan.conf exec /usr/lib/ipsec/charon" \
    > "$d/charon.out" 2>&1 &
  eval "CHARON_$ns=\$!"
  i=0
  while [ ! -S "$d/charon.vici" ]; do
    i=$((i + 1)); [ $i -gt 200 ] && { lab_note "charon in $ns did not start"; cat "$d/charon.out"; return 1; }
    sleep 0.1
  done
  STRONGSWAN_CONF=$d/strongswan.conf ip netns exec "$ns" swanctl --load-all --file "$d/swanctl.conf" \
    --uri "unix://$d/charon.vici" > "$d/load.log" 2>&1 || { cat "$d/load.log"; return 1; }
  lab_note "charon in $ns (pid $(eval echo \$CHARON_$ns)): $(tr '\n' ' ' < "$d/load.log")"
}

charon_down() {
  for ns in a b; do
    STRONGSWAN_CONF=/tmp/ipsec-$ns/strongswan.conf ip netns exec "$ns" swanctl --terminate --ike lab --uri "unix:///tmp/ipsec-$ns/charon.vici" \
      > /dev/null 2>&1
  done
  sleep 1
  kill "$CHARON_a" "$CHARON_b" 2>/dev/null
  wait "$CHARON_a" "$CHARON_b" 2>/dev/null
  ip -n a xfrm state flush; ip -n a xfrm policy flush
  ip -n b xfrm state flush; ip -n b xfrm policy flush
  rm -rf /tmp/ipsec-a /tmp/ipsec-b
}

# ipsec_run NAME ESP_PROPOSAL: one tunnel, one rping exchange, three files in /out
ipsec_run() {
  name=$1 esp=$2
  lab_note "=== ipsec $name: ESP $esp"
  charon_conf a "$esp" && charon_conf b "$esp" || return 1
  charon_up b && charon_up a || return 1
  # The wire first (IKE included), then what comes out of the tunnel at each end.
  ip netns exec a tcpdump -i a0 -n -s 0 -B 8192 -w "/tmp/$name.pcap" 'esp or udp port 500 or udp port 4500' \
    > "/tmp/$name.tcpdump.log" 2>&1 &
  w=$!
  ip netns exec a tcpdump -i a0 -n -s 0 -B 8192 -w "/tmp/$name-in-a.pcap" tcp > /tmp/$name-a.log 2>&1 &
  ca=$!
  ip netns exec b tcpdump -i b0 -n -s 0 -B 8192 -w "/tmp/$name-in-b.pcap" tcp > /tmp/$name-b.log 2>&1 &
  cb=$!
  sleep 2
  STRONGSWAN_CONF=/tmp/ipsec-a/strongswan.conf $T 60 ip netns exec a swanctl --initiate --child rping --uri unix:///tmp/ipsec-a/charon.vici \
    > "/tmp/$name.initiate.log" 2>&1 || { cat "/tmp/$name.initiate.log"; tail -30 /tmp/ipsec-a/charon.log; return 1; }
  lab_note "SAs: $(ip -n a xfrm state | grep -c '^src') in a, $(ip -n b xfrm state | grep -c '^src') in b"
  out=/out/lab-esp-$name-tunnel
  ip -n a -s xfrm state > "$out.xfrm"
  $T 60 ip netns exec b "$DDPSCOPE" rping -s -a 192.0.2.2 -C 20 -S 4096 --crc > /tmp/srv.log 2>&1 &
  spid=$!
  sleep 1
  crc=0
  $T 60 ip netns exec a "$DDPSCOPE" rping -c -a 192.0.2.2 -C 20 -S 4096 --crc > /tmp/cli.log 2>&1 || crc=$?
  src=0
  wait "$spid" || src=$?
  lab_note "rping client exit $crc, server exit $src"
  sed 's/^/  client| /' /tmp/cli.log | tail -5
  sed 's/^/  server| /' /tmp/srv.log | tail -5
  sleep 2
  kill -INT $w $ca $cb
  wait $w $ca $cb 2>/dev/null
  for f in "$name.tcpdump" "$name-a" "$name-b"; do lab_note "tcpdump $f: $(tr '\n' ' ' < "/tmp/$f.log")"; done
  cp "/tmp/$name.pcap" "$out.pcap"
  cp "/tmp/$name-in-a.pcap" "$out-in-a.pcap"
  cp "/tmp/$name-in-b.pcap" "$out-in-b.pcap"
  charon_down
  [ "$crc" = 0 ] && [ "$src" = 0 ]
}

ipsec_net_up || exit 1
fails=0
ipsec_run gcm128 aes128gcm16 || fails=$((fails + 1))
ipsec_run cbc-sha256 aes128-sha256 || fails=$((fails + 1))
[ $fails = 0 ]
