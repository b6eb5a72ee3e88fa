# SPDX-License-Identifier: GPL-2.0-or-later
# Interop: siw's `rping -s` in the guest, a host-side client (our endpoint) through
# hostfwd 127.0.0.1:HOSTPORT -> 10.0.2.15:7174. Params: SIZE COUNT, SIW_CRC (Y/N).
# Writes /out/ready when the server listens; captures eth0 (guest <-> qemu's user network).
set -e
lab_up 1500
siw_param mpa_crc_required "${SIW_CRC:-N}"
cap_start host-client eth0
$T 150 rping -s -a "$ADDR" -S "${SIZE:-4000}" -C "${COUNT:-2}" -V > /tmp/srv.log 2>&1 &
spid=$!
wait_listen 7174
touch /out/ready
rc=0
wait "$spid" || rc=$?
sed 's/^/  server| /' /tmp/srv.log | tail -15
lab_note "siw rping server exit $rc"
cap_stop
echo "$rc" > /out/siw-exit
dmesg > /out/dmesg.txt
[ "$rc" = 0 ]
