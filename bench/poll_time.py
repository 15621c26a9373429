#!/usr/bin/env python3
"""How long a transport thread should poll before it sleeps: daqx ping-pong round trips and the CPU both
executives burn for them, for several values of the transports' `pollTime`, side by side in one run. This is
the measurement behind pollTime's automatic default (docs/benchmarks-tcp.md, "Adaptive waiting"). A benchmark,
never a test.

Usage: python3 bench/poll_time.py [--build BUILD] [--out DIR] [--transports tcp,ofi] [--poll-times 0,10,25,...]
          [--sizes 64 4K 64K] [--repeat 3] [--seconds 1] [--cores 0/1|0/0|none]
Reuses bench/ofi_comparison.py's daqx driver (two executives, nton::PingPong); `auto` is the transport's own
default (no pollTime in the partition).
"""

import argparse
import os
import signal
import sys
import time

sys.dont_write_bytecode = True  # importing the package would leave __pycache__ in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
from daqx.pair import (  # noqa: E402  (the repository's package, found from this file)
    PTOFI, PTTCP, DaqxPair, DaqxSystem, attempt, parse_cores)
from daqx.bench import (  # noqa: E402
    NTON, get as value, Processes, Progress, load_average, machine_conditions, median_run, parse_size, print_notes, print_table,
    size_name, write_csv)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TRANSPORTS = {
    "tcp": ("tcp", PTTCP, {"mode": "latency"}),
    "ofi": ("ofi", PTOFI, {"provider": "tcp", "waitMode": "epoll"}),
}


def systems(transports, poll_times):
    chosen = []
    for transport in transports:
        protocol, module, properties = TRANSPORTS[transport]
        for poll in poll_times:
            extra = {} if poll == "auto" else {"pollTime": poll}
            chosen.append(DaqxSystem(f"{transport}-poll-{poll}", f"{transport} pollTime={poll}", protocol, module,
                                     dict(properties, **extra), True, False))
    return chosen


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--build", default=os.path.join(ROOT, "build", "release"), help="the daqx build tree")
    parser.add_argument("--out", default=os.path.join(ROOT, "build", "bench", "poll-time"), help="results, logs")
    parser.add_argument("--transports", default="tcp,ofi", help="of tcp (pttcp, latency mode), ofi (ptofi/tcp)")
    parser.add_argument("--poll-times", default="auto,0,10,25,50,100,200",
                        help="pollTime values in microseconds; auto: the transport's default")
    parser.add_argument("--sizes", nargs="+", default=["64", "4K", "64K"], help="frame sizes")
    parser.add_argument("--repeat", type=int, default=3, help="runs per point, the systems taking turns (3)")
    parser.add_argument("--seconds", type=float, default=1.0, help="measuring window per point (1 s)")
    parser.add_argument("--cores", type=parse_cores, default=None,
                        help="SENDING/RECEIVING CPUs (ping / pong side), e.g. 0/1 or 0/0; default: none pinned")
    parser.add_argument("--host", default="127.0.0.1", help="data endpoints' address (loopback)")
    args = parser.parse_args()

    transports = args.transports.split(",")
    unknown = set(transports) - set(TRANSPORTS)
    if unknown:
        parser.error(f"unknown transports: {', '.join(sorted(unknown))}")
    poll_times = args.poll_times.split(",")
    sizes = [parse_size(s) for s in args.sizes]
    build, out = os.path.abspath(args.build), os.path.abspath(args.out)
    log_dir = os.path.join(out, "logs")
    for folder in (log_dir, os.path.join(out, "partitions")):
        os.makedirs(folder, exist_ok=True)
    chosen = systems(transports, poll_times)
    missing = [p for p in [os.path.join(build, "executive", "daqx-executive"), os.path.join(build, "modules", NTON)]
               + [os.path.join(build, "modules", s.module) for s in chosen] if not os.path.exists(p)]
    if missing:
        raise SystemExit(f"not built: {', '.join(sorted(set(missing)))} (build {build} first)")
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))

    conditions = machine_conditions()
    pinning = f"ping side on CPU {args.cores[0]}, pong side on CPU {args.cores[1]}" if args.cores else "nothing pinned"
    print(f"== pollTime: round trips and CPU; nproc {conditions['nproc']}, kernel {conditions['kernel']}, load "
          f"average {conditions['load_average']}; {pinning}; {args.seconds:g} s per point, median of {args.repeat}")
    processes = Processes(log_dir, {"sender": {args.cores[0]}, "receiver": {args.cores[1]}} if args.cores else None)
    tries = {}
    started = time.monotonic()
    serial = 0
    progress = Progress(args.repeat * len(chosen) * len(sizes))
    try:
        for round_index in range(args.repeat):
            for system in chosen:
                serial += 1
                pair = None
                for size in sizes:
                    def point():
                        nonlocal pair
                        if pair is None:
                            pair = DaqxPair(processes, build, out, system, args.host, args.cores, 4096,
                                            args.seconds, serial)
                        return pair.round_trips(size)
                    tries.setdefault((system.name, size), []).append(
                        attempt(f"latency {system.name}", size, round_index, point, progress))
                if pair is not None:
                    pair.shut()
    finally:
        processes.stop_all()

    results = {key: median_run(runs, "mean_us") for key, runs in tries.items()}
    groups = [("", ["size", "pollTime"])] + [(t, ["median", "mean", "p99", "CPU", "CPU/rt"]) for t in transports]
    rows = []
    for size in sizes:
        for poll in poll_times:
            row = [size_name(size), poll]
            for transport in transports:
                name = f"{transport}-poll-{poll}"
                cores = [value(results, name, size, k) for k in ("cores_ping", "cores_pong")]
                mean = value(results, name, size, "mean_us")
                cpu = sum(cores) if None not in cores else None
                row += [f"{v:.1f}" if v is not None else "n/a" for v in
                        (value(results, name, size, "median_us"), mean, value(results, name, size, "p99_us"))]
                row += ["n/a" if cpu is None else f"{cpu:.2f}",
                        "n/a" if cpu is None or not mean else f"{cpu * mean:.1f}"]
            rows.append(row)
    print()
    print(f"== round trips (us) and CPU by pollTime; median of {args.repeat}; load average {load_average()} now; "
          f"{time.monotonic() - started:.0f} s")
    print_table(groups, rows)
    print_notes("nton::PingPong between two executives (inline dispatch, the default for it), frameSize = size. "
                "median and p99 of the ping's round trips, mean = the window's time over its round trips. CPU = cores "
                "both executives used during the window (utime + stime, every thread); CPU/rt = CPU microseconds per "
                "round trip. auto = no pollTime in the partition: the transport's default. " + pinning + ".")
    for (system, size), r in sorted(results.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        if "na" in r:
            print(f"  n/a {system} {size_name(size)}: {r['na']}")
    write_csv(os.path.join(out, "poll_time.csv"), results,
              ["median_us", "p99_us", "mean_us", "round_trips", "seconds", "cores_ping", "cores_pong", "other_cores",
               "repeats"])
    print(f"wrote {os.path.join(out, 'poll_time.csv')}")
    return 1 if any("na" in r for r in results.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
