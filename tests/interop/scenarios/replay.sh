# SPDX-License-Identifier: GPL-2.0-or-later
# Replay of storage captures against live Linux peers over siw (issue 41), in one guest:
#   1. an NVMe-oF host <-> nvmet session is captured (lab-replay-nvmeof), then its host side is
#      replayed by `ddpscope replay --all-streams --side client` against a fresh nvmet
#      configured the same (lab-replay-nvmeof-host: as JSON, and again as text);
#   2. its target side is replayed by `ddpscope replay --all-streams --side server` against the
#      kernel host (nvme-rdma), which connects, writes the captured data and reads it back
#      (lab-replay-nvmeof-target; what the guest saw in lab-replay-nvmeof-target.io);
#   3. the same with a fault in the replayed target: an RDMA Write 512 octets past the host's
#      buffer (lab-replay-nvmeof-overrun) and a Send with Invalidate of a wrong key
#      (lab-replay-nvmeof-invalidate): the kernel host's siw answers with a Terminate;
#   4. an NFS/RDMA session (knfsd and the kernel client) is captured (lab-replay-nfs), then its
#      client side is replayed against the same live knfsd (lab-replay-nfs-client).
# Each replay is recorded (NAME.pcap) beside its report (NAME.json or NAME.txt); check with
# tests/interop/check_replay.py DDPSCOPE OUT.
#   tests/interop/lab.sh replay DDPSCOPE OUT
DDPSCOPE=/out/lab/ddpscope
. /out/lab/nvmeof.sh
. /out/lab/storage.sh
# The target side's listener (any free port: the kernel host is told where).
TPORT=4430
# Message numbers (as the report numbers them) of the I/O queue (stream 1) of an
# NVMe-oF capture made by nvmeof_io: the 16 KiB Read's RDMA Write and its response (a Send
# with Invalidate). check_replay.py checks that the faults hit these.
OVERRUN_AT=17 INVALIDATE_AT=18

# nvmet_fresh: the namespace's file made again (zeros) behind the same subsystem and port.
nvmet_fresh() {
  c=/sys/kernel/config/nvmet/subsystems/ddpscope-nqn/namespaces/1
  echo 0 > "$c/enable" && rm -f /tmp/nvme.img && truncate -s 16M /tmp/nvme.img &&
    echo 1 > "$c/enable"
}

# replay_run NAME EXT ARGS...: `ddpscope replay ARGS` recorded; its report in /out/NAME.EXT.
replay_run() {
  name=$1 ext=$2; shift 2
  cap_start "$name" || return 1
  rc=0
  $T 300 "$DDPSCOPE" replay "$@" > "/out/$name.$ext" 2> "/out/$name.err" || rc=$?
  cap_stop || true
  lab_note "$name: replay exit $rc"
  echo "$name $rc" >> /out/replays.txt
  tail -25 "/out/$name.$ext" | sed 's/^/  | /'
  sed 's/^/  ! /' "/out/$name.err" | tail -10
}

# target_run NAME [--fault F]: the capture's target side replayed against the kernel host, which
# connects, writes the captured host's 8 KiB and reads 16 KiB back with O_DIRECT.
target_run() {
  name=$1; shift
  cap_start "$name" || return 1
  $T 120 "$DDPSCOPE" replay /out/lab-replay-nvmeof.pcap --all-streams --side server \
    --peer "$ADDR:$TPORT" --json "$@" > "/out/$name.json" 2> "/out/$name.err" &
  rpid=$!
  wait_listen $TPORT || { kill $rpid; return 1; }
  io=/out/$name.io
  : > "$io"
  if echo "transport=rdma,traddr=$ADDR,trsvcid=$TPORT,nqn=ddpscope-nqn,nr_io_queues=1,ctrl_loss_tmo=0" \
       > /dev/nvme-fabrics 2>> "$io"; then
    echo "connected" >> "$io"
    if wait_block /dev/nvme0n1; then
      for f in model serial subsysnqn transport state; do
        echo "$f: $(cat /sys/class/nvme/nvme0/$f 2>/dev/null)" >> "$io"
      done
      echo "size: $(cat /sys/block/nvme0n1/size 2>/dev/null) sectors" >> "$io"
      $T 30 dd if=/out/lab-replay-nvmeof.written.bin of=/dev/nvme0n1 bs=8192 count=1 \
        oflag=direct >> "$io" 2>&1 && echo "write: ok" >> "$io"
      rm -f /tmp/r2.bin
      $T 30 dd if=/dev/nvme0n1 of=/tmp/r2.bin bs=16384 count=1 iflag=direct >> "$io" 2>&1 &&
        echo "read: ok" >> "$io"
      cmp -n 8192 /out/lab-replay-nvmeof.written.bin /tmp/r2.bin >> "$io" 2>&1 &&
        echo "read back: same as written" >> "$io"
    fi
    echo 1 > /sys/class/nvme/nvme0/delete_controller 2>/dev/null
  fi
  rc=0
  wait $rpid || rc=$?
  cap_stop || true
  dmesg | grep -E 'nvme|siw' | tail -8 > "/out/$name.dmesg"
  lab_note "$name: replay exit $rc"
  echo "$name $rc" >> /out/replays.txt
  sed 's/^/  io| /' "$io"
  sed 's/^/  ! /' "/out/$name.err" | tail -10
  sleep 2
}

lab_up 1500 || exit 1
nvmeof_up || exit 1
sample lab-replay-nvmeof nvmeof_io || exit 1
cp /tmp/w.bin /out/lab-replay-nvmeof.written.bin
# 1. The host side against a fresh nvmet (twice: the report as JSON, then as text).
nvmet_fresh || exit 1
replay_run lab-replay-nvmeof-host json /out/lab-replay-nvmeof.pcap --all-streams --side client \
  --peer "$ADDR:4420" --json
nvmet_fresh || exit 1
replay_run lab-replay-nvmeof-host-text txt /out/lab-replay-nvmeof.pcap --all-streams \
  --side client --peer "$ADDR:4420"
# 2. The target side against the kernel host.
target_run lab-replay-nvmeof-target
# 3. Faults in the replayed target.
target_run lab-replay-nvmeof-overrun --fault "overrun:$OVERRUN_AT:1"
target_run lab-replay-nvmeof-invalidate --fault "invalidate-key:$INVALIDATE_AT:1"
# 4. NFS/RDMA: the client side against the live knfsd that served the capture.
nfs_up || { lab_note "NFS/RDMA set-up failed"; exit 1; }
sample lab-replay-nfs nfs_io || exit 1
replay_run lab-replay-nfs-client json /out/lab-replay-nfs.pcap --all-streams --side client \
  --peer "$ADDR:20049" --json
exit 0
