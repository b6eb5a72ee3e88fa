# SPDX-License-Identifier: GPL-2.0-or-later
# NVMe-oF over RDMA through siw: an nvmet-rdma target on a 16 MiB file-backed namespace and the
# kernel host (nvme-rdma) connected through /dev/nvme-fabrics (nvme-cli does the same), both on
# eth0's address. Sourced by samples.sh (after lab_up) or run alone (lab.sh run).
nvmeof_up() {
  for m in nvmet nvmet-rdma nvme-rdma; do modprobe "$m" || return 1; done
  mountpoint -q /sys/kernel/config || mount -t configfs none /sys/kernel/config
  truncate -s 16M /tmp/nvme.img
  c=/sys/kernel/config/nvmet
  mkdir "$c/subsystems/ddpscope-nqn" || return 1
  echo 1 > "$c/subsystems/ddpscope-nqn/attr_allow_any_host"
  mkdir "$c/subsystems/ddpscope-nqn/namespaces/1"
  echo /tmp/nvme.img > "$c/subsystems/ddpscope-nqn/namespaces/1/device_path"
  echo 1 > "$c/subsystems/ddpscope-nqn/namespaces/1/buffered_io" 2>/dev/null || true
  echo 1 > "$c/subsystems/ddpscope-nqn/namespaces/1/enable" || return 1
  mkdir "$c/ports/1"
  echo rdma > "$c/ports/1/addr_trtype"
  echo ipv4 > "$c/ports/1/addr_adrfam"
  echo "$ADDR" > "$c/ports/1/addr_traddr"
  echo 4420 > "$c/ports/1/addr_trsvcid"
  ln -s "$c/subsystems/ddpscope-nqn" "$c/ports/1/subsystems/ddpscope-nqn" || return 1
  wait_listen 4420
}

# nvmeof_io: connect one I/O queue, write 8 KiB and read 16 KiB with O_DIRECT, disconnect.
nvmeof_io() {
  echo "transport=rdma,traddr=$ADDR,trsvcid=4420,nqn=ddpscope-nqn,nr_io_queues=1" \
    > /dev/nvme-fabrics || return 1
  i=0
  while [ ! -b /dev/nvme0n1 ]; do
    i=$((i + 1)); [ $i -gt 100 ] && { lab_note "no /dev/nvme0n1"; return 1; }
    sleep 0.1
  done
  $T 30 dd if=/dev/urandom of=/tmp/w.bin bs=8192 count=1 2>/dev/null
  $T 30 dd if=/tmp/w.bin of=/dev/nvme0n1 bs=8192 count=1 oflag=direct 2>&1 | tail -1
  $T 30 dd if=/dev/nvme0n1 of=/tmp/r.bin bs=16384 count=1 iflag=direct 2>&1 | tail -1
  cmp -n 8192 /tmp/w.bin /tmp/r.bin || { lab_note "read back differs"; return 1; }
  echo 1 > /sys/class/nvme/nvme0/delete_controller
  sleep 1
}

if [ "$(cat /out/lab/scenario)" = nvmeof.sh ]; then
  lab_up 1500 || exit 1
  nvmeof_up || exit 1
  sample siw-nvmeof nvmeof_io
  [ "$SAMPLE_FAILURES" = 0 ]
fi
