#!/usr/bin/env python3
"""What the BU's stream of built events costs the event builder: its rate with 0, 1 and 4 subscribers (evb::Monitor,
each in its own executive, or with --placement bu in its BU's) per BU for each policy, side by side in one run, on
loopback over pttcp (or ptshm: --transport shm); printed as a table and written as CSV and a PNG plot. A benchmark,
never a test.

Usage: python3 bench/evb_streams.py [--build BUILD] [--out DIR] [--topology 2x2] [--size 16K]
                                    [--policies block,drop-newest,...] [--subscribers 0,1,4] [--verify]
                                    [--placement own|bu] [--transport tcp|shm] [--trigger-rate HZ]
                                    [--stream-batch-interval S] [--monitor-dispatch auto|inline|thread]
                                    [--seconds S] [--warmup S] [--repeat N] [--quick] [--pin [CPUS]]
Every repeat measures each point once, the points taking turns, and the median by events/s is reported. The cost
of a point is 1 - (its events/s) / (events/s without a subscriber). The issue's targets: a sampled stream costs at
most 2 %, a block subscriber that keeps up at most 5 %. See docs/monitoring.md ("The event builder's stream and the
Monitor") for what the subscribers do; docs/benchmarks-evb.md for the event builder's own parameters.
Shares its process, HTTP and table helpers with the other drivers (python/daqx/bench.py) and its event builder
runs with bench/evb_efficiency.py (python/daqx/evb_bench.py).
"""

import argparse
import csv
import os
import signal
import sys
import time

sys.dont_write_bytecode = True  # importing the package would leave __pycache__ in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
from daqx.bench import (  # noqa: E402  (the repository's package, found from this file)
    Processes, Progress, attempt, cell, conditions_line, load_average, median_run, parse_size, print_notes,
    print_table, pyplot, ratio, size_name)
from daqx.evb_bench import (  # noqa: E402
    BU_TID, EVB, TRANSPORT_MODULES, Setup, parse_cpus, parse_topology, run_evb)

CPUS = os.cpu_count() or 1
MONITOR_TID = 300  # monitor k of BU j: 300 + j * MONITORS_PER_BU_MAX + k
MONITORS_PER_BU_MAX = 100

DEFAULT_POLICIES = "block,drop-newest,drop-oldest,keep-last,sample:100,rate:100"
QUICK_POLICIES = "block,sample:100"
DEFAULT_SUBSCRIBERS = "0,1,4"
QUICK_SUBSCRIBERS = "0,1"

CSV_FIELDS = ["events_per_s", "bytes_per_s", "cost", "paired_cost", "bu_cpu_us_per_event", "bu_cpu_cost", "monitor_events_per_s",
              "monitor_dropped_per_s", "cores", "cores_bus", "cores_monitors", "other_cores", "build_latency_median_us",
              "seconds", "repeats"]


def monitors(bus, count, policy, verify, placement, dispatch=None):
    """`count` evb::Monitor units per BU, each subscribed to its BU's stream `events` with `policy`: each in an
    executive of its own (placement "own"), or in its BU's (placement "bu": the records handed over as shared
    Refs, no copy and no transport)."""
    return [("monitor", "evb::Monitor", MONITOR_TID + j * MONITORS_PER_BU_MAX + k, j * count + k,
             {"publisher": str(BU_TID + j), "policy": policy, "verify": "true" if verify else "false",
              **({"dispatch": dispatch} if dispatch else {})},
             BU_TID + j if placement == "bu" else None)
            for j in range(bus) for k in range(count)]


def point_name(policy, count):
    return "no subscriber" if count == 0 else f"{count} x {policy}"


def summary(r):
    received = r.get("monitor_events_per_s")
    return (f"{r['events_per_s']:.0f} ev/s, {r['bytes_per_s'] / 1e9:.3f} GB/s"
            + (f", subscribers received {received:.0f} ev/s" if received is not None else "")
            + f", {r['cores']:.2f} cores, other {r['other_cores']:.2f}")


def bu_cpu_per_event(r):
    """Microseconds of the BUs' processes' CPU per built event: what publishing costs the publisher itself, apart
    from the CPU its subscribers take from the same cores."""
    if not r or "na" in r or not r.get("events_per_s") or r.get("cores_bus") is None:
        return None
    return 1e6 * r["cores_bus"] / r["events_per_s"]


def bu_cpu_cost(results, point, base):
    r, b = bu_cpu_per_event(results.get(point)), bu_cpu_per_event(results.get(base))
    return None if r is None or not b else r / b - 1


def paired_cost(tries, base_tries):
    """The median over the repeats of each repeat's cost against the reference run of the same repeat (they ran
    seconds apart): what drifts over a run (the machine's other work, its clock) cancels out of each pair."""
    costs = sorted(1 - r["events_per_s"] / b["events_per_s"] for r, b in zip(tries, base_tries)
                   if "na" not in r and "na" not in b and b.get("events_per_s"))
    return costs[(len(costs) - 1) // 2] if costs else None


def cost(results, point, base):
    r = results.get(point)
    b = results.get(base)
    if not r or not b or "na" in r or "na" in b:
        return None
    rate = ratio(r["events_per_s"], b["events_per_s"])
    return None if rate is None else 1 - rate


def table(results, policies, counts, own_processes=True):
    """Rows: policies; columns: events/s, cost and what the subscribers received, by subscriber count."""
    base = ("none", 0)
    shown = [c for c in counts if c]
    groups = [("", ["policy"]), ("events/s", [f"{c} sub" for c in counts]),
              ("cost", [f"{c} sub" for c in shown]), ("paired cost", [f"{c} sub" for c in shown]),
              ("BU CPU us/ev", [f"{c} sub" for c in counts]),
              ("BU CPU cost", [f"{c} sub" for c in shown]), ("received ev/s", [f"{c} sub" for c in shown]),
              ("subscribers' CPU", [f"{c} sub" for c in shown]), ("cores", [f"{c} sub" for c in counts])]
    rows = []

    def get(point, key):
        r = results.get(point)
        return None if r is None or "na" in r else r.get(key)

    for p in policies:
        points = [base if c == 0 else (p, c) for c in counts]
        row = [p]
        row += [cell(get(x, "events_per_s"), 0) for x in points]
        row += ["n/a" if cost(results, (p, c), base) is None else f"{100 * cost(results, (p, c), base):+.1f}%"
                for c in shown]
        row += ["n/a" if get((p, c), "paired_cost") is None else f"{100 * get((p, c), 'paired_cost'):+.1f}%"
                for c in shown]
        row += [cell(bu_cpu_per_event(results.get(x)), 2) for x in points]
        row += ["n/a" if bu_cpu_cost(results, (p, c), base) is None else f"{100 * bu_cpu_cost(results, (p, c), base):+.1f}%"
                for c in shown]
        row += [cell(get((p, c), "monitor_events_per_s"), 0) for c in shown]
        row += ["n/a" if get((p, c), "cores_monitors") is None or not own_processes
                else f"{100 * get((p, c), 'cores_monitors') / CPUS:.1f}%" for c in shown]
        row += [cell(get(x, "cores")) for x in points]
        rows.append(row)
    print_table(groups, rows)


def write_csv(path, results, rus, bus, size, variants):
    with open(path, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["policy", "stream_batch_interval_s", "subscribers_per_bu", "n", "m", "size_bytes"]
                        + CSV_FIELDS + ["note"])
        for (label, count), r in results.items():
            policy, interval = variants.get(label, (label, None))
            r = dict(r, cost=cost(results, (label, count), ("none", 0)) if count else 0.0,
                     bu_cpu_us_per_event=bu_cpu_per_event(r),
                     bu_cpu_cost=bu_cpu_cost(results, (label, count), ("none", 0)) if count else 0.0)
            cells = ["" if r.get(k) is None else (f"{r[k]:.6g}" if isinstance(r[k], float) else r[k])
                     for k in CSV_FIELDS]
            writer.writerow([policy, "" if interval is None or not count else f"{interval:g}", count, rus, bus,
                             size] + cells + [r.get("na", r.get("note", ""))])
    print(f"wrote {path}")


def plot(path, results, policies, counts, title):
    plt, _ = pyplot("plot")
    if plt is None:
        return
    shown = [c for c in counts if c]
    base = results.get(("none", 0))
    figure, axes = plt.subplots(figsize=(max(6, 1.4 * len(policies) + 2), 5))
    width = 0.8 / max(1, len(shown))
    for i, c in enumerate(shown):
        values = []
        for p in policies:
            r = results.get((p, c))
            values.append(ratio(r["events_per_s"], base["events_per_s"]) if r and base and "na" not in r
                          and "na" not in base else 0)
        axes.bar([x + (i - (len(shown) - 1) / 2) * width for x in range(len(policies))], values, width,
                 label=f"{c} subscriber{'s' if c > 1 else ''} per BU")
    axes.axhline(0.98, color="grey", linestyle="--", linewidth=1, label="sampled target (-2 %)")
    axes.axhline(0.95, color="grey", linestyle=":", linewidth=1, label="block target (-5 %)")
    axes.set_xticks(range(len(policies)))
    axes.set_xticklabels(policies)
    axes.set_ylabel("events/s relative to no subscriber")
    axes.set_ylim(bottom=0)
    axes.set_title(title, fontsize=9)
    axes.legend(fontsize=8)
    axes.grid(True, axis="y", alpha=0.3)
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)
    print(f"wrote {path}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build", default="build/release", help="the daqx build tree, Release (build/release)")
    parser.add_argument("--out", default="build/bench/evb-streams", help="folder for CSV, plot, partitions, logs")
    parser.add_argument("--topology", type=parse_topology, help="RUs x BUs (2x2; --quick 1x1)")
    parser.add_argument("--size", default="16K", help="super-fragment size S per RU per event (16K)")
    parser.add_argument("--policies", help=f"subscriber policies ({DEFAULT_POLICIES}; --quick {QUICK_POLICIES})")
    parser.add_argument("--subscribers", help=f"subscribers per BU ({DEFAULT_SUBSCRIBERS}; --quick {QUICK_SUBSCRIBERS})")
    parser.add_argument("--verify", action="store_true",
                        help="the monitors verify every event they receive (default: they only count)")
    parser.add_argument("--seconds", type=float, help="measurement window, s (5; --quick 2)")
    parser.add_argument("--warmup", type=float, help="s from the last enable to the window's start (2; --quick 1)")
    parser.add_argument("--repeat", type=int, default=1, help="runs per point, taking turns; the median is reported (1)")
    parser.add_argument("--slots", type=int, default=16, help="BU slots (16, its default)")
    parser.add_argument("--trigger-size", type=int, default=1024, help="EvM triggerSize (1024, its default)")
    parser.add_argument("--placement", choices=["own", "bu"], default="own",
                        help="where each monitor runs: an executive of its own (own, the default; its records go "
                             "over the transport), or its BU's executive (bu: shared Refs, zero copy)")
    parser.add_argument("--transport", choices=["tcp", "shm"], default="tcp",
                        help="every context's endpoint: tcp (pttcp, the default) or shm (ptshm: the records go to a "
                             "monitor of its own by reference, the RUs' blocks in them included)")
    parser.add_argument("--trigger-rate", type=float,
                        help="events/s the EvM triggers at (default: none, the builder runs as fast as it can); below "
                             "the machine's limit, a subscriber that slows nothing leaves the rate where it was")
    parser.add_argument("--stream-batch-interval", metavar="S[,S...]",
                        help="the BUs' streamBatchInterval: s a sampled subscriber's records wait to go as a batch "
                             "(0: each at once; default the BU's, 0.1); several: each policy's rows at each, side "
                             "by side in the run (e.g. 0,0.02)")
    parser.add_argument("--monitor-dispatch", choices=["auto", "inline", "thread"],
                        help="the monitors' dispatch parameter (default auto: records handled on the receiving "
                             "thread; thread: handed to the monitor's dispatch thread)")
    parser.add_argument("--pin", nargs="?", const="", metavar="CPUS",
                        help="pin each context's threads to one CPU, contexts round-robin over CPUS")
    parser.add_argument("--quick", action="store_true",
                        help=f"smoke test: 1x1, policies {QUICK_POLICIES}, subscribers {QUICK_SUBSCRIBERS}, "
                             "1 s warmup, 2 s windows")
    args = parser.parse_args()
    args.seconds = args.seconds if args.seconds is not None else (2.0 if args.quick else 5.0)
    args.warmup = args.warmup if args.warmup is not None else (1.0 if args.quick else 2.0)
    rus, bus = args.topology or ((1, 1) if args.quick else (2, 2))
    size = parse_size(args.size)
    policies = (args.policies or (QUICK_POLICIES if args.quick else DEFAULT_POLICIES)).split(",")
    try:
        counts = sorted({int(c) for c in (args.subscribers or (QUICK_SUBSCRIBERS if args.quick
                                                               else DEFAULT_SUBSCRIBERS)).split(",")})
    except ValueError:
        parser.error("--subscribers: a list of counts such as 0,1,4")
    if 0 not in counts or any(c < 0 or c >= MONITORS_PER_BU_MAX for c in counts):
        parser.error(f"--subscribers: counts from 0 to {MONITORS_PER_BU_MAX - 1}, 0 among them (the reference)")
    try:
        intervals = ([float(i) for i in args.stream_batch_interval.split(",")] if args.stream_batch_interval
                     else [None])
    except ValueError:
        parser.error("--stream-batch-interval: seconds, or a list of them such as 0,0.02")
    # The table's rows: a policy, at each batch interval asked for (its label then says which).
    variants = {(f"{p} @{i:g}s" if len(intervals) > 1 else p): (p, i) for p in policies for i in intervals}
    # What run_evb reads of the event builder's options, as bench/evb_efficiency.py has them by default.
    args.events_per_request = None
    args.fixed_events = None
    args.batch_bytes = None
    args.pin_cpus = None
    if args.pin is not None:
        args.pin_cpus = parse_cpus(args.pin) if args.pin else sorted(os.sched_getaffinity(0))

    build = os.path.abspath(args.build)
    out = os.path.abspath(args.out)
    log_dir = os.path.join(out, "logs")
    os.makedirs(log_dir, exist_ok=True)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    start_load = load_average()
    print(f"== The BU's stream of built events: {rus}x{bus} event builder, S = {size_name(size)}, with 0..{max(counts)} "
          f"evb::Monitor subscribers per BU of each policy, "
          f"{'each in its BU' + chr(39) + 's executive' if args.placement == 'bu' else 'one executive each'}, "
          f"on loopback over {'ptshm' if args.transport == 'shm' else 'pttcp'}")
    print(conditions_line(start_load, at_start=True))
    processes = Processes(log_dir)
    setup = Setup(args, processes, build, out)
    missing = setup.missing([EVB, TRANSPORT_MODULES[args.transport]])
    if missing:
        print(f"cannot run: {missing} (build with: ninja -C {build} daqx-executive daqx_evb daqx_pt{args.transport})")
        return 2

    points = [("none", 0)] + [(v, c) for v in variants for c in counts if c]
    progress = Progress(args.repeat * len(points))
    tries, results = {}, {}
    started = time.monotonic()
    try:
        for n_try in range(args.repeat):
            for variant, count in points:
                policy, args.stream_batch_interval = variants.get(variant, (variant, intervals[0]))

                def one(policy=policy, count=count, variant=variant):
                    suffix = ("-streams-none" if count == 0 else
                              f"-streams-{count}x{variant.replace(':', '').replace(' @', '-')}")
                    return run_evb(setup, rus, bus, size,
                                   others=monitors(bus, count, policy, args.verify, args.placement,
                                                  args.monitor_dispatch),
                                   name_suffix=suffix)
                r = attempt(f"{point_name(variant, count)} #{n_try + 1}", one, progress, summary)
                tries.setdefault((variant, count), []).append(r)
        for point in points:
            results[point] = median_run(tries[point], "events_per_s")
        for point in points[1:]:
            results[point]["paired_cost"] = paired_cost(tries[point], tries[points[0]])
    except KeyboardInterrupt:
        print("\ninterrupted: stopping every executive")
        return 130
    finally:
        processes.stop_all()

    repeats = f"median of {args.repeat} runs" if args.repeat > 1 else "one run"
    print()
    print(f"== Event builder {rus}x{bus} with subscribers of its BUs' streams; {repeats}; {conditions_line(start_load)}")
    table(results, list(variants), counts, own_processes=args.placement == "own")
    where = "in its BU's executive (records as shared Refs)" if args.placement == "bu" else "in an executive of its own"
    batching = ("the BUs' default streamBatchInterval" if intervals == [None] else
                f"streamBatchInterval {intervals[0]:g} s" if len(intervals) == 1 else
                "streamBatchInterval per row after @")
    print_notes(f"subscribers per BU, each an evb::Monitor {where} (verify "
                f"{'on' if args.verify else 'off'}, dispatch {args.monitor_dispatch or 'auto'}, {batching}); events/s from the EvM's events_completed over a {args.seconds:g} s "
                f"window after {args.warmup:g} s; cost = 1 - events/s / events/s without a subscriber (the same "
                f"'no subscriber' run for every row); paired cost: the median of each repeat's cost against the "
                f"'no subscriber' run of the same repeat; BU CPU us/ev: the BUs' processes' CPU per built event, what "
                f"publishing costs the publisher apart from the CPU its subscribers take from the same cores; "
                f"received ev/s: the sum over the subscribers; subscribers' CPU: what the monitors' own "
                f"executives used, in % of the machine's {CPUS} CPUs (n/a with --placement bu: they are the BUs' "
                f"processes); cores: every "
                f"process of the run. Targets: a sampled stream at most 2 %, a block subscriber that keeps up at "
                f"most 5 %. BU output discard, slots {args.slots}, RU sources 1, fragmentSize S-32, pt{args.transport} throughput, "
                f"EvM trigger rate {f'{args.trigger_rate:g} /s' if args.trigger_rate else 'none (as fast as it goes)'}.")
    base = results.get(("none", 0), {})
    if args.repeat > 1 and base.get("repeats"):
        values = [float(v) for v in base["repeats"].split() if v != "n/a"]
        if values:
            print(f"  run-to-run spread without a subscriber: {min(values):.0f} to {max(values):.0f} ev/s "
                  f"({100 * (max(values) - min(values)) / base['events_per_s']:.1f} % of the median): a cost "
                  f"within it is not measured")
    for point, r in results.items():
        if "na" in r:
            print(f"  n/a {point_name(*point)}: {r['na']}")
        elif r.get("note"):
            print(f"  note {point_name(*point)}: {r['note']}")
    write_csv(os.path.join(out, "evb_streams.csv"), results, rus, bus, size, variants)
    plot(os.path.join(out, "evb_streams.png"), results, list(variants), counts,
         f"{rus}x{bus}, S = {size_name(size)}, {'shm' if args.transport == 'shm' else 'loopback'}, {os.cpu_count()} CPUs shared by all processes; {repeats}")
    print(f"{time.monotonic() - started:.0f} s in all; logs in {log_dir}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
