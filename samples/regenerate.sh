#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Rebuilds every synthetic sample capture from its scenario:
#   samples/synthetic/NAME.json -> NAME.pcap, NAME.expected.json (and NAME.regions.json)
#   samples/ipsec/NAME.json     -> the same, and the SA files NAME.esp_sa, NAME.xfrm
# Usage: samples/regenerate.sh [path/to/ddpscope]   (default: the first build dir that has it)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(dirname "$here")"
bin="${1:-}"
if [ -z "$bin" ]; then
  for b in "$root"/build/*/analyzer/ddpscope; do
    [ -x "$b" ] && { bin="$b"; break; }
  done
fi
[ -n "$bin" ] && [ -x "$bin" ] || { echo "regenerate.sh: build ddpscope first (or pass its path)" >&2; exit 2; }
for scenario in "$here"/synthetic/*.json "$here"/ipsec/*.json; do
  case "$scenario" in *.expected.json|*.regions.json|*.golden.json) continue ;; esac
  "$bin" synth "$scenario" -o "${scenario%.json}.pcap"
done
