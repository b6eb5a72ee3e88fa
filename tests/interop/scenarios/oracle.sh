# SPDX-License-Identifier: GPL-2.0-or-later
# The siw Data Sink oracle (issue 40), one boot: siw's `rping -s -P` and the crafting peer
# (siw_oracle.py, started from /out/lab) both in the guest over lo, the whole boot recorded as
# /out/oracle-boot-BOOT.pcap. Params: START (first case index), BOOT (boot number), ONLY
# (comma-separated case names, optional). siw_oracle.py exits 3 when the guest kernel hit a BUG
# (the iwcm bug): the host driver (lab.sh oracle) boots again and continues after that case.
set -e
lab_up 1500
lab_note "kernel $(uname -r), siw $(cat /sys/module/siw/srcversion 2>/dev/null || echo '?')"
uname -r > /out/kernel-release
cap_start "oracle-boot-${BOOT:-0}" lo
rc=0
python3 /out/lab/siw_oracle.py --host "$ADDR" --out /out --start "${START:-0}" \
  ${ONLY:+--only "$ONLY"} || rc=$?
lab_note "siw_oracle.py exit $rc"
dmesg > "/out/dmesg-boot-${BOOT:-0}.txt"
cap_stop || lab_note "the capture of boot ${BOOT:-0} is incomplete"
echo "$rc" > "/out/oracle-exit-${BOOT:-0}"
[ "$rc" = 0 ] || [ "$rc" = 3 ]
