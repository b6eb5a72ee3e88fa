#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The siw lab: Linux soft-iWARP (siw) in a Debian 12 VM under qemu software emulation (TCG),
# built from Debian's packages only, to record real siw captures and run interop scenarios.
#
#   tests/interop/lab.sh setup              install host packages, build kernel module, guest root,
#                                           initramfs into $LAB (idempotent; stamps per step)
#   tests/interop/lab.sh run SCRIPT OUT     boot the VM, run guest script SCRIPT (sourcing
#                                           guest-lib.sh), copy what it leaves in /out to OUT
#   tests/interop/lab.sh samples OUT        setup + the sample scenarios (scenarios/samples.sh)
#   tests/interop/lab.sh smoke [DDPSCOPE]   setup + a one-rping boot; with DDPSCOPE, exit 0 only when
#                                           the capture analyzes with no warning or error finding
#   tests/interop/lab.sh ipsec DDPSCOPE [OUT]  IKEv2 (strongSwan) ESP tunnels between two guest
#                                           namespaces, DDPSCOPE rping across each; OUT gets the
#                                           ESP captures, the clear ones and the keys (xfrm, esp_sa)
#   tests/interop/lab.sh sctp DDPSCOPE [OUT]   DDP over SCTP: DDPSCOPE rping on the guest kernel's SCTP
#                                           against DDPSCOPE rping on usrsctp (SCTP over UDP), both
#                                           directions, recorded (lab-sctp-*.pcap)
#   tests/interop/lab.sh oracle DDPSCOPE OUT   the siw Data Sink oracle (issue 40): siw_oracle.py
#                                           sends one violation per connection to siw's rping -s -P
#                                           and records siw's answer; a guest that dies (the iwcm
#                                           bug) is booted again and the case marked vm-died. OUT
#                                           gets cases.json, cases/NN-NAME.pcap (one per case) and
#                                           the boots' captures; then check with
#                                           tests/interop/check_oracle.py DDPSCOPE OUT [--observed-only]
#   tests/interop/lab.sh replay DDPSCOPE [OUT]  storage replay against live peers (issue 41,
#                                           scenarios/replay.sh): NVMe-oF host side vs nvmet,
#                                           target side vs the kernel host, injected faults, NFS
#                                           client side vs knfsd; check with
#                                           tests/interop/check_replay.py DDPSCOPE OUT
#   tests/interop/lab.sh timing [OUT]       timing samples (scenarios/timing.sh): ib_read_lat
#                                           unloaded and under netem delay, ib_read_bw under
#                                           netem loss, fio over NVMe-oF, with the tools' reports;
#                                           check with tests/capture/check_timing_lab.py
#   tests/interop/lab.sh clean              remove $LAB
#
# Environment: LAB (cache dir, default build/siw-lab), LAB_BOOT_TIMEOUT (s, default 900 for a whole
# run), LAB_SMP (default 2), LAB_MEM (MiB, default 1024), LAB_ACCEL (qemu accelerator, default
# tcg: on the 2026-12-06 host /dev/kvm opened but the guest never reached its console). For host <-> guest scenarios (`run`):
#   LAB_HOSTFWD="HOSTPORT:GUESTPORT ..."   host 127.0.0.1:HOSTPORT -> guest 10.0.2.15:GUESTPORT
#   LAB_GUESTFWD="GUESTPORT:HOSTPORT ..."  guest 10.0.2.100:GUESTPORT -> host 127.0.0.1:HOSTPORT
#                                          (a socat relay started by qemu per connection)
#   LAB_PARAMS="K=V ..."                   written to the guest's /out/lab/params (sourced)
#   LAB_DDPSCOPE=BIN                       copy the host's ddpscope binary into the guest
#                                          (/out/lab/ddpscope), for scenarios that run it
#   LAB_LIVE=DIR                           the writable share is DIR itself (not a temporary
#                                          folder), so a host-side driver sees /out files live
#
# The VM gets qemu user networking with restrict=on (no route out of the VM) and three virtio-9p
# shares: the guest root (read-only), the kernel modules (read-only) and an output folder (the
# only writable one). The guest talks to itself: siw is attached to eth0 and both ends use eth0's
# own address, so the traffic runs over the guest's lo where tcpdump records it.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
LAB="${LAB:-$REPO/build/siw-lab}"
KVER_PKG="linux-image-amd64"          # metapackage: its dependency names the kernel ABI
SRC_PKG="linux-source-6.1"
MIRROR="${LAB_MIRROR:-http://deb.debian.org/debian}"
GUEST_PKGS="rdma-core,ibverbs-providers,rdmacm-utils,perftest,tcpdump,iproute2,kmod,libibverbs1,librdmacm1"
# The storage ULPs' userspace (issue 14): iSER (tgt, open-iscsi), NFS over RDMA,
# (SMB Direct: Debian 6.1 is built without CONFIG_SMB_SERVER_SMBDIRECT and CONFIG_CIFS_SMB_DIRECT.)
GUEST_PKGS+=",tgt,open-iscsi,nfs-kernel-server,nfs-common,rpcbind"
# IPsec (issue 17): strongSwan's IKEv2 daemon and swanctl; what `ddpscope` needs to run in the
# guest from the host's build (shared read-only): ISA-L, libpcap (tcpdump's), libsctp, usrsctp, libgcrypt.
GUEST_PKGS+=",strongswan-charon,strongswan-swanctl,libstrongswan-standard-plugins,libisal2,libsctp1,libusrsctp2,ethtool"
# Timing samples (issue 42): fio drives the NVMe-oF host and reports its own latencies.
GUEST_PKGS+=",fio"
HOST_PKGS=(qemu-system-x86 debootstrap make gcc-12 bc xz-utils cpio busybox-static kmod patch
           libibverbs-dev librdmacm-dev gcc socat)

log() { printf '[lab %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "error: $*"; exit 1; }

sudo_() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }

kernel_abi() {  # e.g. 6.1.0-57-amd64, from the metapackage's dependency
  apt-cache depends "$KVER_PKG" 2>/dev/null | sed -n 's/^ *Depends: linux-image-\(.*\)$/\1/p' | head -1
}

step_packages() {
  local missing=()
  for p in "${HOST_PKGS[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  KVER="$(kernel_abi)"
  if [ -z "$KVER" ]; then
    sudo_ env DEBIAN_FRONTEND=noninteractive apt-get update -q
    KVER="$(kernel_abi)"
  fi
  [ -n "$KVER" ] || die "cannot tell the kernel ABI from $KVER_PKG"
  dpkg-query -W -f='${Status}' "linux-headers-$KVER" 2>/dev/null | grep -q "install ok installed" \
    || missing+=("linux-headers-$KVER")
  if [ ${#missing[@]} -gt 0 ]; then
    log "installing: ${missing[*]}"
    sudo_ env DEBIAN_FRONTEND=noninteractive apt-get update -q
    sudo_ env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
  fi
  echo "$KVER" > "$LAB/kver"
}

step_kernel() {  # the kernel image and its modules, unpacked (not installed on the host)
  [ -f "$LAB/stamp.kernel-$KVER" ] && return 0
  log "fetching linux-image-$KVER and $SRC_PKG"
  mkdir -p "$LAB/debs"
  (cd "$LAB/debs" && apt-get download "linux-image-$KVER" "$SRC_PKG" 2>&1 | grep -v '^W: Download is performed unsandboxed' >&2 || true)
  rm -rf "$LAB/kernel" && mkdir -p "$LAB/kernel"
  dpkg-deb -x "$LAB"/debs/linux-image-"$KVER"_*.deb "$LAB/kernel"
  [ -f "$LAB/kernel/boot/vmlinuz-$KVER" ] || die "no vmlinuz in linux-image-$KVER"
  touch "$LAB/stamp.kernel-$KVER"
}

step_siw() {  # siw.ko out of tree from linux-source's drivers/infiniband/sw/siw/, against the headers
  [ -f "$LAB/stamp.siw-$KVER" ] && return 0
  log "building siw.ko against linux-headers-$KVER"
  rm -rf "$LAB/siwbuild" && mkdir -p "$LAB/siwbuild"
  dpkg-deb --fsys-tarfile "$LAB"/debs/"$SRC_PKG"_*.deb \
    | tar -xO "./usr/src/$SRC_PKG.tar.xz" | xz -dc \
    | tar -x -C "$LAB/siwbuild" --strip-components=1 --wildcards "$SRC_PKG/drivers/infiniband/sw/siw/*"
  (cd "$LAB/siwbuild" && patch -p1 -s < "$HERE/siw-module-params.patch")
  nice make -s -C "/usr/src/linux-headers-$KVER" M="$LAB/siwbuild/drivers/infiniband/sw/siw" \
    CONFIG_RDMA_SIW=m modules -j2 >&2
  local mods="$LAB/kernel/lib/modules/$KVER"
  mkdir -p "$mods/updates"
  cp "$LAB/siwbuild/drivers/infiniband/sw/siw/siw.ko" "$mods/updates/siw.ko"
  depmod -b "$LAB/kernel" "$KVER"
  touch "$LAB/stamp.siw-$KVER"
}

step_root() {  # the guest root: debootstrap minbase with rdma-core userspace
  mkdir -p "$LAB/root/lib/modules" "$LAB/root/out" 2>/dev/null || true  # mount points for the shares
  if [ -f "$LAB/stamp.root" ]; then
    # The stamp holds the package list the root was made with: packages added to GUEST_PKGS
    # since are installed into it (apt in a chroot) instead of building it again.
    [ "$(cat "$LAB/stamp.root")" = "$GUEST_PKGS" ] && return 0
    log "guest root: installing what GUEST_PKGS added"
    cp /etc/resolv.conf "$LAB/root/etc/resolv.conf"
    mount -t proc proc "$LAB/root/proc"
    local rc=0
    chroot "$LAB/root" env DEBIAN_FRONTEND=noninteractive apt-get update -q >&2 &&
      chroot "$LAB/root" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
        --no-install-recommends $(echo "$GUEST_PKGS" | tr , ' ') >&2 || rc=$?
    chroot "$LAB/root" apt-get clean
    umount "$LAB/root/proc"
    [ $rc -eq 0 ] || return $rc
    echo "$GUEST_PKGS" > "$LAB/stamp.root"
    return 0
  fi
  log "debootstrap minbase into $LAB/root"
  rm -rf "$LAB/root"
  nice debootstrap --variant=minbase --include="$GUEST_PKGS" bookworm "$LAB/root" "$MIRROR" >&2
  mkdir -p "$LAB/root/lib/modules" "$LAB/root/out"
  echo "$GUEST_PKGS" > "$LAB/stamp.root"
}

step_initramfs() {  # busybox + the modules for virtio-9p and virtio-net; /init mounts the shares
  local img="$LAB/initramfs-$KVER.cpio.gz"
  if [ -f "$img" ] && [ "$img" -nt "$HERE/initramfs-init.sh" ]; then return 0; fi
  log "initramfs"
  local d="$LAB/initramfs"
  rm -rf "$d" && mkdir -p "$d"/{bin,mod,proc,sys,dev,newroot}
  cp /bin/busybox "$d/bin/busybox"
  for a in sh mount umount mkdir insmod switch_root sleep cat echo ls; do ln -s busybox "$d/bin/$a"; done
  : > "$d/mod/order"
  local m f
  for m in 9p 9pnet_virtio virtio_pci virtio_net; do
    modprobe -d "$LAB/kernel" -S "$KVER" --show-depends "$m" | awk '$1=="insmod"{print $2}'
  done | awk '!seen[$0]++' | while read -r f; do
    cp "$f" "$d/mod/"
    basename "$f" >> "$d/mod/order"
  done
  cp "$HERE/initramfs-init.sh" "$d/init" && chmod +x "$d/init"
  (cd "$d" && find . | cpio -o -H newc --quiet | gzip -1) > "$img"
}

setup() {
  mkdir -p "$LAB"
  local t0=$SECONDS
  step_packages
  step_kernel
  step_siw
  step_root
  step_initramfs
  log "setup done in $((SECONDS - t0)) s"
}

# run SCRIPT OUTDIR: boot, run SCRIPT as the guest's scenario, copy /out to OUTDIR.
run_vm() {
  local script="$1" dest="$2"
  KVER="$(cat "$LAB/kver")"
  local run; run="$(mktemp -d "$LAB/run.XXXXXX")"
  # shellcheck disable=SC2064
  trap "rm -rf '$run'" EXIT
  if [ -n "${LAB_LIVE:-}" ]; then mkdir -p "$LAB_LIVE"; ln -s "$(cd "$LAB_LIVE" && pwd)" "$run/out"; fi
  mkdir -p "$run/out/lab"
  printf '%s\n' ${LAB_PARAMS:-} > "$run/out/lab/params"
  local net="user,id=n0,restrict=on" f
  for f in ${LAB_HOSTFWD:-}; do net="$net,hostfwd=tcp:127.0.0.1:${f%%:*}-10.0.2.15:${f##*:}"; done
  for f in ${LAB_GUESTFWD:-}; do
    net="$net,guestfwd=tcp:10.0.2.100:${f%%:*}-cmd:socat STDIO TCP4:127.0.0.1:${f##*:}"
  done
  cp "$HERE/guest-main.sh" "$HERE/guest-lib.sh" "$script" "$run/out/lab/"
  cp "$HERE"/scenarios/*.sh "$run/out/lab/" 2>/dev/null || true
  cp "$HERE/siw_oracle.py" "$run/out/lab/"   # the oracle's crafting peer (scenarios/oracle.sh)
  [ -x "$LAB/siw-bad-rkey" ] && cp "$LAB/siw-bad-rkey" "$run/out/lab/"
  # The host's ddpscope for scenarios that run it in the guest (/out/lab/ddpscope; the guest
  # root has its runtime libraries).
  [ -n "${LAB_DDPSCOPE:-}" ] && cp "$LAB_DDPSCOPE" "$run/out/lab/ddpscope"
  echo "$(basename "$script")" > "$run/out/lab/scenario"
  local t0; t0=$(date +%s.%N)
  log "booting (timeout ${LAB_BOOT_TIMEOUT:-900} s), scenario $(basename "$script")"
  local rc=0
  timeout --kill-after=10 "${LAB_BOOT_TIMEOUT:-900}" \
    qemu-system-x86_64 -machine "pc,accel=${LAB_ACCEL:-tcg}" -cpu max -smp "${LAB_SMP:-2}" -m "${LAB_MEM:-1024}" \
      -no-user-config -nodefaults -display none -no-reboot \
      -serial "file:$run/out/console.log" \
      -kernel "$LAB/kernel/boot/vmlinuz-$KVER" -initrd "$LAB/initramfs-$KVER.cpio.gz" \
      -append "console=ttyS0 panic=-1 quiet loglevel=4 mitigations=off tsc=unstable i8042.noaux i8042.nokbd i8042.nopnp" \
      -netdev "$net" -device virtio-net-pci,netdev=n0,romfile= \
      -fsdev local,id=r,path="$LAB/root",security_model=none,readonly=on \
      -device virtio-9p-pci,fsdev=r,mount_tag=root \
      -fsdev local,id=m,path="$LAB/kernel/lib/modules",security_model=none,readonly=on \
      -device virtio-9p-pci,fsdev=m,mount_tag=modules \
      -fsdev local,id=o,path="$(readlink -f "$run/out")",security_model=none \
      -device virtio-9p-pci,fsdev=o,mount_tag=out \
    || rc=$?
  local t1; t1=$(date +%s.%N)
  log "VM ran $(printf '%.1f' "$(echo "$t1 - $t0" | bc)") s (qemu exit $rc)"
  rm -rf "$run/out/lab"
  if [ -z "${LAB_LIVE:-}" ]; then mkdir -p "$dest"; cp -a "$run/out/." "$dest/"; else dest="$LAB_LIVE"; fi
  rm -rf "$run"
  trap - EXIT
  [ -f "$dest/status" ] || { log "guest left no status; console tail:"; tail -20 "$dest/console.log" >&2; return 1; }
  log "guest status: $(cat "$dest/status")"
  grep -q '^ok' "$dest/status"
}

build_helpers() {  # the wrong-rkey client, compiled on the host against Debian's libibverbs/librdmacm
  local bin="$LAB/siw-bad-rkey"
  if [ -x "$bin" ] && [ "$bin" -nt "$HERE/siw-bad-rkey.c" ]; then return 0; fi
  gcc -O1 -Wall -o "$bin" "$HERE/siw-bad-rkey.c" -lrdmacm -libverbs
}

job="${1:-}"
shift || true
case "$job" in
  setup) setup ;;
  run)
    [ $# -eq 2 ] || die "usage: lab.sh run SCRIPT OUTDIR"
    setup; build_helpers; run_vm "$1" "$2" ;;
  samples)
    setup; build_helpers; run_vm "$HERE/scenarios/samples.sh" "${1:-$LAB/samples}" ;;
  smoke)  # [DDPSCOPE]: also analyze the capture; any warning or error finding fails
    setup; rm -rf "$LAB/smoke"; run_vm "$HERE/scenarios/smoke.sh" "$LAB/smoke"
    if [ $# -ge 1 ]; then
      "$1" analyze "$LAB/smoke/smoke-rping.pcap" --json > "$LAB/smoke/report.json" || die "analysis failed"
      python3 - "$LAB/smoke/report.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
bad = [f for f in r["findings"] if f["severity"] != "note"]
ok = len(r["streams"]) == 1 and r["streams"][0]["state"] == "full-operation" and not bad
print("smoke capture: %d frames, %d streams, findings %s" % (r["frames"], len(r["streams"]),
      [(f["code"], f["frame"]) for f in r["findings"]]))
sys.exit(0 if ok else 1)
PY
    fi ;;
  ipsec)  # DDPSCOPE [OUT]: IKEv2 tunnels between two guest namespaces, ddpscope rping across
    [ $# -ge 1 ] || die "usage: lab.sh ipsec DDPSCOPE [OUT]"
    setup; rm -rf "${2:-$LAB/ipsec}"
    LAB_DDPSCOPE="$1" run_vm "$HERE/scenarios/ipsec.sh" "${2:-$LAB/ipsec}"
    python3 "$HERE/ipsec_samples.py" "${2:-$LAB/ipsec}" ;;
  sctp)  # DDPSCOPE [OUT]: our endpoint on kernel SCTP against our endpoint on usrsctp, both ways
    [ $# -ge 1 ] || die "usage: lab.sh sctp DDPSCOPE [OUT]"
    setup; rm -rf "${2:-$LAB/sctp}"
    LAB_DDPSCOPE="$1" run_vm "$HERE/scenarios/sctp.sh" "${2:-$LAB/sctp}" ;;
  oracle)  # DDPSCOPE OUT: boots until every case ran (a dead guest is booted again, at most 8 boots)
    [ $# -ge 2 ] || die "usage: lab.sh oracle DDPSCOPE OUT"
    setup; rm -rf "$2"; mkdir -p "$2"
    out="$(cd "$2" && pwd)" boot=0 next=0
    while :; do
      LAB_LIVE="$out/boot-$boot" LAB_BOOT_TIMEOUT="${LAB_BOOT_TIMEOUT:-480}" \
        LAB_PARAMS="START=$next BOOT=$boot ONLY=${ORACLE_ONLY:-}" \
        run_vm "$HERE/scenarios/oracle.sh" "$out/boot-$boot" || log "boot $boot did not end cleanly"
      next="$(python3 "$HERE/oracle_collect.py" next "$out" "$boot")"
      [ "$next" = done ] && break
      boot=$((boot + 1))
      [ $boot -lt 8 ] || die "8 boots and the cases are not done"
      log "the guest died: boot $boot continues at case $next"
    done
    python3 "$HERE/oracle_collect.py" collect "$out" ;;
  replay)  # DDPSCOPE [OUT]: storage captures replayed against nvmet, the kernel NVMe host and knfsd
    [ $# -ge 1 ] || die "usage: lab.sh replay DDPSCOPE [OUT]"
    setup; rm -rf "${2:-$LAB/replay}"
    LAB_DDPSCOPE="$1" run_vm "$HERE/scenarios/replay.sh" "${2:-$LAB/replay}" ;;
  timing)  # [OUT]: delay, loss and NVMe-oF fio samples with the tools' own reports (issue 42)
    setup; build_helpers; rm -rf "${1:-$LAB/timing}"
    run_vm "$HERE/scenarios/timing.sh" "${1:-$LAB/timing}" ;;
  clean) rm -rf "$LAB" ;;
  *) echo "usage: $0 setup|run SCRIPT OUT|samples [OUT]|smoke [DDPSCOPE]|ipsec DDPSCOPE [OUT]|sctp DDPSCOPE [OUT]|oracle DDPSCOPE OUT|replay DDPSCOPE [OUT]|timing [OUT]|clean" >&2; exit 2 ;;
esac
