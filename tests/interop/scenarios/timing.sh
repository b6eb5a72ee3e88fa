# SPDX-License-Identifier: GPL-2.0-or-later
# Timing samples (issue 42): real siw traffic with known delay and loss, and an NVMe-oF run with
# fio's own latency report beside it, so `ddpscope timing` can be checked against figures it did
# not compute itself (tests/capture/check_timing_lab.py).
#   tests/interop/lab.sh timing OUT
# Each sample leaves NAME.pcap, and the tools' own reports: NAME.client.txt / NAME.server.txt
# (perftest), NAME.fio.json (fio), NAME.netem.txt (the qdisc as tc shows it during the run).
# netem sits on lo's egress, where tcpdump's tap is after the qdisc: every packet is captured
# DELAY after it was sent, so a Read's Request -> Response time in the capture is one DELAY (the
# Response's) plus the unloaded figure, while perftest, timing both directions, sees two.
lab_up 1500 || exit 1

keep_logs() {
  cp /tmp/cli.log "/out/$1.client.txt"
  cp /tmp/srv.log "/out/$1.server.txt"
  tc qdisc show dev lo > "/out/$1.netem.txt"
}

# lat_run NAME SIZE ITERS: ib_read_lat over rdma_cm, its report kept.
lat_run() {
  sample "$1" perf_pair ib_read_lat "$2" "$3"
  keep_logs "$1"
}

lat_run siw-timing-read-lat 64 300  # unloaded: the figure the delays add to
tc qdisc add dev lo root netem delay 5ms || exit 1
lat_run siw-timing-read-lat-delay5ms 64 300
tc qdisc del dev lo root
# Loss: retransmissions delay some Reads; the timing report names them on those Reads.
tc qdisc add dev lo root netem loss 2% || exit 1
sample siw-timing-read-loss perf_pair ib_read_bw 8192 200
keep_logs siw-timing-read-loss
tc qdisc del dev lo root

# NVMe-oF, two I/O queues, fio with mixed sizes and queue depth 4: fio's completion latency
# (clat, submission to completion at the host) against ddpscope's command capsule -> response
# capsule on the wire.
. /out/lab/nvmeof.sh
nvmeof_up || exit 1
nvmeof_fio() {
  echo "transport=rdma,traddr=$ADDR,trsvcid=4420,nqn=ddpscope-nqn,nr_io_queues=2" \
    > /dev/nvme-fabrics || return 1
  i=0
  while [ ! -b /dev/nvme0n1 ]; do
    i=$((i + 1)); [ $i -gt 100 ] && { lab_note "no /dev/nvme0n1"; return 1; }
    sleep 0.1
  done
  rc=0
  $T 120 fio --name=mixed --filename=/dev/nvme0n1 --direct=1 --ioengine=libaio --iodepth=4 \
    --numjobs=2 --rw=randrw --rwmixread=60 --bssplit=4k/50:16k/30:64k/20 --size=8M \
    --io_size=1536K --randrepeat=1 --group_reporting=0 --output-format=json \
    --output=/out/siw-timing-nvmeof-fio.fio.json || rc=$?
  echo 1 > /sys/class/nvme/nvme0/delete_controller
  sleep 1
  return $rc
}
sample siw-timing-nvmeof-fio nvmeof_fio

lab_note "sample failures: $SAMPLE_FAILURES"
[ "$SAMPLE_FAILURES" = 0 ]
