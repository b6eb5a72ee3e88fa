#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# One entry point for set-up, build and the two jobs the README names:
#   ./build.sh sample   install what the CLI needs, build the CLI alone (build/cli), analyze a
#                       bundled sample capture
#   ./build.sh test     install what is missing, build, run the whole test suite (ctest), then
#                       the same suite again in an ASan+UBSan build (clang), then every fuzz
#                       target of that build for 45 s (libFuzzer, fuzz/run.sh)
# Further jobs: asan (the suite under ASan+UBSan), fuzz [SECONDS] (every fuzz target, 60 s
# each by default), install-plugin, bench, siw-lab (real Linux
# siw captures recorded in a qemu VM, tests/interop/lab.sh), package (the Debian packages into
# build/packages, checked by lintian), package-test (package, then install, use and purge them:
# ctest label package, as root).
set -euo pipefail
cd "$(dirname "$0")"

# What the analyzer CLI alone needs (the `cli` preset, `./build.sh sample`).
CLI_PACKAGES=(cmake ninja-build g++ pkg-config
              libisal-dev libpcap-dev zlib1g-dev libcli11-dev nlohmann-json3-dev
              libusrsctp-dev libsctp-dev libgcrypt20-dev)
# Everything: the tests, the plugin, the GUI, the benchmarks and the fuzzers too.
PACKAGES=("${CLI_PACKAGES[@]}" git python3 libglib2.0-dev
          libgtest-dev libgmock-dev libbenchmark-dev
          wireshark-dev libwireshark-dev tshark
          qt6-base-dev libgl-dev xauth xvfb clang-format
          clang-14 libclang-rt-14-dev)

# What `package` needs on top: the Debian tool chain and lintian.
PACKAGE_TOOLS=(debhelper dpkg-dev fakeroot lintian)

log() { printf '[build.sh] %s\n' "$*" >&2; }

install_missing() {  # PACKAGES...
  local missing=()
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  log "installing: ${missing[*]}"
  local sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  # tshark asks whether non-root users may capture; answer for it.
  echo "wireshark-common wireshark-common/install-setuid boolean false" | $sudo debconf-set-selections
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get update -q
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
}

build() {  # build PRESET
  local preset="$1"
  cmake --preset "$preset" >/dev/null
  cmake --build --preset "$preset"
}

test_jobs=$(( $(nproc) + 1 ))
job="${1:-sample}"
shift || true
case "$job" in
  sample)
    # Only the CLI and what it links (build/cli): one analysis needs none of the tests, the
    # plugin, the GUI, the fuzzers or the benchmarks, nor their packages.
    install_missing "${CLI_PACKAGES[@]}"
    build cli
    ./build/cli/analyzer/ddpscope analyze samples/synthetic/clean-rping.pcap "$@"
    ;;
  test)
    install_missing "${PACKAGES[@]}"
    build dev
    # One test more than there are cores: the endpoint tests spend most of their time waiting
    # on sockets and timers (on 2 cores, -j3 took the dev suite from 406 s to 362 s).
    ctest --preset dev -j"$test_jobs" --label-exclude 'slow|bench|vm|package' "$@"
    # The same suite (less plugin and GUI, which load uninstrumented hosts) under ASan+UBSan, in
    # the clang tree whose fuzz targets link libFuzzer (its tests are busy: one per core).
    build asan
    ASAN_OPTIONS=detect_leaks=1 ctest --preset asan -j"$(nproc)" --label-exclude 'slow|bench|vm|gui|plugin' "$@"
    # Bounded fuzzing, the same tree's fuzz targets: any crash, leak or sanitizer report fails
    # the job.
    fuzz/run.sh 45
    ;;
  fuzz)
    install_missing "${PACKAGES[@]}"
    fuzz/run.sh "$@"
    ;;
  asan)
    install_missing "${PACKAGES[@]}"
    build asan
    ASAN_OPTIONS=detect_leaks=1 ctest --preset asan -j"$(nproc)" --label-exclude 'slow|bench|vm|gui|plugin' "$@"
    ;;
  deps)
    install_missing "${PACKAGES[@]}"
    ;;
  package|package-test)
    # dpkg-buildpackage in a copy of the tracked (and new, unignored) files, so build/ and the
    # .debs it writes beside the source stay out of the tree; results go to build/packages.
    install_missing "${PACKAGES[@]}" "${PACKAGE_TOOLS[@]}"
    stage=build/package-src
    rm -rf "$stage" build/packages
    mkdir -p "$stage/ddpscope" build/packages
    git ls-files -z --cached --others --exclude-standard | tar --null -T - -c | tar -x -C "$stage/ddpscope"
    (cd "$stage/ddpscope" && dpkg-buildpackage -us -uc -b -j2)
    mv "$stage"/*.deb "$stage"/*.changes "$stage"/*.buildinfo build/packages/
    rm -rf "$stage"
    # Errors fail the job; what lintian still says is in debian/README.lintian.
    lintian --fail-on error --display-info build/packages/*.changes | tee build/packages/lintian.txt
    log "packages in build/packages: $(cd build/packages && echo ./*.deb)"
    if [ "$job" = package-test ]; then
      build dev
      DDPSCOPE_PACKAGE_TEST=1 ctest --preset dev -L package "$@"
    fi
    ;;
  siw-lab)
    # Linux soft-iWARP in a qemu VM (tests/interop/lab.sh): builds the lab into build/siw-lab,
    # records the siw sample captures into build/siw-lab/samples and checks them (label vm).
    install_missing "${PACKAGES[@]}"
    build dev
    tests/interop/lab.sh samples build/siw-lab/samples
    python3 tests/interop/check_samples.py build/dev/analyzer/ddpscope build/siw-lab/samples samples/siw
    ;;
  *)
    echo "usage: $0 sample|test|asan|fuzz|deps|siw-lab|package|package-test [args...]" >&2
    exit 2
    ;;
esac
