#!/usr/bin/env bash
# daqx developer entry point: installs the Debian packages the project needs, builds, runs.
#   scripts/dev.sh main    the packages and the part of the release build it needs + the main job
#   scripts/dev.sh test    packages + release and sanitizer builds + every test in both (each soft-RoCE guest suite
#                          in one of them) + every fuzz target (30 s each)
#   scripts/dev.sh build   packages + release build only
#   scripts/dev.sh bench   packages + release build + every benchmark (tables and CSV in build/bench-results)
#   scripts/dev.sh bench-tcp  packages + iperf3, libzmq, matplotlib + release build + the TCP comparison
#   scripts/dev.sh bench-shm  packages + libzmq, UCX's tools, matplotlib + release build + the shared-memory comparison
#   scripts/dev.sh bench-evb  packages + matplotlib + release build + the event-building efficiency benchmark
#   scripts/dev.sh bench-scale packages + matplotlib + release build + what a context costs as the event builder
#                             grows (bench/evb_scale.py), and the EvM's and BU's work per batch and event with up to
#                             512 units (bench/evb_units_plot.py)
#   scripts/dev.sh bench-launch packages + matplotlib + release build + bringing up, driving and watching generated
#                             event builders of 9 to 257 contexts here and over ssh to 2 to 16 namespace hosts
#                             (bench/launch_scale.py)
#   scripts/dev.sh bench-ofi  packages + matplotlib + release build + fi_msg_bw + ptofi vs libfabric's tools
#   scripts/dev.sh bench-ibv  packages + matplotlib + release build + ptibv vs perftest in the soft-RoCE guest
#   scripts/dev.sh fuzz [SECONDS] [TARGET...]  packages + the fuzz build (clang) + each fuzz target for SECONDS
#                                 (default 600), or the named ones (tests/fuzz, docs/fuzzing.md)
#   scripts/dev.sh soak [MINUTES]  packages + matplotlib + the soak run's targets + the 4x4 event builder in namespaces,
#                                 every event checked, for MINUTES (default 30): samples, verdict and plot in build/soak
#   scripts/dev.sh fuzz-seeds     rewrites the binary seeds of tests/fuzz/corpus with daqx's own encoders
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
jobs="$(nproc)"

# Everything the build, the tests and the benchmarks use, from Debian 12's archive.
packages=(
  build-essential cmake ninja-build pkg-config git
  catch2 libpugixml-dev libpoco-dev libnuma-dev numactl
  libfabric-dev libfabric-bin libibverbs-dev librdmacm-dev rdma-core
  iproute2 procps curl python3
  # The soft-RoCE guest that tests needing real verbs run in (tests/rdma-vm, docs/rdma-vm.md): QEMU, what
  # prepare.sh builds the guest's initramfs with, and the verbs and rdma_cm tools its smoke test runs there.
  qemu-system-x86 busybox-static kmod cpio xz-utils ibverbs-utils rdmacm-utils
  # perftest (ib_send_lat, ib_send_bw): what bench/ibv_comparison.py compares ptibv with in that guest.
  perftest
  # The cluster tests (tests/cluster): OpenSSH's server and client in every simulated host, and a real Slurm
  # (controller, node daemons, client commands) with munge for its authentication; openssl makes the test's
  # certificates for the control port's TLS.
  openssh-server openssh-client slurmctld slurmd slurm-client munge openssl
  # A real Prometheus and its promtool: tests/integration/prometheus_test.cpp scrapes a running partition and
  # checks every executive's /metrics with them (docs/metrics.md).
  prometheus
  # The browser tests (tests/browser): the partition dashboard and the executives' pages in a headless Chromium,
  # driven over its DevTools protocol.
  chromium
  # Installs and the Debian package (packaging/, tests/install): help2man writes the man pages from --help at build
  # time, man-db and groff-base render them in the tests, dpkg-dev's dpkg-shlibdeps computes the package's Depends,
  # systemd's systemd-analyze verifies the unit template.
  help2man man-db groff-base dpkg-dev systemd
  # xmllint: the partition schema's test validates every shipped and documented partition with it.
  libxml2-utils
  # The fuzz targets (tests/fuzz): clang with libFuzzer and the sanitizers' runtimes.
  clang libclang-rt-dev
  # The compiler cache every build goes through (compiler_cache below).
  ccache
)

# What the main job alone needs: the compiler, CMake and Ninja, and the libraries of the executive and the event
# builder over TCP (pugixml, Poco with its OpenSSL, libnuma for the pools). It builds no tests (catch2), no
# benchmarks and neither the libfabric nor the verbs transport (libfabric-dev, libibverbs-dev, librdmacm-dev).
main_packages=(build-essential cmake ninja-build libpugixml-dev libpoco-dev libnuma-dev)

# What the TCP comparison (bench/tcp_comparison.py) adds: the programs it compares daqx with, and the plot.
bench_tcp_packages=(iperf3 libzmq3-dev ucx-utils python3-matplotlib)
# What the shared-memory comparison (bench/shm_comparison.py) adds: ZeroMQ (for ipc://), ucx_perftest, the plot.
bench_shm_packages=(libzmq3-dev ucx-utils python3-matplotlib)
# What the event-building efficiency benchmark (bench/evb_efficiency.py) adds: the plots.
bench_evb_packages=(python3-matplotlib)
# What the soak run's plot (tests/soak/soak_plot.py) needs.
soak_packages=(python3-matplotlib)
# What the ptofi comparison (bench/ofi_comparison.py) adds: the plots (fi_pingpong is in libfabric-bin above).
bench_ofi_packages=(python3-matplotlib)

install_packages() {  # install_packages [package ...]: the given list, or the project's
  local missing=()
  local wanted=("$@")
  ((${#wanted[@]})) || wanted=("${packages[@]}")
  for p in "${wanted[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if ((${#missing[@]} == 0)); then
    echo "== packages: the ${#wanted[@]} needed are installed"
    return 0
  fi
  echo "== installing ${#missing[@]} packages: ${missing[*]}"
  # apt-get's hundreds of lines go to a log, shown only when it fails.
  mkdir -p "$root/build"
  local log="$root/build/apt-get.log" sudo=""
  [[ $(id -u) -ne 0 ]] && sudo="sudo"
  local started=$SECONDS
  if ! { $sudo apt-get update -q && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends \
      "${missing[@]}"; } >"$log" 2>&1; then
    cat "$log" >&2
    echo "== apt-get failed (its output above, and in $log)" >&2
    exit 1
  fi
  echo "== installed in $((SECONDS - started)) s (apt-get's output in $log)"
}

# Every build compiles through ccache, whose cache lives outside the checkout: a clean clone on a machine that
# built the same sources before (CI's machine, a developer's second clone) recompiles only what changed. Paths are
# rewritten relative to the checkout (base_dir) and the working directory is left out of the hash (nohashdir), so
# the same file compiled in another clone at the same place in its build tree hits; the few compile commands that
# carry a path of the checkout (tests/CMakeLists.txt keeps them to single files) miss. DAQX_CCACHE=0 turns it off.
script_started=$SECONDS
stage_times=()  # "stage: N s" lines, printed as a table when the test command ends
label_times=()  # "suite|ctest's label summary line", the same
compiler_cache=()
# Decided at the first build, not at the start: on a new machine ccache is installed by install_packages.
use_compiler_cache() {
  compiler_cache=()
  [[ "${DAQX_CCACHE:-1}" != 0 ]] && command -v ccache >/dev/null 2>&1 || return 0
  export CCACHE_DIR="${DAQX_CCACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/daqx-ccache}"
  export CCACHE_BASEDIR="$root" CCACHE_NOHASHDIR=true CCACHE_MAXSIZE="${CCACHE_MAXSIZE:-8G}"
  # time_macros: no source uses __DATE__ or __TIME__; include_file_mtime/ctime: a clean clone's headers are all
  # new, and their contents are hashed anyway.
  export CCACHE_SLOPPINESS=time_macros,include_file_mtime,include_file_ctime
  compiler_cache=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
}

build() {  # build <dir> <cmake args...> [--target TARGET...]: configure, then build everything or the targets
  local dir="$1"; shift
  local args=() targets=()
  while (($#)); do
    if [[ "$1" == "--target" ]]; then targets+=("$2"); shift 2; else args+=("$1"); shift; fi
  done
  local name="${dir#"$root/"}"
  mkdir -p "$dir"
  use_compiler_cache
  echo "== configuring $name (cmake; its output in $dir/configure.log)"
  if ! cmake -S "$root" -B "$dir" -G Ninja "${compiler_cache[@]}" "${args[@]}" >"$dir/configure.log" 2>&1; then
    cat "$dir/configure.log" >&2
    echo "== cmake failed for $name" >&2
    exit 1
  fi
  echo "== building $name${targets[*]:+ (${targets[*]})} with $jobs jobs"
  local started=$SECONDS
  ((${#compiler_cache[@]})) && ccache --zero-stats >/dev/null
  local target_args=()
  ((${#targets[@]})) && target_args=(--target "${targets[@]}")
  if [[ -t 1 ]]; then
    # On a terminal Ninja's one progress line redraws itself; only what a compiler says is printed besides.
    cmake --build "$dir" -j "$jobs" "${target_args[@]}"
  elif ! cmake --build "$dir" -j "$jobs" "${target_args[@]}" >"$dir/build.log" 2>&1; then
    grep -E -A40 "^FAILED:" "$dir/build.log" >&2 || tail -n 80 "$dir/build.log" >&2
    echo "== the build of $name failed (all of its output in $dir/build.log)" >&2
    exit 1
  fi
  echo "== built $name in $((SECONDS - started)) s$(cache_line)"
  stage_times+=("build $name: $((SECONDS - started)) s")
}

cache_line() {  # ", ccache: H of N compiles from the cache" for the build that just ran (stats zeroed before it)
  ((${#compiler_cache[@]})) || return 0
  local hits misses
  hits=$(ccache --print-stats |
    awk '$1 == "direct_cache_hit" || $1 == "preprocessed_cache_hit" {n += $2} END {print n + 0}')
  misses=$(ccache --print-stats | awk '$1 == "cache_miss" {print $2 + 0}')
  echo ", ccache: $hits of $((hits + misses)) compiles from the cache"
}

# The release build with every part on: also after the main job's configuration, which turned parts off.
build_release() {
  build "$root/build/release" -DCMAKE_BUILD_TYPE=Release -DDAQX_BUILD_TESTS=ON -DDAQX_BUILD_BENCH=ON \
    -DDAQX_WITH_OFI=ON -DDAQX_WITH_IBV=ON
}
# Without the benchmarks: no test runs them, and the release build compiles them with warnings as errors.
build_sanitize() { build "$root/build/sanitize" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DDAQX_SANITIZE=ON -DDAQX_BUILD_BENCH=OFF; }
# The fuzz targets and what they load, built by clang with libFuzzer under ASan+UBSan (tests/fuzz); each runs
# for $DAQX_FUZZ_SECONDS (60 by default) as a ctest entry.
fuzz_targets=(frame_header_fuzz multipart_fuzz stream_protocol_fuzz stream_record_fuzz number_text_fuzz tcp_stream_fuzz message_stream_fuzz
  connection_messages_fuzz evb_protocol_fuzz event_file_fuzz partition_fuzz control_request_fuzz
  launch_ownership_fuzz request_framing_fuzz daqx_fuzz_write_seeds)
build_fuzz() {
  local targets=()
  for t in "${fuzz_targets[@]}"; do targets+=(--target "$t"); done
  build "$root/build/fuzz" -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo -DDAQX_FUZZ=ON \
    -DDAQX_FUZZ_SECONDS="${DAQX_FUZZ_SECONDS:-60}" -DDAQX_BUILD_TESTS=OFF -DDAQX_BUILD_BENCH=OFF \
    -DDAQX_WITH_OFI=OFF -DDAQX_WITH_IBV=OFF "${targets[@]}"
}
fuzz() {  # fuzz [SECONDS] [TARGET...]
  local seconds=600
  if [[ "${1:-}" =~ ^[0-9]+$ ]]; then seconds=$1; shift; fi
  DAQX_FUZZ_SECONDS=$seconds build_fuzz
  local filter=()
  (($#)) && filter=(-R "fuzz: ($(IFS='|'; echo "$*"))\$")
  echo "== fuzzing: each target for $seconds s (new inputs kept in build/fuzz/tests/fuzz/work/TARGET/corpus)"
  local rc=0
  (cd "$root/build/fuzz" && ctest -j "$jobs" -L fuzz --output-on-failure "${filter[@]}") || rc=$?
  fuzz_summary
  return "$rc"
}
fuzz_summary() {  # every target's line of its last run: executions, coverage, corpus, what it found
  cat "$root"/build/fuzz/tests/fuzz/work/*/summary.txt 2>/dev/null || true
}

# The main job's programs only: the executive, the launcher, the TCP transport and the event builder.
build_main() {
  build "$root/build/release" -DCMAKE_BUILD_TYPE=Release -DDAQX_BUILD_TESTS=OFF -DDAQX_BUILD_BENCH=OFF \
    -DDAQX_WITH_OFI=OFF -DDAQX_WITH_IBV=OFF \
    --target daqx-executive --target daqx-launch --target daqx_pttcp --target daqx_evb
}

run_tests() {  # run_tests <dir> <name> [ctest options...]: ctest's output also in <dir>/ctest.log
  local dir=$1 name=$2
  shift 2
  echo "== tests: $name"
  local started=$SECONDS rc=0
  (cd "$dir" && ctest -j "$jobs" --output-on-failure --timeout 600 "$@") 2>&1 | tee "$dir/ctest.log" || rc=$?
  stage_times+=("tests $name: $((SECONDS - started)) s")
  # ctest's "Label Time Summary": the seconds of every test of a label added up (not wall time: -j runs several).
  local label
  while read -r label; do label_times+=("$name|$label"); done < <(
    sed -n '/^Label Time Summary:/,/^$/p' "$dir/ctest.log" | grep ' = ')
  return "$rc"
}

# The table every test command ends with, also when a stage failed: the seconds of each stage (wall time) and,
# per suite, the seconds of each ctest label (its tests' times added up). A change that slows CI shows here.
time_table() {
  ((${#stage_times[@]})) || return 0
  echo "== time table (CI's budget: 2700 s in all; docs/testing.md)"
  local line total=$((SECONDS - script_started))
  for line in "${stage_times[@]}"; do
    local seconds="${line##*: }"
    printf '   %-58s %6s s\n' "${line%:*}" "${seconds% s}"
  done
  printf '   %-58s %6s s\n' "all, from the start of the command" "$total"
  ((${#label_times[@]})) || return 0
  echo "   per label (seconds of its tests added up; tests of several labels count in each):"
  for line in "${label_times[@]}"; do
    # "release|process        = 812.34 sec*proc (140 tests)"
    local suite="${line%%|*}" rest="${line#*|}"
    local label="${rest%% *}" seconds tests
    seconds="$(sed -E 's/.*= *([0-9.]+) sec.*/\1/' <<<"$rest")"
    tests="$(sed -E 's/.*\(([0-9]+) tests?\).*/\1/' <<<"$rest")"
    printf '   %-24s %-14s %8.0f s %5s tests\n' "$suite" "$label" "$seconds" "$tests"
  done
}

# The soft-RoCE guest is emulated (TCG, no KVM here) and keeps both cores busy, so its suites run alone
# (RUN_SERIAL), one boot per build (tests/CMakeLists.txt). The release build boots it for the smoke test and the
# process-level suites over ptofi/verbs and ptibv (emulated, a sanitized executive is about half as fast); the
# sanitizer build for the conformance suite over both, so that the code only the guest can run also runs under
# ASan+UBSan.
release_only_in_guest='^rdma-vm: the guest.s device'
sanitized_only_in_guest='^rdma-vm: the conformance suite'


main_job() {
  echo "== main job: local event builder, EvM + 2 RUs + 2 BUs, one executive each over TCP (config/local-evb.xml),"
  echo "   20 s: each unit's state, events/s and GB/s every second, then the run's summary"
  "$root/build/release/executive/daqx-launch" --config "$root/config/local-evb.xml" --drive --run 20 \
    --log-dir "$root/build/logs"
}

# The soak run (tests/soak/soak_run.cpp, docs/operations.md "Soak"): only its targets, not the whole release build.
soak() {  # soak [MINUTES]
  local minutes=${1:-30}
  build "$root/build/release" -DCMAKE_BUILD_TYPE=Release -DDAQX_BUILD_TESTS=ON --target daqx_soak_run
  mkdir -p "$root/build/soak"
  echo "== soak: 4x4 event builder in network namespaces, every event checked, $minutes minutes (build/soak)"
  local rc=0
  "$root/build/release/tests/daqx_soak_run" --minutes "$minutes" --out "$root/build/soak" || rc=$?
  /usr/bin/python3 "$root/tests/soak/soak_plot.py" "$root/build/soak" || true
  return "$rc"
}

bench() {
  mkdir -p "$root/build/bench-results"
  "$root/build/release/bench/daqx-bench-pool" "$root/build/bench-results/pool_bench.csv"
}

bench_tcp() {
  mkdir -p "$root/build/bench-results"
  # Debian's interpreter: python3-matplotlib is installed for it, not for another python3 on the PATH.
  /usr/bin/python3 "$root/bench/tcp_comparison.py" --build "$root/build/release" --out "$root/build/bench-results" "$@"
}

bench_shm() {
  # Its own folder: the driver writes partitions, ipc:// sockets and one log per process there. PTSHM_BUILD names
  # another build tree with libdaqx_ptshm.so (e.g. the shm branch's) until it is in this one.
  mkdir -p "$root/build/bench/shm"
  /usr/bin/python3 "$root/bench/shm_comparison.py" --build "$root/build/release" --out "$root/build/bench/shm" \
    ${PTSHM_BUILD:+--ptshm-build "$PTSHM_BUILD"} "$@"
}

bench_scale() {
  /usr/bin/python3 "$root/bench/evb_units_plot.py" --build "$root/build/release" --repeat 3
  /usr/bin/python3 "$root/bench/evb_scale.py" --build "$root/build/release" --out "$root/build/bench/evb-scale" "$@"
}

bench_launch() {
  /usr/bin/python3 "$root/bench/launch_scale.py" --build "$root/build/release" --out "$root/build/bench/launch-scale" "$@"
}

bench_evb() {
  # Its own folder: the driver writes partitions and one log per executive (up to 17 per point) there.
  mkdir -p "$root/build/bench/evb"
  /usr/bin/python3 "$root/bench/evb_efficiency.py" --build "$root/build/release" --out "$root/build/bench/evb" "$@"
}

# fi_msg_bw and fi_msg_pingpong, libfabric's benchmarks, for the ptofi comparison. Debian ships fabtests in no
# binary package, so they are compiled here from a libfabric source of the installed version into build/fabtests:
# LIBFABRIC_SRC is a source tree with fabtests/ or a git directory with the tag v<version>. Without one the
# comparison measures throughput against fi_pingpong's MB/s and says so.
build_fi_msg_bw() {
  local out="$root/build/fabtests" version
  version="$(pkg-config --modversion libfabric)"
  [[ -x "$out/fi_msg_bw" && "$(cat "$out/version" 2>/dev/null)" == "$version" ]] && return 0
  if [[ -z "${LIBFABRIC_SRC:-}" ]]; then
    echo "== fi_msg_bw: LIBFABRIC_SRC is not set (a libfabric $version source tree or git directory); not built"
    return 0
  fi
  rm -rf "$out/src"
  mkdir -p "$out/src"
  if [[ -d "$LIBFABRIC_SRC/fabtests" ]]; then
    cp -r "$LIBFABRIC_SRC/fabtests" "$out/src/"
  elif ! git --git-dir="$LIBFABRIC_SRC" archive "v$version" fabtests | tar -x -C "$out/src"; then
    echo "== fi_msg_bw: no tag v$version in $LIBFABRIC_SRC; not built"
    return 0
  fi
  local tests="$out/src/fabtests"
  grep -q "AC_INIT(\[fabtests\], \[$version\]" "$tests/configure.ac" ||
    echo "== fi_msg_bw: warning: $LIBFABRIC_SRC is not fabtests $version, the installed libfabric's version"
  # What fabtests' configure defines on Linux; the GPU memory back-ends (hmem_*.c) compile to stubs.
  # fi_msg_pingpong too: unlike fi_pingpong it can wait on file descriptors (-c fd), as ptofi's epoll mode does.
  local program
  for program in msg_bw msg_pingpong; do
    if ! cc -O2 -w -D_GNU_SOURCE -DHAVE___INT128=1 -I"$tests/include" -I"$tests/include/unix" -o "$out/fi_$program" \
        "$tests/benchmarks/$program.c" "$tests/benchmarks/benchmark_shared.c" "$tests/common/shared.c" \
        "$tests"/common/hmem*.c -lfabric -lpthread -ldl -lm; then
      echo "== fi_$program did not build; the comparison goes on without it"
      return 0
    fi
  done
  echo "$version" >"$out/version"
  echo "== built $out/fi_msg_bw and $out/fi_msg_pingpong (fabtests $version)"
}

bench_ofi() {
  # Its own folder: the driver writes partitions and one log per executive and per fi program there.
  mkdir -p "$root/build/bench/ofi"
  /usr/bin/python3 "$root/bench/ofi_comparison.py" --build "$root/build/release" --out "$root/build/bench/ofi" \
    --fi-msg-bw "$root/build/fabtests/fi_msg_bw" "$@"
}

bench_ibv() {
  # In the soft-RoCE guest, one boot: ptibv against perftest and ptofi/verbs (bench/ibv_comparison.py).
  mkdir -p "$root/build/bench/ibv"
  /usr/bin/python3 "$root/bench/ibv_comparison.py" --build "$root/build/release" --out "$root/build/bench/ibv" "$@"
}

case "${1:-}" in
  main) install_packages "${main_packages[@]}"; build_main; main_job ;;
  test)
    trap time_table EXIT
    started=$SECONDS
    install_packages
    stage_times+=("packages: $((SECONDS - started)) s")
    build_release
    build_sanitize
    run_tests "$root/build/release" "release" -E "$sanitized_only_in_guest"
    # halt_on_error: the first sanitizer report fails the test that caused it.
    ASAN_OPTIONS=halt_on_error=1:detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
      run_tests "$root/build/sanitize" "sanitize (ASan+UBSan)" -E "$release_only_in_guest"
    DAQX_FUZZ_SECONDS=${DAQX_FUZZ_SECONDS:-30} build_fuzz
    run_tests "$root/build/fuzz" "fuzz targets" || {
      fuzz_summary
      exit 1
    }
    fuzz_summary
    ;;
  build) install_packages; build_release ;;
  bench) install_packages; build_release; bench ;;
  # The TCP comparison's packages come before the build: the ZeroMQ programs are built only if libzmq is there.
  bench-tcp) install_packages; install_packages "${bench_tcp_packages[@]}"; build_release; shift; bench_tcp "$@" ;;
  bench-shm) install_packages; install_packages "${bench_shm_packages[@]}"; build_release; shift; bench_shm "$@" ;;
  bench-evb) install_packages; install_packages "${bench_evb_packages[@]}"; build_release; shift; bench_evb "$@" ;;
  bench-scale) install_packages; install_packages "${bench_evb_packages[@]}"; build_release; shift; bench_scale "$@" ;;
  bench-launch) install_packages; install_packages "${bench_evb_packages[@]}"; build_release; shift; bench_launch "$@" ;;
  bench-ofi) install_packages; install_packages "${bench_ofi_packages[@]}"; build_release; build_fi_msg_bw; shift; bench_ofi "$@" ;;
  bench-ibv) install_packages; install_packages "${bench_ofi_packages[@]}"; build_release; shift; bench_ibv "$@" ;;
  fuzz) install_packages; shift; fuzz "$@" ;;
  soak) install_packages; install_packages "${soak_packages[@]}"; shift; soak "$@" ;;
  fuzz-seeds)
    install_packages
    build_fuzz
    "$root/build/fuzz/tests/fuzz/daqx_fuzz_write_seeds" "$root/tests/fuzz/corpus"
    ;;
  *) echo "usage: $0 main|test|build|bench|bench-tcp|bench-shm|bench-evb|bench-scale|bench-launch|bench-ofi|bench-ibv|fuzz|soak|fuzz-seeds [options]" >&2; exit 2 ;;
esac
