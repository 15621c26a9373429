#!/usr/bin/env python3
"""Shared-memory comparison (issue 18): daqx over ptshm against daqx over pttcp on loopback, ZeroMQ over ipc://
and UCX's shared-memory transports (ucx_perftest, UCX_TLS=sm / posix / sysv / cma), in one run on this machine;
printed as tables (message rate and GB/s, round-trip time, the targets), written as CSV and a PNG plot.
A benchmark, never a test.

Usage: python3 bench/shm_comparison.py --build BUILD --out DIR [--ptshm-build DIR] [--repeat N] [--quick]
See docs/benchmarks-shm.md for what every column means.
"""

import argparse
import os
import signal
import subprocess
import sys
import time

sys.dont_write_bytecode = True  # importing the package would leave __pycache__ in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
from daqx.partition import PoolRule  # noqa: E402  (the repository's package, found from this file)
from daqx.bench import (  # noqa: E402  (the repository's package, found from this file)
    Baselines, Daqx, Processes, Progress, attempt_point, cell, find_programs, get, load_average,
    machine_conditions, median_run, other_load_cell, other_load_summary, parse_pin, parse_size, print_failures,
    print_notes, print_table, pyplot, ratio, round_trip_counts, size_name, write_csv)

PTSHM = "libdaqx_ptshm.so"
DEFAULT_SIZES = [64, 1024, 4096, 16384, 65536, 262144, 1048576]
QUICK_SIZES = [64, 1024, 4096, 65536, 1048576]

# UCX's shared-memory transports as ucx_perftest runs them. cma (process_vm_readv) moves only rendezvous data and
# has no active messages of its own: UCX refuses an endpoint over cma alone ("Destination is unreachable"), so
# its row runs cma with posix for the eager messages and the wire-up. sm is UCX's alias for all of them.
UCX_VARIANTS = {"sm": "sm", "posix": "posix", "sysv": "sysv", "cma": "cma,posix"}
UCX_NEEDS = {"sm": [], "posix": ["posix"], "sysv": ["sysv"], "cma": ["cma", "posix"]}

# Targets of issue 18 (informational: the run prints whether they are met).
RATE_FACTOR = 10.0  # daqx-shm message rate >= 10x daqx-pttcp's, 64 B .. 4 KiB
RATE_SIZES = (64, 4096)
RTT_FACTOR = 0.5  # daqx-shm round trip <= 0.5x daqx-pttcp's
# The scale figures quoted in the issue (UCX_TLS=sm, a separate quiet run on this machine): not measured here.
ISSUE_UCX_SM = {64: "17.3M msg/s", 1024: "5.8M msg/s", 4096: "2.0M msg/s", 1048576: "about 12 GB/s"}


def ucx_transports():
    """The transports `ucx_info -d` lists (Debian's UCX here: posix, sysv, cma, tcp, self), or None."""
    try:
        text = subprocess.run(["ucx_info", "-d"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    return {line.split(":", 1)[1].strip() for line in text.splitlines() if "Transport:" in line}


def memcpy_gbps(size=1 << 20, ring=64 << 20, seconds=0.5):
    """One core's copy rate for `size`-byte messages, GB/s: the bound of a transport that copies each message
    once. The messages go round a `ring`-byte source and target each (beyond the caches), as a stream of
    frames from a pool does; a cache-hot copy of one buffer would be several times faster."""
    source, target = bytearray(ring), bytearray(ring)
    source[:] = os.urandom(1 << 20) * (ring >> 20)  # touched: no page faults or shared zero page in the loop
    target[:] = source
    view_source, view_target = memoryview(source), memoryview(target)
    slots = ring // size
    copies, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        for i in range(slots):
            offset = i * size
            j = (i * 7 + 3) % slots * size  # another slot than the source's
            view_target[j:j + size] = view_source[offset:offset + size]  # one memcpy of `size` bytes
        copies += slots
    return copies * size / (time.perf_counter() - start) / 1e9


class Systems:
    """The throughput and round-trip systems of one run, their labels and how each point is measured."""

    def __init__(self, args, processes, programs, duration, out):
        build = os.path.abspath(args.build)
        ptshm_build = os.path.abspath(args.ptshm_build or args.build)
        window, ack = args.window, args.ack_every
        self.tcp = Daqx(processes, build, out, duration, window, ack, 0)
        self.tcp.prefix = "tcp-"
        self.tcp.rtt_mode = args.tcp_rtt_mode
        properties = dict(item.split("=", 1) for item in args.shm_properties.split(",") if item) \
            if args.shm_properties else {}
        # The executive and nton of the ptshm tree too: its module is built against that tree's libraries.
        self.shm = Daqx(processes, ptshm_build, out, duration, window, ack, 0, transport=PTSHM, protocol="shm",
                        properties=properties)
        self.shm.prefix = "shm-"
        if args.shm_pool_allocator != "none":
            # Every pool of both executives in shared memory, so that nton's frames can travel by reference.
            self.shm.policy = [PoolRule("*", args.shm_pool_allocator)]
        self.shm_modes = [] if args.shm_modes == "none" else args.shm_modes.split(",")
        if self.shm_modes:
            self.shm.rtt_mode = args.shm_rtt_mode
        else:
            self.shm.endpoint_properties = lambda mode: dict(properties)  # ptshm without a mode parameter
        self.ptshm_build = ptshm_build

        transports = ucx_transports()
        self.ucx = {}
        self.ucx_missing = {}
        for variant, tls in UCX_VARIANTS.items():
            self.ucx[variant] = Baselines(processes, programs, duration, ucx_env={"UCX_TLS": tls})
            if programs["ucx_perftest"] is None:
                self.ucx_missing[variant] = "ucx_perftest not installed (Debian's ucx-utils)"
            elif transports is not None and not set(UCX_NEEDS[variant]) <= transports:
                absent = "/".join(sorted(set(UCX_NEEDS[variant]) - transports))
                self.ucx_missing[variant] = f"UCX here has no {absent} (ucx_info -d)"
        ipc_dir = os.path.join(out, "ipc")
        os.makedirs(ipc_dir, exist_ok=True)
        self.zmq = Baselines(processes, programs, duration, zmq_ipc_dir=ipc_dir)
        # ucx_perftest's -E: poll (its default) or sleep. Two busy-polling processes that do not have a core each
        # (both pinned to one CPU, or a 2-core machine shared with other work) measure the scheduler's time
        # slice rather than UCX: there tag_bw collapsed to ~20k msg/s at 4 KiB with poll against ~300k with
        # sleep. auto: sleep for tag_bw on <= 2 usable CPUs or when both sides share a CPU; tag_lat polls
        # unless both sides share a CPU (a ping-pong has one side waiting at a time).
        shared = bool(args.pin) and bool(parse_pin(args.pin)["sender"] & parse_pin(args.pin)["receiver"])
        few = len(os.sched_getaffinity(0)) <= 2
        self.ucx_wait_bw = args.ucx_wait if args.ucx_wait != "auto" else ("sleep" if shared or few else "poll")
        self.ucx_wait_lat = args.ucx_wait if args.ucx_wait != "auto" else ("sleep" if shared else "poll")
        self.duration = duration

        shm = [f"shm-{m}" for m in self.shm_modes] or ["shm"]
        # Batched rows (nton's batch parameters): the same pair, sending and handling batches of args.batch frames.
        self.batch = args.batch
        shm_batch = [f"{x}-batch" for x in shm] if self.batch > 1 else []
        local = ["local"] + (["local-batch"] if self.batch > 1 else [])
        self.throughput = (shm + shm_batch + ["tcp-latency", "tcp-throughput", "zmq-ipc"]
                           + [f"ucx-{v}" for v in UCX_VARIANTS] + local)
        self.rtt = ["shm", "tcp", "zmq-ipc"] + [f"ucx-{v}" for v in UCX_VARIANTS]
        self.label = {"shm": "daqx-shm", "shm-latency": "shm-lat", "shm-throughput": "shm-thr",
                      "tcp-latency": "pttcp-lat", "tcp-throughput": "pttcp-thr", "tcp": "daqx-pttcp",
                      "zmq-ipc": "zmq-ipc", "local": "no-transport", "local-batch": "no-tr+batch",
                      "shm-batch": "daqx-shm+batch"}
        for m in self.shm_modes:
            self.label.setdefault(f"shm-{m}", f"shm-{m[:3]}")
            self.label[f"shm-{m}-batch"] = f"shm-{m[:3]}+b"
        self.label.update({f"ucx-{v}": f"ucx-{v}" for v in UCX_VARIANTS})
        self.shm_rows = shm + shm_batch
        self.tcp_rows = ["tcp-latency", "tcp-throughput"]
        self.peer_rows = ["zmq-ipc"] + [f"ucx-{v}" for v in UCX_VARIANTS]

    def throughput_point(self, system, size):
        batch = self.batch if system.endswith("-batch") else 0
        system = system.removesuffix("-batch")
        if system == "local":
            return self.shm.local_stream(size, batch)
        if system == "shm":
            return self.shm.throughput(None, size, batch=batch)
        if system.startswith("shm-"):
            return self.shm.throughput(system[4:], size, batch=batch)
        if system.startswith("tcp-"):
            return self.tcp.throughput(system[4:], size)
        if system == "zmq-ipc":
            return self.zmq.zmq(size)
        variant = system[4:]
        if variant in self.ucx_missing:
            return {"na": self.ucx_missing[variant]}
        return self.ucx_rate(self.ucx[variant], size)

    def ucx_rate(self, baselines, size):
        """ucx_perftest runs a count, not a time: a short run first measures the rate, then a run of about
        `duration` seconds at that rate is the point."""
        pilot = 20000 if size <= 4096 else 5000 if size <= 65536 else 500
        baselines.ucx_wait = self.ucx_wait_bw
        final, _, _, _ = baselines._ucx_perftest("tag_bw", size, pilot, pilot // 10, 120)
        rate = final[7] if len(final) > 7 and final[7] > 0 else pilot / max(1e-6, final[0] * final[3] * 1e-6)
        iterations = int(min(50_000_000, max(2000, rate * self.duration)))
        return baselines.ucx(size, iterations)

    def rtt_point(self, system, size, count, warmup):
        if system == "shm":
            return self.shm.round_trips(size, count, warmup)
        if system == "tcp":
            return self.tcp.round_trips(size, count, warmup)
        if system == "zmq-ipc":
            return self.zmq.round_trips("zmq", size, count, warmup)
        variant = system[4:]
        if variant in self.ucx_missing:
            return {"na": self.ucx_missing[variant]}
        # ucx_perftest gives one percentile of half the round trip per run (-R): one run for the median, one
        # for the p99, each doubled.
        b = self.ucx[variant]
        b.ucx_wait = self.ucx_wait_lat
        timeout = 60 + count * 0.005
        median, _, _, other = b._ucx_perftest("tag_lat", size, count, warmup, timeout, rank=50)
        p99, _, _, other99 = b._ucx_perftest("tag_lat", size, count, warmup, timeout, rank=99)
        return {"median_us": 2 * median[1], "p99_us": 2 * p99[1], "min_us": None, "max_us": None,
                "samples": median[0], "other_cores": max(other or 0.0, other99 or 0.0)}


# ---------------------------------------------------------------- derived cells

def best(results, systems, size, key="msgs_per_s"):
    """(value, system) of the highest `key` among systems at size, or (None, None)."""
    values = [(get(results, s, size, key), s) for s in systems]
    values = [(v, s) for v, s in values if v is not None]
    return max(values) if values else (None, None)


def spread(r, key):
    """(max - min) / median of the repeats of a point, percent; None for a single run or a failed point."""
    if "na" in r or not r.get("values") or len(r["values"]) < 2:
        return None
    values = sorted(r["values"])
    middle = values[(len(values) - 1) // 2]
    return 100.0 * (values[-1] - values[0]) / middle if middle else None


def median_with_spread(tries, key):
    chosen = median_run(tries, key)
    if "na" not in chosen:
        chosen["values"] = [r[key] for r in tries if "na" not in r and r.get(key) is not None]
        chosen["spread_pct"] = spread(chosen, key)
    return chosen


def throughput_table(results, s, sizes):
    labels = [s.label[x] for x in s.throughput]
    groups = [("", ["size"]), ("messages/s", labels), ("GB/s (payload)", labels),
              ("daqx-shm /", ["pttcp", "best peer"]), ("", ["peer"]), ("other", ["cores"])]
    rows = []
    for size in sizes:
        row = [size_name(size)]
        row += [cell(get(results, x, size, "msgs_per_s"), 0) for x in s.throughput]
        row += [cell(None if get(results, x, size, "gbps") is None else get(results, x, size, "gbps") / 8, 3)
                for x in s.throughput]
        shm, _ = best(results, s.shm_rows, size)
        tcp, _ = best(results, s.tcp_rows, size)
        peer, peer_name = best(results, s.peer_rows, size)
        row += [cell(ratio(shm, tcp)), cell(ratio(shm, peer)), s.label.get(peer_name, "n/a")]
        row.append(other_load_cell(results, s.throughput, size))
        rows.append(row)
    print_table(groups, rows)


def spread_table(results, systems, labels, sizes, title):
    groups = [("", ["size"]), (title, [labels[x] for x in systems])]
    rows = []
    for size in sizes:
        row = [size_name(size)]
        for x in systems:
            r = results.get((x, size))
            v = None if r is None else r.get("spread_pct")
            row.append("n/a" if v is None else f"{v:.0f}")
        rows.append(row)
    print_table(groups, rows)


def rtt_table(results, s, sizes):
    groups = [("", ["size"])] + [(s.label[x], ["median", "p99"]) for x in s.rtt]
    groups += [("daqx-shm / pttcp", ["median", "p99"]), ("other", ["cores"])]
    rows = []
    for size in sizes:
        row = [size_name(size)]
        for x in s.rtt:
            row += [cell(get(results, x, size, "median_us"), 1), cell(get(results, x, size, "p99_us"), 1)]
        row += [cell(ratio(get(results, "shm", size, k), get(results, "tcp", size, k)))
                for k in ("median_us", "p99_us")]
        row.append(other_load_cell(results, s.rtt, size))
        rows.append(row)
    print_table(groups, rows)


def targets(throughput, rtt, s, sizes, copy_gbps):
    """The issue's targets, one line each with the numbers behind the verdict; also returned for the CSV."""
    lines = []

    def times(value):
        return "n/a" if value is None else f"{value:.2f}x"

    def verdict(ok):
        return "n/a" if ok is None else ("met" if ok else "NOT met")

    for size in sizes:
        shm, shm_row = best(throughput, s.shm_rows, size)
        tcp, _ = best(throughput, s.tcp_rows, size)
        peer, peer_row = best(throughput, s.peer_rows, size)
        if RATE_SIZES[0] <= size <= RATE_SIZES[1]:
            r = ratio(shm, tcp)
            lines.append((size, f"message rate >= {RATE_FACTOR:g}x pttcp",
                          verdict(None if r is None else r >= RATE_FACTOR),
                          f"{cell(shm, 0)} vs {cell(tcp, 0)} msg/s = {times(r)}"))
        r = ratio(shm, peer)
        lines.append((size, "ahead of ZeroMQ ipc and UCX", verdict(None if r is None else r > 1.0),
                      f"{cell(shm, 0)} vs {cell(peer, 0)} msg/s ({s.label.get(peer_row, 'n/a')}) = {times(r)}"))
        if size == max(sizes) and size >= 1 << 20:
            gbps = get(throughput, shm_row, size, "gbps") if shm_row else None
            gb = None if gbps is None else gbps / 8
            lines.append((size, "not limited by copying", verdict(None if gb is None else gb > copy_gbps),
                          f"{cell(gb, 2)} GB/s of payload referenced vs one core's memcpy {copy_gbps:.2f} GB/s"))
        rr = ratio(get(rtt, "shm", size, "median_us"), get(rtt, "tcp", size, "median_us"))
        lines.append((size, f"round trip <= {RTT_FACTOR:g}x pttcp", verdict(None if rr is None else rr <= RTT_FACTOR),
                      f"median {cell(get(rtt, 'shm', size, 'median_us'), 1)} vs "
                      f"{cell(get(rtt, 'tcp', size, 'median_us'), 1)} us = {times(rr)}"))
    width = max(len(what) for _, what, _, _ in lines)
    for size, what, result, numbers in lines:
        print(f"  {size_name(size):>8}  {what:<{width}}  {result:<7}  {numbers}")
    return lines


def plot(path, throughput, rtt, s, sizes, title):
    plt, ticker = pyplot(f"plot {path}")
    if plt is None:
        return
    figure, (rate_axes, gb_axes, rtt_axes) = plt.subplots(1, 3, figsize=(16, 5.5))
    for axes, results, systems, key, scale, ylabel in (
            (rate_axes, throughput, s.throughput, "msgs_per_s", 1.0, "messages/s"),
            (gb_axes, throughput, s.throughput, "gbps", 1 / 8, "GB/s (payload)"),
            (rtt_axes, rtt, s.rtt, "median_us", 1.0, "round trip, median, us")):
        for x in systems:
            points = [(size, get(results, x, size, key)) for size in sizes]
            points = [(a, b * scale) for a, b in points if b is not None]
            if points:
                style = ("-" if x.startswith("shm") else "--" if x.startswith("tcp") else "-." if x == "local"
                         else ":")
                axes.plot([a for a, _ in points], [b for _, b in points], style, marker="o", label=s.label[x])
        axes.set_xscale("log", base=2)
        axes.set_yscale("log")
        axes.set_xticks(sizes)
        axes.set_xticklabels([size_name(size) for size in sizes], rotation=30)
        axes.xaxis.set_minor_locator(ticker.NullLocator())
        axes.set_xlabel("message size")
        axes.set_ylabel(ylabel)
        axes.grid(True, which="both", alpha=0.3)
        axes.legend(fontsize=8)
    figure.suptitle(title, fontsize=10)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)
    print(f"wrote {path}")


# ---------------------------------------------------------------- main

def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build", required=True, help="the daqx build tree (Release): pttcp, nton, the executive")
    parser.add_argument("--ptshm-build", metavar="DIR",
                        help="the build tree with libdaqx_ptshm.so (its executive and nton are used for the shm "
                             "rows); default: --build")
    parser.add_argument("--out", required=True, help="folder for the CSV, the plot, partitions and logs")
    parser.add_argument("--duration", type=float, default=2.0, help="seconds measured per throughput point (2)")
    parser.add_argument("--sizes", nargs="+", help="message sizes (64 1K 4KiB 1M ...), default 64 B .. 1 MiB")
    parser.add_argument("--quick", action="store_true",
                        help="1 s points, sizes 64 B, 1 KiB, 4 KiB, 64 KiB, 1 MiB, fewer round trips")
    parser.add_argument("--repeat", type=int, default=1,
                        help="runs per point, interleaved across systems; the median run is reported, with the "
                             "spread (max-min)/median (1)")
    parser.add_argument("--window", type=int, default=4096, help="nton::Sender window, frames (4096)")
    parser.add_argument("--ack-every", type=int, default=0, help="nton::Sender ackEvery (0: its default, 16)")
    parser.add_argument("--batch", type=int, default=64,
                        help="frames per batch of the batched rows (nton batch parameters); 0 or 1: no batched rows (64)")
    parser.add_argument("--shm-modes", default="latency,throughput",
                        help="ptshm's mode values, one throughput row each (latency,throughput); none: one row "
                             "without a mode property")
    parser.add_argument("--shm-rtt-mode", default="latency", help="ptshm mode for the daqx ping-pong (latency)")
    parser.add_argument("--tcp-rtt-mode", choices=["latency", "throughput"], default="latency",
                        help="pttcp mode for the daqx ping-pong (latency)")
    parser.add_argument("--shm-properties", metavar="K=V,...", default="",
                        help="more ptshm Endpoint properties, e.g. ringSize=1048576")
    parser.add_argument("--shm-pool-allocator", default="shm",
                        help="the allocator of every pool in the shm partitions (a Policy Pool rule): shm, "
                             "shm:hugepage, ...; none: no rule (default shm)")
    parser.add_argument("--ucx-wait", choices=["auto", "poll", "sleep"], default="auto",
                        help="ucx_perftest -E: auto = sleep for tag_bw on <= 2 usable CPUs or with both sides "
                             "pinned to a shared CPU, poll otherwise; tag_lat polls unless the sides share a CPU")
    parser.add_argument("--pin", metavar="SENDER/RECEIVER",
                        help="CPU lists for the sending and receiving side's processes, e.g. 0/1 (default: not pinned)")
    parser.add_argument("--systems", help="comma-separated subset of the throughput systems (shm-latency, "
                                          "shm-throughput, tcp-latency, tcp-throughput, zmq-ipc, ucx-sm, ucx-posix, "
                                          "ucx-sysv, ucx-cma, local) and round-trip ones written rtt-shm, rtt-tcp, "
                                          "rtt-zmq-ipc, rtt-ucx-sm ...")
    parser.add_argument("--no-rtt", action="store_true", help="skip the round-trip table")
    parser.add_argument("--no-throughput", action="store_true", help="skip the throughput table")
    args = parser.parse_args()

    duration = 1.0 if args.quick and args.duration == 2.0 else args.duration
    sizes = [parse_size(x) for x in args.sizes] if args.sizes else (QUICK_SIZES if args.quick else DEFAULT_SIZES)
    out = os.path.abspath(args.out)
    log_dir = os.path.join(out, "logs")
    os.makedirs(log_dir, exist_ok=True)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # unwinds through the finally below

    pin = parse_pin(args.pin) if args.pin else None
    processes = Processes(log_dir, pin)
    programs = find_programs(os.path.abspath(args.build))
    s = Systems(args, processes, programs, duration, out)
    throughput_systems = [] if args.no_throughput else list(s.throughput)
    rtt_systems = [] if args.no_rtt else list(s.rtt)
    if args.systems:
        chosen = set(args.systems.split(","))
        throughput_systems = [x for x in throughput_systems if x in chosen]
        rtt_systems = [x for x in rtt_systems if f"rtt-{x}" in chosen]

    conditions = machine_conditions()
    print("== Shared-memory comparison: daqx over ptshm vs daqx over pttcp (loopback), ZeroMQ ipc://, UCX sm/posix/"
          "sysv/cma")
    print(f"machine: nproc {conditions['nproc']} (usable {conditions['usable_cpus']}), load average "
          f"{conditions['load_average']}, kernel {conditions['kernel']}, cpu {conditions['cpu']}")
    print(f"daqx-pttcp from {os.path.abspath(args.build)}; daqx-shm from {s.ptshm_build}"
          + (f" (n/a: {s.shm.missing})" if s.shm.missing else ""))
    for variant, why in s.ucx_missing.items():
        print(f"ucx-{variant}: n/a ({why})")
    print(f"ucx_perftest -E {s.ucx_wait_bw} for tag_bw, -E {s.ucx_wait_lat} for tag_lat (--ucx-wait {args.ucx_wait})")
    copy_gbps = memcpy_gbps()
    print(f"one core's memcpy of 1 MiB messages through 64 MiB rings: {copy_gbps:.2f} GB/s (the bound of a "
          f"transport that copies each message once)")
    print(f"duration per throughput point {duration:g} s; sizes {', '.join(size_name(x) for x in sizes)}; "
          f"{args.repeat} run(s) per point, interleaved")

    throughput, rtt, tries = {}, {}, {}
    started = time.monotonic()
    try:
        progress = Progress(len(sizes) * args.repeat * (len(throughput_systems) + len(rtt_systems)))
        # Repeats go round the systems, so that whatever else loads the machine meanwhile falls on all alike.
        for size in sizes:
            for attempt in range(args.repeat):
                for system in throughput_systems:
                    r = attempt_point(f"throughput {system}", size, attempt,
                                      lambda: s.throughput_point(system, size), progress)
                    tries.setdefault(("t", system, size), []).append(r)
            for system in throughput_systems:
                throughput[(system, size)] = median_with_spread(tries[("t", system, size)], "msgs_per_s")
        for size in sizes:
            count, warmup = round_trip_counts(size, args.quick)
            for attempt in range(args.repeat):
                for system in rtt_systems:
                    r = attempt_point(f"round trip {system}", size, attempt,
                                      lambda: s.rtt_point(system, size, count, warmup), progress)
                    tries.setdefault(("r", system, size), []).append(r)
            for system in rtt_systems:
                rtt[(system, size)] = median_with_spread(tries[("r", system, size)], "median_us")
    finally:
        processes.stop_all()

    repeats = f"the median of {args.repeat} runs (spread: (max-min)/median)" if args.repeat > 1 else "one run"
    s.throughput = throughput_systems
    s.rtt = rtt_systems
    def close_table(results, systems, spread_title, csv_name, fields):
        """What follows each table: the spread over the repeats, the outside load, the failures, the CSV."""
        if args.repeat > 1:
            spread_table(results, systems, s.label, sizes, spread_title)
        other_load_summary(results)
        print_failures(results)
        write_csv(os.path.join(out, csv_name), results, fields)
        print(f"wrote {os.path.join(out, csv_name)}")

    if throughput_systems:
        print()
        print(f"== Message rate and bandwidth, one stream; {duration:g} s per point, {repeats}; load average now "
              f"{load_average()}; {time.monotonic() - started:.0f} s in all")
        throughput_table(throughput, s, sizes)
        print_notes(
            "shm-lat/shm-thr = nton::Sender -> nton::Receiver in two executives over ptshm (Endpoint protocol shm, "
            "mode latency / throughput), every pool in shared memory; pttcp-lat/pttcp-thr the same over pttcp on "
            f"127.0.0.1; window {args.window} frames, ackEvery {args.ack_every or 16}, pattern=false; rate over a "
            f"steady {duration:g} s window from {Daqx.WARM_SECONDS} s after enable; message size = frameSize (its "
            "32-byte data header included). zmq-ipc: PUSH/PULL over ipc://, default HWM, zero-copy messages from "
            "16 KiB. ucx-*: ucx_perftest tag_bw with UCX_TLS=sm, posix, sysv, cma,posix (cma has no eager path of "
            f"its own), -E {s.ucx_wait_bw}, a calibrating run first, then about {duration:g} s of messages. "
            "GB/s = 10^9 "
            "payload bytes/s (for daqx-shm: payload referenced, whether or not it was copied). daqx-shm / pttcp: the "
            "better of each one's two modes; best peer: the fastest of zmq-ipc and the ucx rows (named under peer). "
            "no-transport: Sender and Receiver in ONE executive (of the ptshm tree), frames handed over without a "
            "transport: the application side's own rate, a reference rather than a peer. "
            "other cores: CPU used meanwhile by processes outside the point (the worst of the row).")
        close_table(throughput, throughput_systems, "message rate spread over the repeats, %", "shm_throughput.csv",
                    ["msgs_per_s", "gbps", "bytes", "seconds", "cpu_sender_s", "cpu_receiver_s", "frames_copied",
                     "other_cores", "spread_pct", "repeats"])
    if rtt_systems:
        print()
        print(f"== Round-trip time (ping-pong), microseconds; {repeats}")
        rtt_table(rtt, s, sizes)
        print_notes(
            f"daqx-shm / daqx-pttcp = nton::PingPong between two executives over ptshm ({args.shm_rtt_mode} mode) / "
            f"pttcp ({args.tcp_rtt_mode} mode); zmq-ipc = REQ/REP over ipc://, the reply re-sent as the next request; "
            f"ucx-* = ucx_perftest tag_lat (-E {s.ucx_wait_lat}), two runs per point: -R 50 and -R 99, each value "
            "doubled (it reports half "
            "a round trip, and its percentile covers only its last 2048 iterations). Median and p99 (nearest rank) "
            "after a warmup for daqx and zmq.")
        close_table(rtt, rtt_systems, "median round-trip spread over the repeats, %", "shm_rtt.csv",
                    ["median_us", "p99_us", "min_us", "max_us", "samples", "other_cores", "spread_pct", "repeats"])
    print()
    print("== Targets (issue 18); daqx-shm = the better of its modes")
    lines = targets(throughput, rtt, s, sizes, copy_gbps)
    with open(os.path.join(out, "shm_targets.csv"), "w") as f:
        f.write("size_bytes,target,verdict,numbers\n")
        for size, what, result, numbers in lines:
            f.write(f'{size},"{what}",{result},"{numbers}"\n')
    print(f"wrote {os.path.join(out, 'shm_targets.csv')}")
    print("for scale (quoted from issue 18, a separate quiet run, not measured here): UCX_TLS=sm "
          + ", ".join(f"{size_name(k)} {v}" for k, v in ISSUE_UCX_SM.items()))
    plot(os.path.join(out, "shm_comparison.png"), throughput, rtt, s, sizes,
         f"shared memory vs loopback TCP, {conditions['nproc']} cores shared, kernel {conditions['kernel']}, "
         f"{repeats}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
