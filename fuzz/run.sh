#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Bounded fuzzing: builds the fuzz targets of the `asan` tree (the `fuzz` preset: build/asan,
# clang-14, libFuzzer, ASan + UBSan; the sanitizer test suite's tree) and runs every
# fuzz target for SECONDS_PER_TARGET seconds (default 60), as many at once as there are cores
# (DDPSCOPE_FUZZ_JOBS=N: N at once). Fails on any crash, leak, timeout or sanitizer report; the
# input that caused it is left in build/asan/artifacts/ (copy it to fuzz/regressions/<target>/
# once fixed).
#   fuzz/run.sh [SECONDS_PER_TARGET] [TARGET...]
# New inputs found go to build/asan/corpus/<target>/ (not into the committed seeds).
# DDPSCOPE_FUZZ_DIR=DIR uses an already configured libFuzzer build directory (configured like
# the `asan` preset) instead of build/asan, and only builds the targets in it.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-60}"
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] ||
  targets=(fuzz_wire fuzz_engine fuzz_frame fuzz_capture fuzz_ulp fuzz_sctp fuzz_esp fuzz_replay_plan)

if [ -n "${DDPSCOPE_FUZZ_DIR:-}" ]; then
  out="$DDPSCOPE_FUZZ_DIR"
  cmake --build "$out" --target "${targets[@]}"
else
  out=build/asan
  cmake --preset fuzz >/dev/null
  cmake --build --preset fuzz
fi

mkdir -p "$out/artifacts" "$out/logs"
summary="$out/summary.txt"
# Targets run side by side, one per core (DDPSCOPE_FUZZ_JOBS overrides): each still gets its
# SECONDS_PER_TARGET on a core of its own, so on two cores eight targets take four rounds
# instead of eight, with the same executions per target.
jobs_max="${DDPSCOPE_FUZZ_JOBS:-$(nproc)}"
[ "$jobs_max" -ge 1 ] 2>/dev/null || jobs_max=1

# libFuzzer flags of one target beyond those every target gets.
target_flags() {
  case "$1" in
    # A fuzz_engine input reaches 800-2,600 coverage features, and for every one seen fewer
    # times than the entropic schedule's threshold (default 255) libFuzzer searches its list of
    # rare features one by one; early in a run that list is long, and the search was 60 % of
    # the target's CPU time (the harness 13 %). At 32 the list stays short: 1.6x the executions
    # per CPU second over 20,000 executions, 1.6-2.5x over 45 s, coverage the same after as
    # many executions and higher after as much time (bench/RESULTS.md, issue 39).
    fuzz_engine) echo -entropic_feature_frequency_threshold=32 ;;
  esac
}

fuzz_one() {  # TARGET: its log in $out/logs/TARGET.log, its exit code in TARGET.rc
  local t="$1" rc=0 flags
  local inputs=("$out/corpus/$t" "fuzz/corpus/$t")
  [ -d "fuzz/regressions/$t" ] && inputs+=("fuzz/regressions/$t")
  read -ra flags <<<"$(target_flags "$t")"
  ASAN_OPTIONS="detect_leaks=1:abort_on_error=0" UBSAN_OPTIONS="print_stacktrace=1" \
    nice "$out/fuzz/$t" -max_total_time="$seconds" -timeout=20 -rss_limit_mb=2048 \
    -max_len=65536 -print_final_stats=1 "${flags[@]}" -artifact_prefix="$out/artifacts/$t-" \
    "${inputs[@]}" >"$out/logs/$t.log" 2>&1 || rc=$?
  echo "$rc" >"$out/logs/$t.rc"
}

for t in "${targets[@]}"; do
  mkdir -p "$out/corpus/$t"
  rm -f "$out/logs/$t.rc"
  while [ "$(jobs -rp | wc -l)" -ge "$jobs_max" ]; do
    wait -n || true
  done
  echo "[fuzz/run.sh] $t for ${seconds}s" >&2
  fuzz_one "$t" &
done
wait

printf '%-16s %8s %12s %10s %8s %8s\n' target seconds executions exec/s cov corpus >"$summary"
status=0
for t in "${targets[@]}"; do
  log="$out/logs/$t.log"
  rc=$(cat "$out/logs/$t.rc" 2>/dev/null || echo "?")
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)
  corpus=$(find "$out/corpus/$t" -type f | wc -l)
  printf '%-16s %8s %12s %10s %8s %8s\n' "$t" "$seconds" "${execs:-?}" "${rate:-?}" \
    "${cov:-?}" "$corpus" >>"$summary"
  if [ "$rc" != 0 ] || grep -qE 'ERROR: (AddressSanitizer|LeakSanitizer|libFuzzer)|runtime error:' "$log"; then
    echo "[fuzz/run.sh] $t FAILED (exit $rc); log: $log" >&2
    grep -E 'ERROR:|runtime error:|SUMMARY|Test unit written' "$log" | head -20 >&2 || true
    status=1
  fi
done
cat "$summary"
exit "$status"
