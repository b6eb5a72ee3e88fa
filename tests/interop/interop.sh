#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Interop between our endpoint (`ddpscope rping`) on the host and Linux siw's rping in the lab VM.
#
#   tests/interop/interop.sh CASE DDPSCOPE
#     client       ddpscope rping -c  ->  siw rping -s   (host 127.0.0.1:PORT -> guest, hostfwd)
#     server       siw rping -c  ->  ddpscope rping -s   (guest 10.0.2.100:7174 -> host, guestfwd)
#     client-crc   as client, our endpoint asks for CRC (--crc)
#     server-crc   as server, our endpoint asks for CRC (--crc)
#     replay       `ddpscope replay samples/siw/siw-rping-4000.pcap --side client` against siw's
#                  rping -s (same size and count as the recording): no difference reported
#     replay-bad-stag  the same capture's server side against siw's rping -c, with the RDMA Read
#                  Requests' Data Source STag altered to 0x12345600: siw must answer with a
#                  Terminate (RDMAP / Remote Protection / Invalid STag) that our analyzer reports
#
# Passes when both rping ends exit 0 (data verified on both ends) and the guest's eth0 capture of
# the exchange analyzes with one full-operation stream, MPA revision 2, the expected CRC setting on
# both directions, and no warning or error finding (except mpa.fpdu-exceeds-mulpdu from the host
# side: qemu's user network re-segments the host's FPDUs for the guest's MSS). Exit 77 (skip)
# when DDPSCOPE has no `rping`. DDPSCOPE_RPING_ARGS adds options to our rping (e.g. --no-p2p).
# Output and captures: $LAB/interop-CASE/. Network: only 127.0.0.1 on the host, qemu's user
# network (restrict=on) inside.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
LAB="${LAB:-$REPO/build/siw-lab}"
CASE="${1:?usage: interop.sh client|server|client-crc|server-crc DDPSCOPE}"
DDPSCOPE="$(readlink -f "${2:?usage: interop.sh CASE DDPSCOPE}")"
SIZE="${SIZE:-4000}" COUNT="${COUNT:-2}"
log() { printf '[interop %s %s] %s\n' "$CASE" "$(date +%H:%M:%S)" "$*" >&2; }

sub=rping; case "$CASE" in replay*) sub=replay ;; esac
"$DDPSCOPE" "$sub" --help > /dev/null 2>&1 || { log "no 'ddpscope $sub' in $DDPSCOPE: skipped"; exit 77; }
crc_flag=(${DDPSCOPE_RPING_ARGS:-}) want_crc=false
case "$CASE" in
  client|server) ;;
  replay|replay-bad-stag) SIZE=4000 COUNT=2 ;;
  client-crc|server-crc) crc_flag+=(--crc) want_crc=true ;;
  *) echo "unknown case $CASE" >&2; exit 2 ;;
esac

OUT="$LAB/interop-$CASE"
rm -rf "$OUT" && mkdir -p "$OUT"
free_port() {  # a free loopback TCP port
  local p
  for _ in $(seq 50); do
    p=$((20000 + RANDOM % 20000))
    ss -ltn | grep -q ":$p " || { echo "$p"; return 0; }
  done
  return 1
}
PORT="$(free_port)"
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT

wait_for() {  # wait_for FILE SECONDS PID: until FILE exists while PID lives
  local i=0
  while [ ! -e "$1" ]; do
    kill -0 "$3" 2>/dev/null || { log "lab ended before $1"; return 1; }
    i=$((i + 1)); [ "$i" -gt $(($2 * 5)) ] && { log "no $1 after $2 s"; return 1; }
    sleep 0.2
  done
}

"$HERE/lab.sh" setup
params="SIZE=$SIZE COUNT=$COUNT SIW_CRC=N SIW_DEBUG=${SIW_DEBUG:-0}"
ours=0
case "$CASE" in
  client*|replay)
    LAB_LIVE="$OUT" LAB_HOSTFWD="$PORT:7174" LAB_PARAMS="$params" \
      "$HERE/lab.sh" run "$HERE/scenarios/host-client.sh" "$OUT" > "$OUT/lab.log" 2>&1 &
    lab=$!; pids+=("$lab")
    wait_for "$OUT/ready" 240 "$lab"
    # The first host -> guest connection after boot can arrive late: warm the forward up with
    # a connection that sends nothing (siw drops it when no MPA Request comes).
    timeout 10 bash -c "exec 3<>/dev/tcp/127.0.0.1/$PORT; sleep 2" || true
    if [ "$CASE" = replay ]; then
      log "ddpscope replay siw-rping-4000.pcap --side client --peer 127.0.0.1:$PORT"
      timeout 150 "$DDPSCOPE" replay "$REPO/samples/siw/siw-rping-4000.pcap" --side client \
        --peer "127.0.0.1:$PORT" --timeout 120 -v > "$OUT/ddpscope-rping.log" 2>&1 || ours=$?
    else
      log "ddpscope rping -c -a 127.0.0.1 -p $PORT -S $SIZE -C $COUNT ${crc_flag[*]}"
      timeout 150 "$DDPSCOPE" rping -c -a 127.0.0.1 -p "$PORT" -S "$SIZE" -C "$COUNT" -V \
        --timeout 120 "${crc_flag[@]}" > "$OUT/ddpscope-rping.log" 2>&1 || ours=$?
    fi
    ;;
  server*|replay-bad-stag)
    LAB_LIVE="$OUT" LAB_GUESTFWD="7174:$PORT" LAB_PARAMS="$params" \
      "$HERE/lab.sh" run "$HERE/scenarios/host-server.sh" "$OUT" > "$OUT/lab.log" 2>&1 &
    lab=$!; pids+=("$lab")
    wait_for "$OUT/ready" 240 "$lab"
    if [ "$CASE" = replay-bad-stag ]; then
      # Data Source STag of both Read Requests (after their size, 0x0fa0): a8058200 -> 12345600.
      python3 - "$REPO/samples/siw/siw-rping-4000.pcap" "$OUT/altered.pcap" <<'PY'
import sys
data = open(sys.argv[1], "rb").read()
old, new = bytes.fromhex("00000fa0a8058200"), bytes.fromhex("00000fa012345600")
assert data.count(old) == 2, data.count(old)
open(sys.argv[2], "wb").write(data.replace(old, new))
PY
      log "ddpscope replay altered.pcap --side server --peer 127.0.0.1:$PORT"
      timeout 200 "$DDPSCOPE" replay "$OUT/altered.pcap" --side server --peer "127.0.0.1:$PORT" \
        --timeout 180 -v > "$OUT/ddpscope-rping.log" 2>&1 &
    else
      log "ddpscope rping -s -a 127.0.0.1 -p $PORT -S $SIZE -C $COUNT ${crc_flag[*]}"
      timeout 200 "$DDPSCOPE" rping -s -a 127.0.0.1 -p "$PORT" -S "$SIZE" -C "$COUNT" -V \
        --timeout 180 "${crc_flag[@]}" > "$OUT/ddpscope-rping.log" 2>&1 &
    fi
    srv=$!; pids+=("$srv")
    for _ in $(seq 50); do ss -ltn | grep -q "127.0.0.1:$PORT " && break; sleep 0.2; done
    touch "$OUT/go"
    wait "$srv" || ours=$?
    ;;
esac
labrc=0
wait "$lab" || labrc=$?
pids=()
log "ddpscope rping exit $ours, lab exit $labrc, siw rping exit $(cat "$OUT/siw-exit" 2>/dev/null || echo '?')"
sed 's/^/  ddpscope| /' "$OUT/ddpscope-rping.log" | tail -10 >&2
grep -E '^\[guest|^  (server|client)\|' "$OUT/guest.log" | tail -12 | sed 's/^/  guest| /' >&2 || true
side="${CASE%-crc}"; [ "$side" = replay ] && side=client; [ "$side" = replay-bad-stag ] && side=server
pcap="$OUT/host-$side.pcap"
[ -f "$pcap" ] || { log "FAIL: no capture"; exit 1; }
"$DDPSCOPE" analyze "$pcap" --json > "$OUT/report.json" || true
"$DDPSCOPE" analyze "$pcap" > "$OUT/report.txt" || true
python3 - "$OUT/report.json" "$want_crc" "$ours" "$labrc" "$CASE" "$OUT/ddpscope-rping.log" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
want_crc = sys.argv[2] == "true"
bad_stag = sys.argv[5] == "replay-bad-stag"
problems = []
if bad_stag:
    # siw's rping client fails, the replay reports differences; siw's Terminate is in the capture.
    terms = [f for f in r["findings"] if f["code"] == "rdmap.terminate"]
    if not any("RDMAP / Remote Protection / Invalid STag" in f["message"] for f in terms):
        problems.append(f"no Terminate RDMAP / Remote Protection / Invalid STag: {[f['message'] for f in terms]}")
    expected_codes = {"rdmap.terminate", "rdmap.terminate-nonconformant"}
    # ...and the replay names the same error in its difference report.
    if "sent Terminate RDMAP / Remote Protection / Invalid STag" not in open(sys.argv[6]).read():
        problems.append("the replay did not report siw's Terminate")
else:
    expected_codes = set()
    if sys.argv[3] != "0": problems.append(f"ddpscope rping exit {sys.argv[3]}")
    if sys.argv[4] != "0": problems.append(f"siw side failed (lab exit {sys.argv[4]})")
full = [s for s in r["streams"] if s["state"] == "full-operation"]
if len(full) != 1 and not bad_stag:
    problems.append(f"{len(full)} full-operation streams")
for s in full:
    m = s["mpa"]
    if m["revision"] != 2: problems.append(f"MPA revision {m['revision']}")
    if m["crc"] != want_crc: problems.append(f"CRC {m['crc']}, wanted {want_crc}")
    for d in s["directions"]:
        if d["crc_errors"]: problems.append(f"{d['direction']}: {d['crc_errors']} CRC errors")
        if not d["fpdus"] and not bad_stag: problems.append(f"{d['direction']}: no FPDU")
# qemu's user network is a TCP proxy: the host-side sender sized its FPDUs for its own
# loopback connection (MSS 65483), and the proxy re-segments them for the guest's MSS 1460. An
# FPDU larger than the captured connection's MULPDU from the proxy side is that artifact.
proxy_dirs = {(s["id"], d["direction"]) for s in r["streams"] for d in s["directions"]
              if d["from"].startswith(("10.0.2.2:", "10.0.2.100:"))}
def artifact(f):
    return f["code"] == "mpa.fpdu-exceeds-mulpdu" and (f.get("stream"), f.get("direction")) in proxy_dirs
bad = [f for f in r["findings"] if f["severity"] != "note" and not artifact(f)
       and f["code"] not in expected_codes]
for f in r["findings"]:
    print(f"  finding frame {f['frame']}: {f['code']} ({f['severity']}) {f['message']}")
if bad: problems.append(f"{len(bad)} warning/error findings")
print("PASS" if not problems else "FAIL: " + "; ".join(problems))
sys.exit(1 if problems else 0)
PY
