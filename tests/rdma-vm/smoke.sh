#!/usr/bin/env bash
# Inside the rdma-vm guest: checks that rxe0 is usable the ways daqx uses it, through libibverbs, rdma_cm
# between two processes, and libfabric's verbs provider (MSG and, through ofi_rxm, RDM).
#
#   tests/rdma-vm/run-in-guest.sh -- tests/rdma-vm/smoke.sh [VERBS_PROBE]
# VERBS_PROBE: a program of the build tree that opens rxe0 and registers memory (verbs_probe.cpp), to show that
# the build's programs, sanitized ones included, run in the guest.
set -euo pipefail

if [[ ${DAQX_IN_RDMA_VM:-} != 1 ]]; then
  echo "smoke.sh checks the guest: run it with tests/rdma-vm/run-in-guest.sh -- $0" >&2
  exit 2
fi
host="$DAQX_TEST_HOST"
probe="${1:-}"

step_started=""
step() {  # step <what>: announces a check and how long the previous one took
  finish_step
  echo "== $*"
  step_started="$EPOCHREALTIME"
}
finish_step() {
  [[ -z $step_started ]] || awk -v a="$step_started" -v b="$EPOCHREALTIME" 'BEGIN { printf "   (%.1f s)\n", b - a }'
}

# A client started before its server listens is refused: the server may still be loading from the host's
# disk over 9p. Retry a few times, each bounded; the server is bounded too.
client_until_served() {  # client_until_served <server pid> <client command...>
  local server="$1" attempt
  shift
  for attempt in 1 2 3 4 5 6 7 8 9 10; do
    if timeout 60 "$@"; then
      wait "$server"
      return
    fi
    kill -0 "$server" 2>/dev/null || { echo "the server exited before a client got through" >&2; return 1; }
    echo "   attempt $attempt failed; again in a second"
    sleep 1
  done
  kill "$server" 2>/dev/null || true
  return 1
}

step "rxe0 is on dummy0 and active"
rdma link show rxe0/1
rdma link show rxe0/1 | grep -q 'state ACTIVE'

step "libibverbs lists rxe0"
ibv_devices
ibv_devices | grep -qw rxe0

if [[ -n $probe ]]; then
  step "a program of the build tree opens rxe0 and registers 64 MiB ($probe)"
  if ldd "$probe" | grep -q libasan; then echo "   (built with AddressSanitizer)"; fi
  "$probe" rxe0
fi

step "rdma_cm: rping server and client on $host, 10 verified 4 KiB round trips"
timeout 120 rping -s -a "$host" -C 10 -S 4096 &
client_until_served $! rping -c -a "$host" -C 10 -S 4096 -V

step "libfabric's verbs provider offers MSG endpoints on rxe0"
fi_info -p verbs -t FI_EP_MSG -d rxe0 | grep -E 'provider|domain|protocol' | sort -u
fi_info -p verbs -t FI_EP_MSG -d rxe0 >/dev/null

step "fi_pingpong over verbs MSG on $host, 100 checked 4 KiB round trips"
timeout 120 fi_pingpong -p verbs -e msg -I 100 -S 4096 -c >/dev/null &
client_until_served $! fi_pingpong -p verbs -e msg -I 100 -S 4096 -c "$host"

# rxm sizes its completion queue from the universe size: the default asks for more entries than rxe allows.
step "fi_pingpong over verbs;ofi_rxm RDM on $host (FI_UNIVERSE_SIZE=64), 100 checked 4 KiB round trips"
export FI_UNIVERSE_SIZE=64
timeout 120 fi_pingpong -p 'verbs;ofi_rxm' -e rdm -I 100 -S 4096 -c >/dev/null &
client_until_served $! fi_pingpong -p 'verbs;ofi_rxm' -e rdm -I 100 -S 4096 -c "$host"

finish_step
echo "== all guest checks passed"
