#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Engine throughput benchmark (issues 12, 19 and 43): `ddpscope analyze --json` with its default
# options (CRC check, placement, all validation, payload retention on, as many threads as
# cores: the figure that counts), with `--threads 1` (one core), with `--retain-mib 0`, with
# `--threads 2` (when `ddpscope analyze --help` lists it), the lower bound of any engine on the
# file (bench/ddpscope_read_floor: the same reader, with and without CRC32C over the frames;
# `dd`, the kernel's copy alone), `tshark -q -z expert` (Wireshark's built-in iWARP dissectors)
# and `cat FILE > /dev/null`, on each capture shape of bench/make_capture.sh (write, reuse,
# small), RUNS times each, interleaved. For each it reports the minimum wall clock and minimum
# CPU time (user + system), throughput, peak RSS, and its ratio to the reader + CRC32C floor
# measured in the same runs; then the instructions per FPDU of the default run on a 10 MB cut
# of the shape (callgrind; BENCH_CALLGRIND=0 leaves it out). The machine this was written on
# is shared: the minimum of interleaved runs is the figure that means something.
#   bench/run_bench.sh BUILD_DIR [SIZE_MB] [RUNS] [SHAPES]   (defaults 200, 3, "write reuse small";
#   "esp" adds the write shape under ESP, analysed with its keys)
# BENCH_CAPTURE=FILE uses an existing capture instead of generating one (one shape, named after
# the file; no copy is made).
set -euo pipefail
build="${1:?usage: run_bench.sh BUILD_DIR [SIZE_MB] [RUNS] [SHAPES]}"
size_mb="${2:-200}"
runs="${3:-3}"
shapes="${4:-write reuse small}"
ddpscope="$build/analyzer/ddpscope"
floor="$build/bench/ddpscope_read_floor"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
threads=no
if "$ddpscope" analyze --help 2>/dev/null | grep -q -- '--threads'; then threads=yes; fi
have_floor=no
[ -x "$floor" ] && have_floor=yes

# One run: "wall_s cpu_s maxrss_kib". Wall clock and the child's own CPU time (user + system,
# from wait4: posix_spawn, so nothing of the Python parent is counted), microsecond clocks; peak
# RSS from /usr/bin/time in a separate run (wait4's figure includes the spawning parent's).
measure() {
  local rss
  rss=$(/usr/bin/time -f "%M" "$@" 2>&1 >/dev/null | tail -1)
  python3 - "$rss" "$@" <<'PY'
import os, sys, time
rss, argv = sys.argv[1], sys.argv[2:]
null = [(os.POSIX_SPAWN_OPEN, fd, "/dev/null", os.O_WRONLY, 0) for fd in (1, 2)]
t0 = time.perf_counter()
pid = os.posix_spawnp(argv[0], argv, os.environ, file_actions=null)
_, status, ru = os.wait4(pid, 0)
wall = time.perf_counter() - t0
print(f"{wall:.4f} {ru.ru_utime + ru.ru_stime:.4f} {rss}")
PY
}

# The minima of a run file: "wall cpu maxrss".
minima() {
  echo "$(sort -n -k1 "$1" | head -1 | cut -d' ' -f1) $(sort -n -k2 "$1" | head -1 | cut -d' ' -f2)" \
    "$(sort -n -k3 "$1" | tail -1 | cut -d' ' -f3)"
}

bench_shape() {  # shape, capture
  local shape="$1" cap="$2" bytes i
  bytes=$(stat -c %s "$cap")
  # An ESP capture with its keys beside it (make_capture.sh's esp shape writes CAPTURE.esp_sa):
  # ddpscope gets them with --esp-sa, tshark in its profile's esp_sa table with decryption and
  # ICV checks on (as tests/plugin/esp_test.py runs it).
  local keys=() tshark_prefs=() tshark_home="$HOME"
  if [ -f "${cap%.pcap}.esp_sa" ]; then
    keys=(--esp-sa "${cap%.pcap}.esp_sa")
    tshark_home="$work/tshark-home"
    mkdir -p "$tshark_home/.config/wireshark"
    cp "${cap%.pcap}.esp_sa" "$tshark_home/.config/wireshark/esp_sa"
    tshark_prefs=(-o esp.enable_encryption_decode:TRUE -o esp.enable_authentication_check:TRUE)
    echo "ESP keys: ${cap%.pcap}.esp_sa"
  fi
  cat "$cap" > /dev/null  # every tool reads it from the page cache
  echo "== shape $shape: $bytes octets ($((bytes / 1048576)) MiB), $runs runs each, interleaved"
  echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
  local kinds="default threads1 retain0 threads2 tshark cat"
  [ "$have_floor" = yes ] && kinds="$kinds floor0 floor1 dd"
  for k in $kinds; do : > "$work/$k"; done
  for ((i = 1; i <= runs; i++)); do
    measure "$ddpscope" analyze "$cap" --json "${keys[@]}" >> "$work/default"
    [ "$threads" = yes ] && measure "$ddpscope" analyze "$cap" --json --threads 1 "${keys[@]}" >> "$work/threads1"
    measure "$ddpscope" analyze "$cap" --json --retain-mib 0 "${keys[@]}" >> "$work/retain0"
    [ "$threads" = yes ] && measure "$ddpscope" analyze "$cap" --json --threads 2 "${keys[@]}" >> "$work/threads2"
    measure env HOME="$tshark_home" tshark -q -z expert "${tshark_prefs[@]}" -r "$cap" >> "$work/tshark"
    measure cat "$cap" >> "$work/cat"
    if [ "$have_floor" = yes ]; then
      measure "$floor" "$cap" >> "$work/floor0"
      measure "$floor" "$cap" crc >> "$work/floor1"
      measure dd if="$cap" of=/dev/null bs=256k >> "$work/dd"
    fi
  done
  echo "load average after:  $(cut -d' ' -f1-3 /proc/loadavg)"
  local ref_w="" ref_c=""
  if [ "$have_floor" = yes ]; then read -r ref_w ref_c _ <<< "$(minima "$work/floor1")"; fi
  line() {  # kind, label
    if [ ! -s "$work/$1" ]; then
      printf '  %-34s n/a (no --threads)\n' "$2"
      return
    fi
    local w c m ratio=""
    read -r w c m <<< "$(minima "$work/$1")"
    [ -n "$ref_w" ] && ratio=$(printf '  = %5.2fx / %5.2fx the floor' \
      "$(echo "$w/$ref_w" | bc -l)" "$(echo "$c/$ref_c" | bc -l)")
    printf '  %-34s wall %7.3f s (%6.0f MB/s)  CPU %7.3f s  RSS %7d KiB%s\n' "$2" "$w" \
      "$(echo "$bytes/$w/1000000" | bc -l)" "$c" "$m" "$ratio"
  }
  line default "ddpscope analyze --json (default)"
  line threads1 "  ... --threads 1 (one core)"
  line retain0 "  ... --retain-mib 0"
  line threads2 "  ... --threads 2"
  if [ "$have_floor" = yes ]; then
    line floor1 "floor: reader + CRC32C"
    line floor0 "floor: reader only"
    line dd "floor: dd bs=256k"
  fi
  line tshark "tshark -q -z expert"
  line cat "cat FILE > /dev/null"
  local dw dc tw tc
  read -r dw dc _ <<< "$(minima "$work/default")"
  read -r tw tc _ <<< "$(minima "$work/tshark")"
  printf '  ratio tshark / ddpscope default: wall %5.1fx  CPU %5.1fx\n' \
    "$(echo "$tw/$dw" | bc -l)" "$(echo "$tc/$dc" | bc -l)"
  instructions "$shape"
}

# Instructions per FPDU (on small, a 64-octet Send: its FPDU and the ACK frame) of the default
# `analyze --json` on a 10 MB cut of the shape, all in (both threads, start-up and the report):
# callgrind counts instructions, not seconds, so this figure does not move with the machine's
# load (issue 43's yardstick; bench/RESULTS.md). BENCH_CALLGRIND=0 leaves it out.
instructions() {  # shape
  if [ "${BENCH_CALLGRIND:-1}" = 0 ] || [ -n "${BENCH_CAPTURE:-}" ]; then return; fi
  if ! command -v valgrind >/dev/null; then
    echo "  instructions per FPDU: n/a (no valgrind)"
    return
  fi
  local cut="$work/$1-cut10.pcap" keys=() ir fpdus
  "$(dirname "$0")/make_capture.sh" "$ddpscope" 10 "$cut" "$1" >/dev/null
  [ -f "${cut%.pcap}.esp_sa" ] && keys=(--esp-sa "${cut%.pcap}.esp_sa")
  ir=$(valgrind --tool=callgrind --callgrind-out-file=/dev/null "$ddpscope" analyze "$cut" \
         --json -o /dev/null "${keys[@]}" 2>&1 | sed -n 's/.*Collected : *\([0-9]*\).*/\1/p')
  fpdus=$("$ddpscope" analyze "$cut" --json -q "${keys[@]}" | python3 -c '
import json, sys
print(sum(d.get("fpdus", 0) for s in json.load(sys.stdin)["streams"] for d in s["directions"]))')
  if [ -z "$ir" ] || [ "${fpdus:-0}" -eq 0 ]; then
    echo "  instructions per FPDU: n/a (callgrind said nothing, or no FPDU in the cut)"
    return
  fi
  printf '  instructions (callgrind, 10 MB cut, default options): %.2f M for %d FPDUs = %d a FPDU\n' \
    "$(echo "$ir/1000000" | bc -l)" "$fpdus" "$((ir / fpdus))"
  rm -f "$work/$1"-cut10.*
}

echo "ddpscope: $ddpscope ($("$ddpscope" --version 2>/dev/null | head -1)); threads: $threads; floor: $have_floor"
echo "(ratios: wall / CPU time over the reader + CRC32C floor's, minima of the same interleaved runs)"
if [ -n "${BENCH_CAPTURE:-}" ]; then
  bench_shape "$(basename "$BENCH_CAPTURE")" "$BENCH_CAPTURE"
else
  for shape in $shapes; do
    "$(dirname "$0")/make_capture.sh" "$ddpscope" "$size_mb" "$work/$shape.pcap" "$shape"
    bench_shape "$shape" "$work/$shape.pcap"
    rm -f "$work/$shape".*
  done
fi
