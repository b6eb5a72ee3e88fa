#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# Helpers for siw lab scenarios, sourced inside the guest (busybox-free: Debian's dash, iproute2,
# kmod, rdma-core, tcpdump). Every waiting step is bounded by `timeout`.
set -u
T="timeout --kill-after=5"

lab_note() { echo "[guest $(cut -d' ' -f1 /proc/uptime)] $*"; }

# lab_up [LO_MTU]: network, RDMA modules, siw on eth0. ADDR = eth0's own address.
# The sample captures use lo MTU 1500 (TCP MSS 1460) so that FPDUs are Ethernet-sized and RDMA
# READ/WRITE payloads span several DDP segments, as on a real link.
lab_up() {
  ip link set lo up
  ip link set lo mtu "${1:-1500}"
  ip link set eth0 up
  ip addr add 10.0.2.15/24 dev eth0   # qemu's user-net guest address; traffic to it stays on lo
  ADDR=10.0.2.15
  for m in crc32c_generic ib_core ib_uverbs rdma_ucm siw; do modprobe "$m" || return 1; done
  if [ "${SIW_DEBUG:-0}" = 1 ]; then   # siw's pr_debug lines (dynamic debug) into dmesg
    mount -t debugfs none /sys/kernel/debug 2>/dev/null
    echo 'module siw +p' > /sys/kernel/debug/dynamic_debug/control || true
  fi
  rdma link add siw1 type siw netdev eth0 || return 1
  lab_note "siw up: $(rdma link show | tr '\n' ' ')"
  lab_note "siw parameters: $(cd /sys/module/siw/parameters && grep -H . * | tr '\n' ' ')"
}

# siw_param NAME VALUE: the module parameters added by siw-module-params.patch (read at connect)
siw_param() { echo "$2" > "/sys/module/siw/parameters/$1"; }

# cap_start NAME [IF]: tcpdump on lo (or IF), no immediate mode, 16 MiB buffer (software
# emulation drops packets in immediate mode).
cap_start() {
  CAP_NAME=$1
  tcpdump -i "${2:-lo}" -n -s 0 -B 16384 -w "/tmp/$1.pcap" tcp > "/tmp/$1.tcpdump.log" 2>&1 &
  CAP_PID=$!
  i=0
  while ! grep -q listening "/tmp/$1.tcpdump.log" 2>/dev/null; do
    i=$((i + 1)); [ $i -gt 100 ] && { lab_note "tcpdump did not start"; return 1; }
    sleep 0.1
  done
}

# cap_stop: pause so the last segments are buffered, stop tcpdump, copy the capture to /out and
# fail when the kernel dropped a packet.
cap_stop() {
  sleep 2
  kill -INT "$CAP_PID"
  $T 20 sh -c "while kill -0 $CAP_PID 2>/dev/null; do sleep 0.2; done"
  wait "$CAP_PID" 2>/dev/null || true
  cp "/tmp/$CAP_NAME.pcap" "/out/$CAP_NAME.pcap"
  drops=$(sed -n 's/^\([0-9]*\) packets dropped by kernel.*/\1/p' "/tmp/$CAP_NAME.tcpdump.log")
  lab_note "capture $CAP_NAME: $(tr '\n' ' ' < "/tmp/$CAP_NAME.tcpdump.log")"
  [ "${drops:-x}" = 0 ] || { lab_note "capture $CAP_NAME dropped ${drops:-?} packets"; return 1; }
}

# wait_listen PORT: until a TCP listener on PORT exists (the iWARP CM listens in the kernel).
wait_listen() {
  i=0
  while ! ss -ltn 2>/dev/null | grep -q ":$1 "; do
    i=$((i + 1)); [ $i -gt 100 ] && { lab_note "nothing listens on $1"; return 1; }
    sleep 0.1
  done
}

# pair SECONDS PORT "SERVER CMD" "CLIENT CMD": server in the background, then client; both bounded.
pair() {
  secs=$1 port=$2 srv=$3 cli=$4
  lab_note "server: $srv"
  $T "$secs" sh -c "$srv" > /tmp/srv.log 2>&1 &
  spid=$!
  wait_listen "$port" || { kill "$spid" 2>/dev/null; return 1; }
  lab_note "client: $cli"
  crc=0
  $T "$secs" sh -c "$cli" > /tmp/cli.log 2>&1 || crc=$?
  [ "$crc" = 0 ] || { sleep 2; kill "$spid" 2>/dev/null; }   # a failed client: stop waiting
  src=0
  wait "$spid" || src=$?
  lab_note "client exit $crc, server exit $src"
  sed 's/^/  client| /' /tmp/cli.log | tail -15
  sed 's/^/  server| /' /tmp/srv.log | tail -15
  [ "$crc" = 0 ] && [ "$src" = 0 ]
}

# rping_pair SIZE COUNT: rping over rdma_cm with verification on both ends.
rping_pair() {
  pair 120 7174 "rping -s -a $ADDR -S $1 -C $2 -V" "rping -c -a $ADDR -S $1 -C $2 -V"
}

# perf_pair TOOL SIZE ITERS: a perftest benchmark over rdma_cm (-R) on siw1.
perf_pair() {
  pair 60 18515 "$1 -R -d siw1 -s $2 -n $3 -F" "sleep 1; $1 -R -d siw1 -s $2 -n $3 -F $ADDR"
}

# sample NAME CMD...: one capture around one scenario step. A failed attempt (or a capture with
# drops) is recorded again, up to 3 times: perftest's client can race its server's second
# rdma_cm listen ("Connection refused"). A sample that never succeeds leaves NAME.failed.pcap
# and counts in SAMPLE_FAILURES.
SAMPLE_FAILURES=0
sample() {
  name=$1; shift
  attempt=1
  while :; do
    lab_note "=== $name (attempt $attempt): $*"
    ok=1
    cap_start "$name" || ok=0
    "$@" || ok=0
    cap_stop || ok=0
    [ $ok = 1 ] && break
    if [ $attempt -ge 3 ]; then
      mv "/out/$name.pcap" "/out/$name.failed.pcap" 2>/dev/null
      SAMPLE_FAILURES=$((SAMPLE_FAILURES + 1))
      lab_note "=== $name FAILED"
      break
    fi
    attempt=$((attempt + 1))
    sleep 2
  done
  echo "$name $ok attempts=$attempt $*" >> /out/samples.txt
}

# bad_rkey_pair: rping -s against siw-bad-rkey (advertises a wrong STag); the server's RDMA
# READ draws a Terminate from the client's siw. Success = a Terminate was captured.
bad_rkey_pair() {
  lab_note "server: rping -s -a $ADDR -S 4000 -C 1 -V"
  $T 60 rping -s -a "$ADDR" -S 4000 -C 1 -V > /tmp/srv.log 2>&1 &
  spid=$!
  wait_listen 7174 || return 1
  $T 60 /out/lab/siw-bad-rkey "$ADDR" 7174 > /tmp/cli.log 2>&1 || true
  wait "$spid" || true
  sed 's/^/  client| /' /tmp/cli.log
  sed 's/^/  server| /' /tmp/srv.log | tail -8
  dmesg | grep -i 'siw' | tail -5 | sed 's/^/  dmesg| /'
}

# wait_file PATH SECONDS: until the host creates PATH in the writable share.
wait_file() {
  i=0
  while [ ! -e "$1" ]; do
    i=$((i + 1)); [ $i -gt $(($2 * 10)) ] && { lab_note "no $1 after $2 s"; return 1; }
    sleep 0.1
  done
}
