#!/usr/bin/env bash
# daqx developer entry point: installs the Debian packages the project needs, builds, runs.
#   scripts/dev.sh main    packages + release build + the main job
#   scripts/dev.sh test    packages + release and sanitizer builds + every test in both
#   scripts/dev.sh build   packages + release build only
#   scripts/dev.sh bench   packages + release build + every benchmark (tables and CSV in build/bench-results)
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
jobs="$(nproc)"

# Everything the build, the tests and the benchmarks use, from Debian 12's archive.
packages=(
  build-essential cmake ninja-build pkg-config git
  catch2 libpugixml-dev libpoco-dev libnuma-dev numactl
  libfabric-dev libfabric-bin libibverbs-dev librdmacm-dev rdma-core
  iproute2 procps curl python3
)

install_packages() {
  local missing=()
  for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if ((${#missing[@]})); then
    echo "== installing: ${missing[*]}"
    local sudo=""
    [[ $(id -u) -ne 0 ]] && sudo="sudo"
    $sudo apt-get update -q
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
  fi
}

build() {  # build <dir> <cmake args...>
  local dir="$1"; shift
  cmake -S "$root" -B "$dir" -G Ninja "$@"
  cmake --build "$dir" -j "$jobs"
}

build_release() { build "$root/build/release" -DCMAKE_BUILD_TYPE=Release; }
build_sanitize() { build "$root/build/sanitize" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DDAQX_SANITIZE=ON; }

run_tests() {  # run_tests <dir> <name>
  echo "== tests: $2"
  (cd "$1" && ctest -j "$jobs" --output-on-failure --timeout 600)
}

main_job() {
  echo "== main job: local N-to-N partition (config/local-nton.xml) for 10 s, rates every second"
  "$root/build/release/executive/daqx-launch" --config "$root/config/local-nton.xml" --drive --run 10 \
    --log-dir "$root/build/logs"
}

bench() {
  mkdir -p "$root/build/bench-results"
  "$root/build/release/bench/daqx-bench-pool" "$root/build/bench-results/pool_bench.csv"
}

case "${1:-}" in
  main) install_packages; build_release; main_job ;;
  test)
    install_packages
    build_release
    build_sanitize
    run_tests "$root/build/release" "release"
    # halt_on_error: the first sanitizer report fails the test that caused it.
    ASAN_OPTIONS=halt_on_error=1:detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
      run_tests "$root/build/sanitize" "AddressSanitizer + UndefinedBehaviorSanitizer"
    ;;
  build) install_packages; build_release ;;
  bench) install_packages; build_release; bench ;;
  *) echo "usage: $0 main|test|build|bench" >&2; exit 2 ;;
esac
