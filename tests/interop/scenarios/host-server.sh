# SPDX-License-Identifier: GPL-2.0-or-later
# Interop: siw's `rping -c` in the guest against a host-side server (our endpoint) reached
# through guestfwd 10.0.2.100:7174 -> 127.0.0.1:HOSTPORT. Params: SIZE COUNT, SIW_CRC (Y/N).
# Waits for /out/go (the host's server listens); captures eth0.
set -e
lab_up 1500
siw_param mpa_crc_required "${SIW_CRC:-N}"
touch /out/ready
wait_file /out/go 120
cap_start host-server eth0
rc=0
$T 150 rping -c -a 10.0.2.100 -S "${SIZE:-4000}" -C "${COUNT:-2}" -V > /tmp/cli.log 2>&1 || rc=$?
sed 's/^/  client| /' /tmp/cli.log | tail -15
lab_note "siw rping client exit $rc"
cap_stop
echo "$rc" > /out/siw-exit
dmesg > /out/dmesg.txt
[ "$rc" = 0 ]
