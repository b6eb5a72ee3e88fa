#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Regenerates the committed seed corpora in fuzz/corpus/ from the wire encoders and the
# synthetic samples (and the real NVMe-oF capture: upper-layer seeds for the engine):
#   fuzz/make_seeds.sh BUILD_DIR   (a normal build with ddpscope_fuzz_seeds)
set -euo pipefail
cd "$(dirname "$0")/.."
build="${1:-build/dev}"
seeds="$build/fuzz/ddpscope_fuzz_seeds"
cmake --build "$build" --target ddpscope_fuzz_seeds
rm -rf fuzz/corpus
"$seeds" fuzz/corpus samples/synthetic/*.pcap samples/siw/siw-nvmeof.pcap
mkdir -p fuzz/corpus/fuzz_capture
cp samples/synthetic/*.pcap fuzz/corpus/fuzz_capture/
# pcapng (one interface, and two interfaces of one link type), when editcap/mergecap exist.
if command -v editcap >/dev/null && command -v mergecap >/dev/null; then
  editcap -F pcapng samples/synthetic/fault-terminate.pcap fuzz/corpus/fuzz_capture/fault-terminate.pcapng
  mergecap -F pcapng -w fuzz/corpus/fuzz_capture/two-interfaces.pcapng \
    samples/synthetic/fault-atomic.pcap samples/synthetic/fault-handshake.pcap
fi
# fuzz_replay_plan: the upper layers' samples, and rping's.
mkdir -p fuzz/corpus/fuzz_replay_plan
cp samples/synthetic/fault-{nvmeof,iser,rpcrdma,smbdirect}.pcap samples/synthetic/clean-rping.pcap \
  samples/siw/siw-nvmeof.pcap fuzz/corpus/fuzz_replay_plan/
# fuzz_esp: the IPsec samples' SA files and frames.
fuzz/esp_seeds.py fuzz/corpus/fuzz_esp samples/ipsec
du -sh fuzz/corpus
