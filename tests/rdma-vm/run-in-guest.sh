#!/usr/bin/env bash
# Runs one command as root inside a QEMU guest that has a soft-RoCE device (rxe0), and exits with its exit code.
#
#   tests/rdma-vm/run-in-guest.sh [--cache DIR] [--timeout SECONDS] [--numa] [--env NAME=VALUE ...]
#                                 [--share DIR ...] [--cwd DIR] -- COMMAND ARGS...
#
# The guest sees the host's root read-only, and this checkout (plus every --share DIR) read-write at the same
# absolute paths, so programs built here run there unchanged. The command gets DAQX_TEST_HOST (the address of
# the guest's dummy0, which carries rxe0: bind data endpoints there) and DAQX_IN_RDMA_VM=1.
# When no guest can be had it prints "SKIP: <reason>" and exits 77 (ctest's SKIP_RETURN_CODE), unless
# DAQX_RDMA_VM_REQUIRE=1, which makes that a failure. DAQX_RDMA_VM_QEMU names the QEMU program to use.
# docs/rdma-vm.md says more.
# shellcheck disable=SC2054 # QEMU's option values have commas in them, not array elements
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)"
repo="$(cd "$here/../.." && pwd -P)"

# dummy0's address inside the guest. The guest has no network card: nothing sent there leaves the guest.
guest_cidr=10.77.0.1/24
guest_address="${guest_cidr%/*}"

cache="$repo/build/rdma-vm"
timeout=600
numa=0
cwd="$PWD"
envs=()
shares=("$repo")

usage() {
  sed -n '4,5p' "${BASH_SOURCE[0]}" | sed 's/^# *//' >&2
  exit 2
}

while (($#)); do
  case "$1" in
    --cache) cache="$2"; shift 2 ;;
    --timeout) timeout="$2"; shift 2 ;;
    --numa) numa=1; shift ;;
    --env)
      [[ $2 =~ ^[A-Za-z_][A-Za-z0-9_]*= ]] || { echo "run-in-guest: --env wants NAME=VALUE, not '$2'" >&2; exit 2; }
      envs+=("$2"); shift 2 ;;
    --share) shares+=("$(cd "$2" && pwd -P)"); shift 2 ;;
    --cwd) cwd="$2"; shift 2 ;;
    --) shift; break ;;
    *) usage ;;
  esac
done
(($#)) || usage
[[ $timeout =~ ^[1-9][0-9]*$ ]] || { echo "run-in-guest: --timeout wants whole seconds" >&2; exit 2; }

skip() {
  echo "SKIP: $*"
  if [[ ${DAQX_RDMA_VM_REQUIRE:-0} == 1 ]]; then
    echo "run-in-guest: DAQX_RDMA_VM_REQUIRE=1: a guest that cannot be had is a failure"
    exit 1
  fi
  exit 77
}

qemu="${DAQX_RDMA_VM_QEMU:-qemu-system-x86_64}"
command -v "$qemu" >/dev/null 2>&1 || skip "$qemu not found (the qemu-system-x86 package; scripts/dev.sh installs it)"

prepared="$("$here/prepare.sh" --cache "$cache")" || {
  status=$?
  ((status == 77)) && skip "the guest's kernel and initramfs cannot be made here (prepare.sh said why above)"
  echo "run-in-guest: prepare.sh failed (exit $status)"
  exit 1
}
kernel="$(sed -n 's/^kernel=//p' <<<"$prepared")"
initrd="$(sed -n 's/^initrd=//p' <<<"$prepared")"

# The run share: what to run goes in, markers and the exit code come back.
rundir="$(mktemp -d "${TMPDIR:-/tmp}/daqx-rdma-vm.XXXXXX")"
qemu_pid=""
# shellcheck disable=SC2317 # called by the trap
cleanup() {
  if [[ -n $qemu_pid ]]; then kill "$qemu_pid" 2>/dev/null || true; fi
  rm -rf "$rundir"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

echo "DAQX_VM_ADDRESS=$guest_cidr" >"$rundir/guest.env"

qemu_value() { echo "${1//,/,,}"; }  # QEMU's option syntax: a comma in a value is written twice

# Each tree once, parents before children: a share inside another one is already visible through it.
mapfile -t shares < <(printf '%s\n' "${shares[@]}" | LC_ALL=C sort -u)
fsdev_args=()
: >"$rundir/shares"
n=0
for dir in "${shares[@]}"; do
  covered=0
  for kept in "${shares[@]:0:n}"; do
    if [[ $dir == "$kept" || $dir == "$kept"/* ]]; then covered=1; fi
  done
  if ((covered)); then continue; fi
  shares[n]="$dir"
  # multidevs=remap: a tree that spans several host file systems must not hand the guest clashing inode numbers.
  fsdev_args+=(-fsdev "local,id=share$n,path=$(qemu_value "$dir"),security_model=none,multidevs=remap"
    -device "virtio-9p-pci,fsdev=share$n,mount_tag=share$n")
  echo "share$n $dir" >>"$rundir/shares"
  n=$((n + 1))
done
shares=("${shares[@]:0:n}")

# The command's environment: what the tests need, the host's sanitizer settings (the sanitizer CI run sets
# them for every test), then --env, which wins.
{
  echo "# Written by run-in-guest.sh; run by the guest's /init under bash."
  printf 'export DAQX_TEST_HOST=%q DAQX_IN_RDMA_VM=1\n' "$guest_address"
  for name in ASAN_OPTIONS UBSAN_OPTIONS LSAN_OPTIONS; do
    if [[ -n ${!name:-} ]]; then printf 'export %s=%q\n' "$name" "${!name}"; fi
  done
  for assignment in "${envs[@]}"; do
    printf 'export %s=%q\n' "${assignment%%=*}" "${assignment#*=}"
  done
  printf 'cd -- %q || exit 125\n' "$cwd"
  # Output through a pipe as under ctest: the guest's console is a terminal, which would change buffering and
  # turn on colours (sanitizer reports, for one).
  printf '%q ' "$@"
  printf '2>&1 | cat\n'
  # shellcheck disable=SC2016 # expanded in the guest
  printf 'exit "${PIPESTATUS[0]}"\n'
} >"$rundir/command.sh"

# qemu64, not max: the fewer CPU features the guest has, the less TCG emulates per instruction (no AVX code
# paths in the libraries, a small FPU state saved at every switch). Measured here: the 2x2 event builder over
# ptibv in 19-25 s against 35-40 s with max, and the whole release suite about a third faster (docs/rdma-vm.md).
machine=(-accel tcg,thread=multi -cpu qemu64 -smp 2 -m 2048)
if ((numa)); then
  # Two nodes, one CPU and half the memory each: enough to prove where a pool's pages live.
  machine+=(-object memory-backend-ram,id=mem0,size=1024M -object memory-backend-ram,id=mem1,size=1024M
    -numa node,nodeid=0,cpus=0,memdev=mem0 -numa node,nodeid=1,cpus=1,memdev=mem1)
fi

# qboot, QEMU's minimal firmware, boots the kernel as well as SeaBIOS does without SeaBIOS's banner and the
# terminal resets that come with it (they would clear the screen of whoever runs this by hand).
firmware=()
if [[ -f /usr/share/qemu/qboot.rom ]]; then firmware=(-bios /usr/share/qemu/qboot.rom); fi

# quiet + loglevel: only the command's output on the console. panic=-1 with -no-reboot: a dying guest ends
# QEMU at once instead of hanging until the timeout. mitigations=off: speculation barriers cost a lot under
# emulation and protect nothing in a throwaway guest. numa_balancing=disable: with two nodes the kernel otherwise
# migrates the executives' huge pages between them (clearing 2 MiB each time, 6 % of a profiled event-builder run).
append="console=ttyS0 quiet loglevel=1 panic=-1 mitigations=off numa_balancing=disable"
qemu_args=("${machine[@]}" "${firmware[@]}" -nographic -vga none -nic none -no-reboot
  -kernel "$kernel" -initrd "$initrd" -append "$append"
  -fsdev "local,id=hostroot,path=/,security_model=none,readonly=on,multidevs=remap"
  -device virtio-9p-pci,fsdev=hostroot,mount_tag=hostroot
  -fsdev "local,id=daqxrun,path=$(qemu_value "$rundir"),security_model=none"
  -device virtio-9p-pci,fsdev=daqxrun,mount_tag=daqxrun
  "${fsdev_args[@]}")

nodes=""
if ((numa)); then nodes=", 2 NUMA nodes"; fi
echo "run-in-guest: booting $(basename "$(dirname "$kernel")") under QEMU TCG$nodes; shares: ${shares[*]};" \
  "timeout ${timeout}s"
started_at="$(date +%s.%N)"
# timeout bounds the guest. The death signals end timeout when this script dies (ctest kills it at its own
# limit), and QEMU when timeout does: no guest outlives its test. stdin is /dev/null so QEMU neither reads
# nor takes over a terminal.
setpriv --pdeathsig KILL -- timeout -k 10 "$timeout" setpriv --pdeathsig KILL -- "$qemu" "${qemu_args[@]}" </dev/null &
qemu_pid=$!
status=0
wait "$qemu_pid" || status=$?
qemu_pid=""
ended_at="$(date +%s.%N)"

elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }
if [[ -f $rundir/started ]]; then
  boot="$(elapsed "$started_at" "$(stat -c %.3Y "$rundir/started")")"
  echo "run-in-guest: the command started ${boot}s after QEMU did; QEMU ran $(elapsed "$started_at" "$ended_at")s"
fi

if ((status == 124 || status == 137)); then
  if [[ -f $rundir/started ]]; then
    echo "run-in-guest: FAILED: the command did not finish within ${timeout}s; QEMU was killed"
  else
    echo "run-in-guest: FAILED: the guest did not reach the command within ${timeout}s; QEMU was killed"
  fi
  exit 124
fi
if [[ -f $rundir/exit-code ]]; then
  code="$(cat "$rundir/exit-code")"
  echo "run-in-guest: the command exited with $code"
  exit "$code"
fi
if [[ -f $rundir/setup-failed ]]; then
  skip "the guest could not be made ready: $(cat "$rundir/setup-failed")"
fi
if [[ ! -f $rundir/started ]]; then
  skip "QEMU exited (status $status) before the guest ran the command"
fi
echo "run-in-guest: FAILED: the guest stopped while the command ran (QEMU status $status): kernel panic or power-off"
exit 1
