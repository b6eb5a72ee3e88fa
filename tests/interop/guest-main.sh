#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# PID 1 of the siw lab guest after switch_root: runs the scenario named in /out/lab/scenario
# (sourcing guest-lib.sh), writes /out/status ("ok" or "fail: ...") and powers off.
export PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root
cd /out/lab || { echo o > /proc/sysrq-trigger; exit 1; }
start=$(cut -d' ' -f1 /proc/uptime)
echo "guest: up at $start s (kernel uptime)" > /out/guest.log
. /out/lab/guest-lib.sh
. /out/lab/params
scenario=$(cat /out/lab/scenario)
if ( . "/out/lab/$scenario" ) >> /out/guest.log 2>&1; then
  echo ok > /out/status.tmp
else
  echo "fail: $scenario exited $?" > /out/status.tmp
fi
echo "guest: done at $(cut -d' ' -f1 /proc/uptime) s" >> /out/guest.log
mv /out/status.tmp /out/status
sync
echo o > /proc/sysrq-trigger
sleep 10
