#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# /init of the siw lab's initramfs (busybox): load virtio-9p, mount the three shares (root and
# modules read-only, out writable), give the read-only root its writable scratch folders and hand
# over to the scenario's guest script. Any failure powers the VM off (qemu runs with -no-reboot,
# the kernel with panic=-1), so the host never waits longer than its own timeout.
export PATH=/bin
fail() { echo "lab-init: $*"; echo o > /proc/sysrq-trigger; sleep 5; exit 1; }
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
while read -r m; do insmod "/mod/$m" || fail "insmod $m"; done < /mod/order
o="trans=virtio,version=9p2000.L,msize=262144"
mount -t 9p -o "$o,ro,cache=loose" root /newroot || fail "mount root"
mount -t 9p -o "$o,ro,cache=loose" modules /newroot/lib/modules || fail "mount modules"
mount -t 9p -o "$o" out /newroot/out || fail "mount out"
for d in tmp run var/tmp var/lib/dhcp root var/log var/cache; do
  [ -d "/newroot/$d" ] && mount -t tmpfs -o mode=1777 tmpfs "/newroot/$d"
done
mount --move /dev /newroot/dev
mount --move /proc /newroot/proc
mount --move /sys /newroot/sys
exec switch_root /newroot /bin/sh /out/lab/guest-main.sh
