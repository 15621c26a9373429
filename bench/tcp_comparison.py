#!/usr/bin/env python3
"""TCP comparison: daqx over pttcp against iperf3, ZeroMQ, UCX and plain TCP on loopback, in one run, printed as
two tables (throughput, round-trip time) and written as CSV and a PNG plot. A benchmark, never a test.

Usage: python3 bench/tcp_comparison.py --build BUILD --out DIR [--duration S] [--sizes 64 1K ...] [--quick]
See docs/benchmarks-tcp.md for what every column means and what makes the comparison fair.
"""

import argparse
import os
import signal
import sys
import time

sys.dont_write_bytecode = True  # importing the package would leave __pycache__ in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
from daqx.bench import (  # noqa: E402  (the repository's package, found from this file)
    PTTCP, Baselines, BenchError, Daqx, Processes, Progress, attempt_point, cell, find_programs, get, load_average,
    machine_conditions, median_run, other_load_cell, other_load_summary, parse_pin, parse_size, print_failures,
    print_notes, print_table, pyplot, ratio, round_trip_counts, size_name, write_csv)


DEFAULT_SIZES = [64, 1024, 4096, 16384, 65536, 262144, 1048576]
QUICK_SIZES = [64, 4096, 65536, 1048576]

# The throughput systems, in table order, and the round-trip systems.
THROUGHPUT = ["daqx-latency", "daqx-throughput", "daqx-throughput-batch", "iperf3", "zmq", "ucx"]
THROUGHPUT_LABEL = {"daqx-latency": "daqx-lat", "daqx-throughput": "daqx-thr", "iperf3": "iperf3",
                    "zmq": "zmq", "ucx": "ucx", "daqx-throughput-pattern": "daqx-thr+pat",
                    "daqx-throughput-batch": "daqx-thr+b",
                    "base-latency": "base-lat", "base-throughput": "base-thr"}
RTT = ["daqx", "tcp", "zmq", "ucx"]


# ---------------------------------------------------------------- tables, CSV, plot

def throughput_table(results, systems, sizes):
    labels = [THROUGHPUT_LABEL[s] for s in systems]
    groups = [("", ["size"]), ("Gb/s", labels), ("messages/s", labels)]
    ratios = ([s for s in ("iperf3", "zmq", "ucx", "base-throughput") if s in systems]
              if "daqx-throughput" in systems else [])
    if ratios:
        groups.append(("daqx-thr /", [THROUGHPUT_LABEL[s] for s in ratios]))
    batch_ratios = ["zmq", "daqx-throughput"] if {"daqx-throughput-batch", "zmq", "daqx-throughput"} <= set(systems) else []
    if batch_ratios:
        groups.append(("daqx-thr+b / (msg/s)", [THROUGHPUT_LABEL[s] for s in batch_ratios]))
    groups.append(("CPU s/GB, sender/receiver", labels))
    groups.append(("other", ["cores"]))
    rows = []
    for size in sizes:
        row = [size_name(size)]
        row += [cell(get(results, s, size, "gbps")) for s in systems]
        row += [cell(get(results, s, size, "msgs_per_s"), 0) for s in systems]
        row += [cell(ratio(get(results, "daqx-throughput", size, "gbps"), get(results, s, size, "gbps")))
                for s in ratios]
        row += [cell(ratio(get(results, "daqx-throughput-batch", size, "msgs_per_s"), get(results, s, size, "msgs_per_s")))
                for s in batch_ratios]
        for s in systems:
            snd, rcv = get(results, s, size, "cpu_sender_s_per_gb"), get(results, s, size, "cpu_receiver_s_per_gb")
            row.append("n/a" if snd is None else f"{snd:.2f}/{rcv:.2f}")
        row.append(other_load_cell(results, systems, size))
        rows.append(row)
    print_table(groups, rows)



def rtt_table(results, systems, sizes):
    labels = {"daqx": "daqx", "base": "base", "tcp": "plain TCP", "zmq": "zmq", "ucx": "ucx"}
    groups = [("", ["size"])] + [(labels[s], ["median", "p99"]) for s in systems]
    both = "daqx" in systems and "tcp" in systems
    if both:
        groups.append(("daqx / plain", ["median", "p99"]))
    against_base = "daqx" in systems and "base" in systems
    if against_base:
        groups.append(("daqx / base", ["median", "p99"]))
    groups.append(("other", ["cores"]))
    rows = []
    for size in sizes:
        row = [size_name(size)]
        for s in systems:
            row += [cell(get(results, s, size, "median_us"), 1), cell(get(results, s, size, "p99_us"), 1)]
        if both:
            row += [cell(ratio(get(results, "daqx", size, key), get(results, "tcp", size, key)))
                    for key in ("median_us", "p99_us")]
        if against_base:
            row += [cell(ratio(get(results, "daqx", size, key), get(results, "base", size, key)))
                    for key in ("median_us", "p99_us")]
        row.append(other_load_cell(results, systems, size))
        rows.append(row)
    print_table(groups, rows)



def plot(path, results, systems, sizes, title):
    plt, ticker = pyplot(f"plot {path}")
    if plt is None:
        return
    figure, axes = plt.subplots(figsize=(9, 5.5))
    for s in systems:
        points = [(size, get(results, s, size, "gbps")) for size in sizes]
        points = [(x, y) for x, y in points if y is not None]
        if points:
            axes.plot([x for x, _ in points], [y for _, y in points], marker="o", label=THROUGHPUT_LABEL[s])
    axes.set_xscale("log", base=2)
    axes.set_yscale("log")  # 64 B and 1 MiB differ by two or three orders of magnitude
    axes.set_xticks(sizes)
    axes.set_xticklabels([size_name(s) for s in sizes])
    axes.set_xlabel("message size")
    axes.set_ylabel("throughput, Gb/s (payload)")
    axes.set_title(title, fontsize=10)
    axes.grid(True, which="both", alpha=0.3)
    axes.xaxis.set_minor_locator(ticker.NullLocator())  # only the measured sizes are labelled
    axes.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)
    print(f"wrote {path}")


# ---------------------------------------------------------------- main
def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build", required=True, help="the daqx build tree (Release)")
    parser.add_argument("--out", required=True, help="folder for the CSV, the plot, partitions and logs")
    parser.add_argument("--duration", type=float, default=3.0, help="seconds measured per throughput point (3)")
    parser.add_argument("--sizes", nargs="+", help="message sizes (64 1K 4KiB 1M ...), default 64 B .. 1 MiB")
    parser.add_argument("--quick", action="store_true", help="1 s points, sizes 64 B, 4 KiB, 64 KiB, 1 MiB, fewer round trips")
    parser.add_argument("--window", type=int, default=4096,
                        help="nton::Sender window, frames (4096: the best of 64..16384 here, see docs/benchmarks-tcp.md)")
    parser.add_argument("--ack-every", type=int, default=0, help="nton::Sender ackEvery (0: its default, 16)")
    parser.add_argument("--batch", type=int, default=64,
                        help="frames per batch of the daqx-throughput-batch row (nton's batch parameters; 64)")
    parser.add_argument("--pack-size", type=int, default=0, help="pttcp packSize in throughput mode (0: its default)")
    parser.add_argument("--rtt-mode", choices=["latency", "throughput"], default="latency",
                        help="pttcp mode for the daqx ping-pong (latency)")
    parser.add_argument("--pattern", choices=["false", "both"], default="false",
                        help="both: also run daqx throughput mode with the pattern filled and verified")
    parser.add_argument("--repeat", type=int, default=1,
                        help="runs per point, interleaved across systems; the median run is reported (1)")
    parser.add_argument("--pin", metavar="SENDER/RECEIVER",
                        help="CPU lists for the sending and receiving side's processes, e.g. 0/1 or 0/0 "
                             "(default: not pinned)")
    parser.add_argument("--systems", help="comma-separated subset of daqx-latency,daqx-throughput,daqx-throughput-batch,daqx-throughput-pattern,iperf3,zmq,"
                                          "ucx,base-latency,base-throughput (throughput) and daqx,base,tcp,zmq,ucx (rtt, written "
                                          "rtt-daqx etc.)")
    parser.add_argument("--base-build", metavar="BUILD",
                        help="another daqx build tree (e.g. the last release) run side by side as base-lat, "
                             "base-thr and base (rtt), with daqx / base ratios: regressions show in one run")
    parser.add_argument("--no-rtt", action="store_true", help="skip the round-trip table")
    parser.add_argument("--no-throughput", action="store_true", help="skip the throughput table")
    parser.add_argument("--self-check", action="store_true",
                        help="only drive nton in one executive (no transport) to check the HTTP driving")
    args = parser.parse_args()

    duration = 1.0 if args.quick and args.duration == 3.0 else args.duration
    sizes = [parse_size(s) for s in args.sizes] if args.sizes else (QUICK_SIZES if args.quick else DEFAULT_SIZES)
    build = os.path.abspath(args.build)
    out = os.path.abspath(args.out)
    log_dir = os.path.join(out, "logs")
    os.makedirs(log_dir, exist_ok=True)

    throughput_systems = list(THROUGHPUT)
    if args.pattern == "both":
        throughput_systems.insert(2, "daqx-throughput-pattern")
    rtt_systems = list(RTT)
    if args.base_build:
        throughput_systems[2:2] = ["base-latency", "base-throughput"]
        rtt_systems.insert(1, "base")
    if args.systems:
        chosen = set(args.systems.split(","))
        throughput_systems = [s for s in throughput_systems if s in chosen]
        rtt_systems = [s for s in rtt_systems if f"rtt-{s}" in chosen]
    if args.no_throughput:
        throughput_systems = []
    if args.no_rtt:
        rtt_systems = []

    # A SIGTERM to the driver unwinds like Ctrl-C, through the finally that stops every process.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))

    pin = parse_pin(args.pin) if args.pin else None
    conditions = machine_conditions()
    print("== TCP comparison on loopback (127.0.0.1): daqx pttcp vs iperf3, ZeroMQ, UCX (tcp), plain TCP")
    print(f"machine: nproc {conditions['nproc']} (usable {conditions['usable_cpus']}), load average "
          f"{conditions['load_average']}, kernel {conditions['kernel']}, cpu {conditions['cpu']}")
    if pin:
        print(f"sending side's processes pinned to CPUs {sorted(pin['sender'])}, receiving side's to "
              f"{sorted(pin['receiver'])}")
    else:
        print(f"sender and receiver processes share these {conditions['nproc']} cores (nothing is pinned)")
    print(f"duration per throughput point {duration:g} s; sizes {', '.join(size_name(s) for s in sizes)}")

    processes = Processes(log_dir, pin)
    programs = find_programs(build)
    daqx = Daqx(processes, build, out, duration, args.window, args.ack_every, args.pack_size)
    daqx.rtt_mode = args.rtt_mode
    base = None
    if args.base_build:
        base = Daqx(processes, os.path.abspath(args.base_build), out, duration, args.window, args.ack_every,
                    args.pack_size)
        base.rtt_mode = args.rtt_mode
        base.prefix = "base-"
    baselines = Baselines(processes, programs, duration)
    if pin and pin["sender"] & pin["receiver"]:
        baselines.ucx_wait = "sleep"
    throughput, rtt = {}, {}
    started = time.monotonic()
    try:
        if args.self_check:
            if daqx.missing and PTTCP not in daqx.missing:
                raise SystemExit(f"cannot self-check: {daqx.missing}")
            daqx.missing = None
            try:
                daqx.self_check(out)
            except BenchError as e:
                print(f"self-check failed: {e}")
                return 1
            return 0
        if daqx.missing:
            print(f"daqx rows: n/a ({daqx.missing})")
        runs = {
            "daqx-latency": lambda size: daqx.throughput("latency", size),
            "daqx-throughput": lambda size: daqx.throughput("throughput", size),
            "daqx-throughput-pattern": lambda size: daqx.throughput("throughput", size, pattern=True),
            "daqx-throughput-batch": lambda size: daqx.throughput("throughput", size, batch=args.batch),
            "base-latency": lambda size: base.throughput("latency", size),
            "base-throughput": lambda size: base.throughput("throughput", size),
            "iperf3": baselines.iperf3,
            "zmq": baselines.zmq,
            "ucx": baselines.ucx,
        }
        rtt_runs = {
            "daqx": daqx.round_trips,
            "base": lambda size, count, warmup: base.round_trips(size, count, warmup),
            "tcp": lambda size, count, warmup: baselines.round_trips("tcp", size, count, warmup),
            "zmq": lambda size, count, warmup: baselines.round_trips("zmq", size, count, warmup),
            "ucx": lambda size, count, warmup: baselines.round_trips("ucx", size, count, warmup),
        }
        progress = Progress(len(sizes) * args.repeat * (len(throughput_systems) + len(rtt_systems)))
        # Repeats go round the systems, so that whatever else loads the machine meanwhile falls on all alike.
        tries = {}
        for size in sizes:
            for attempt in range(args.repeat):
                for system in throughput_systems:
                    r = attempt_point(f"throughput {system}", size, attempt, lambda: runs[system](size), progress)
                    tries.setdefault(("t", system, size), []).append(r)
            for system in throughput_systems:
                throughput[(system, size)] = median_run(tries[("t", system, size)], "gbps")
        for size in sizes:
            count, warmup = round_trip_counts(size, args.quick)
            for attempt in range(args.repeat):
                for system in rtt_systems:
                    r = attempt_point(f"round trip {system}", size, attempt,
                                      lambda: rtt_runs[system](size, count, warmup), progress)
                    tries.setdefault(("r", system, size), []).append(r)
            for system in rtt_systems:
                rtt[(system, size)] = median_run(tries[("r", system, size)], "median_us")
    finally:
        processes.stop_all()

    print()
    repeats = f"the median of {args.repeat} runs" if args.repeat > 1 else "one run"
    print(f"== Throughput, one stream, loopback; {duration:g} s per point, {repeats}; load average now {load_average()}; "
          f"{time.monotonic() - started:.0f} s in all")
    if throughput_systems:
        throughput_table(throughput, throughput_systems, sizes)
        pattern = ("pattern=false (payload neither filled nor verified; sequences checked)" if args.pattern == "false"
                   else "pattern=false, and daqx-thr+pat with pattern=true (filled and verified)")
        print_notes(f"daqx = nton::Sender -> nton::Receiver in two executives over pttcp (mode latency or "
                    f"throughput, other pttcp parameters at their defaults{', packSize ' + str(args.pack_size) if args.pack_size else ''}), "
                    f"window {args.window} frames, ackEvery {args.ack_every or 16}, {pattern}; rate over a steady "
                    f"window of {duration:g} s starting {Daqx.WARM_SECONDS} s after enable. Message size = frameSize "
                    "(its 32-byte data header included; the transport's 32-byte frame header is not counted). "
                    "iperf3: -l size, one stream, Nagle on (its default), rate over the whole run. zmq: PUSH/PULL, "
                    "default HWM, zero-copy messages from 16 KiB. ucx: ucx_perftest tag_bw over UCX_TLS=tcp on lo "
                    "(it busy-polls), rate over its whole run. msg/s = payload bytes / size / s. Gb/s = 10^9 "
                    "payload bits/s. CPU s/GB: utime+stime of the sending / receiving process over the measured "
                    "window, per 10^9 payload bytes. other cores: CPU used meanwhile by processes outside the point "
                    "(the worst of the row); sender and receiver share the machine's cores"
                    f"{', pinned ' + args.pin if args.pin else ', nothing is pinned'}.")
        other_load_summary(throughput)
        print_failures(throughput)
        write_csv(os.path.join(out, "tcp_throughput.csv"), throughput,
                  ["gbps", "msgs_per_s", "bytes", "seconds", "cpu_sender_s", "cpu_receiver_s", "cpu_sender_s_per_gb",
                   "cpu_receiver_s_per_gb", "run_mean_gbps", "would_blocks", "pool_exhausted", "other_cores",
                   "repeats"])
        print(f"wrote {os.path.join(out, 'tcp_throughput.csv')}")
        plot(os.path.join(out, "tcp_throughput.png"), throughput, throughput_systems, sizes,
             f"one TCP stream on loopback, {conditions['nproc']} cores shared, kernel {conditions['kernel']}")
    if rtt_systems:
        print()
        print(f"== Round-trip time (ping-pong), loopback, microseconds; {repeats} per point")
        rtt_table(rtt, rtt_systems, sizes)
        print_notes(f"daqx = nton::PingPong between two executives over pttcp in {args.rtt_mode} mode (frameSize = size, "
                    "its 16-byte ping header included, plus the transport's 32-byte frame header); plain TCP = "
                    "blocking send/recv of size bytes each way, TCP_NODELAY; zmq = REQ/REP, the reply re-sent as the "
                    f"next request; ucx = ucx_perftest tag_lat over UCX_TLS=tcp (-E {baselines.ucx_wait}: "
                    f"{'it busy-polls' if baselines.ucx_wait == 'poll' else 'it sleeps after posting, both sides sharing a CPU'}"
                    "), its median one-way latency doubled (it gives no p99). Median and p99 (nearest rank) after a warmup, computed the same "
                    "way for daqx, plain TCP and zmq. "
                    "other cores: as above.")
        other_load_summary(rtt)
        print_failures(rtt)
        write_csv(os.path.join(out, "tcp_rtt.csv"), rtt, ["median_us", "p99_us", "min_us", "max_us", "samples",
                                                              "other_cores", "repeats"])
        print(f"wrote {os.path.join(out, 'tcp_rtt.csv')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
