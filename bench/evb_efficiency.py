#!/usr/bin/env python3
"""Event-building efficiency: the event builder (evb::EvM, RU, BU) against the N-to-N test applications
(nton::Sender, Receiver) with the same fragment sizes, unit counts and transport, one executive per unit on
loopback over pttcp, in one run; printed as tables and written as CSV and PNG plots. A benchmark, never a test.

Usage: python3 bench/evb_efficiency.py [--build BUILD] [--out DIR] [--sizes 1K 16K ...] [--topologies 1x1,2x2]
                                       [--seconds S] [--warmup S] [--quick] [--pin [CPUS]] [--repeat N]
                                       [--baseline BUILD]
--baseline BUILD measures every point also with a second build tree (e.g. of the previous commit), the two builds
taking turns within each repeat, and adds its columns ("EvB (baseline)") and the ratio current/baseline.
See docs/benchmarks-evb.md for what every column means.
Shares its process, HTTP and table helpers with the other drivers (python/daqx/bench.py).
"""

import argparse
import csv
import os
import signal
import subprocess
import sys
import time

sys.dont_write_bytecode = True  # importing the package would leave __pycache__ in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
from daqx.bench import (  # noqa: E402  (the repository's package, found from this file)
    BenchError, Processes, Progress, attempt, cell, conditions_line, load_average, machine_conditions, median_run,
    parse_size, print_notes, print_table, pyplot, size_name)
from daqx.evb_bench import (  # noqa: E402
    EVB, SOURCE_OVERHEAD, Run, Setup, make_units, parse_cpus, parse_topology, run_evb)

NTON = "libdaqx_nton.so"

DEFAULT_SIZES = [1 << 10, 4 << 10, 16 << 10, 64 << 10, 256 << 10, 1 << 20]
QUICK_SIZES = [4 << 10, 64 << 10, 1 << 20]
DEFAULT_TOPOLOGIES = "1x1,2x2,4x4,8x8"
QUICK_TOPOLOGIES = "1x1,2x2"

SENDER_TID, RECEIVER_TID = 300, 400

# The systems of the size scan, in table order.
# EvB and EvB+checks run with the EvM's defaults (batches sized in bytes); "EvB 8/request" fixes eventsPerRequest
# at 8, the default before batches were sized, for comparison.
SYSTEMS = ["evb", "evb-checks", "evb-fixed", "nton"]
LABEL = {"evb": "EvB", "evb-checks": "EvB+checks", "evb-fixed": "EvB 8/request", "nton": "N-to-N"}
EVB_SYSTEMS = ["evb", "evb-checks", "evb-fixed"]

# --baseline: each system measured with the baseline build too, as its twin "<system>@baseline" beside it in the
# results, the tables and the plots ("EvB (baseline)").
BASE = "@baseline"
LABEL.update({s + BASE: f"{LABEL[s]} (baseline)" for s in SYSTEMS})


def plain(s):
    """The system a result column measures, whichever build ran it."""
    return s.removesuffix(BASE)


def nton_of(s):
    """The N-to-N column a system's efficiency divides by: the one of the same build."""
    return "nton" + BASE if s.endswith(BASE) else "nton"


def with_baseline(systems, baseline):
    """The systems' columns in table order, each current one followed by its baseline twin when there is one."""
    return [x for s in systems for x in ([s, s + BASE] if baseline else [s])]


def compared(systems):
    """The current systems whose baseline twin is among the columns."""
    return [s for s in systems if not s.endswith(BASE) and s + BASE in systems]


def build_order(systems, n_try, baseline):
    """The runs of one repeat: each system with the current build and, with --baseline, the baseline build
    right before or after it (baseline first in repeats #1, #3, ...; current first in #2, #4, ...), so that both
    builds of a point see the same machine conditions."""
    if not baseline:
        return list(systems)
    pair = (lambda s: [s + BASE, s]) if n_try % 2 == 0 else (lambda s: [s, s + BASE])
    return [x for s in systems for x in pair(s)]

# Fragment-size workloads beside the fixed-size scan, at the size scan's topology: (label, RU parameters).
# CMS: each RU reads many FEDs of about 2 kB with a wide log-normal spread (the CMS event builder's Run 2
# conditions: about 1 MB events from some 700 FEDs, 8-12 per readout unit). LHCb: each readout node gets a few
# small fragments per event (about 100 kB events from some 500 boards, 2-3 per node, i.e. about 200 B each),
# the regime LHCb answers with multi-event packets; here the EvM's byte-sized batches do that job.
WORKLOADS = {
    "cms": ("CMS-like: 12 sources x 2 KiB, log-normal spread 2 KiB",
            {"sources": 12, "fragmentSize": 2048, "fragmentSpread": 2048}),
    "lhcb": ("LHCb-like: 3 sources x 224 B, log-normal spread 64 B",
             {"sources": 3, "fragmentSize": 224, "fragmentSpread": 64}),
}

SENDER_PROBLEMS = ["send_errors"]
RECEIVER_PROBLEMS = ["pattern_errors", "sequence_errors", "malformed_frames", "send_errors"]


# ---------------------------------------------------------------- the event builder

def workload_size(ru):
    """The mean super-fragment size of an RU's parameters: per source a header and trailer, the payload padded to
    8 bytes (half of 7 on average); a multiple of 8, for the N-to-N frames that stand for it."""
    per_source = ru["fragmentSize"] + SOURCE_OVERHEAD + (4 if ru["fragmentSize"] % 8 == 0 and ru["fragmentSpread"] else 0)
    return (ru["sources"] * per_source + 7) // 8 * 8


# ---------------------------------------------------------------- N-to-N

def nton_units(args, senders, receivers, size):
    sender = {"frameSize": size, "duration": 0, "window": args.window, "pattern": "false",
              "receivers": "class:nton::Receiver"}
    spec = [("receiver", "nton::Receiver", RECEIVER_TID + j, j, {}) for j in range(receivers)]
    spec += [("sender", "nton::Sender", SENDER_TID + i, i, sender) for i in range(senders)]
    return make_units(spec)


def run_nton(setup, senders, receivers, size):
    missing = setup.missing([NTON])
    if missing:
        raise BenchError(missing)
    units = nton_units(setup.args, senders, receivers, size)
    run = Run(setup, f"nton-{senders}x{receivers}-{size}", units, [NTON])
    try:
        run.start()
        window = run.measure()
        frames = window.rate("receiver", "frames_received")
        if frames <= 0:
            raise BenchError("stalled: no frame received in the window")
        result = {
            "bytes_per_s": window.rate("receiver", "bytes_received"),
            "frames_per_s": frames,
            # One event of the event builder is one super-fragment from each RU: the same in frames.
            "events_per_s": frames / senders,
            "seconds": window.seconds(),
            "cores": window.cores(),
            "cores_senders": window.cores("sender"),
            "cores_receivers": window.cores("receiver"),
            "other_cores": window.other_cores(),
            "pool_exhausted_per_s": window.rate("sender", "pool_exhausted"),
            "would_blocks_per_s": window.rate("sender", "sends_deferred"),
        }
        result["note"] = "; ".join(window.problems({"sender": SENDER_PROBLEMS, "receiver": RECEIVER_PROBLEMS}))
        run.shut()
        return result
    finally:
        run.terminate()


# ---------------------------------------------------------------- repeats, tables, CSV, plots

def point_summary(r):
    return (f"{r['bytes_per_s'] / 1e9:.3f} GB/s, {r['events_per_s']:.0f} ev/s, {r['cores']:.2f} cores used, "
            f"other {r['other_cores']:.2f}")


def csv_result(results, s, rest):
    """A result as its CSV line has it: with its efficiency (against the N-to-N of the same build and point) and,
    for a current system measured with the baseline too, vs_baseline = GB/s current/baseline."""
    r = dict(results[(s, *rest)])
    if plain(s) != "nton":
        r["efficiency"] = ratio(value(results, (s, *rest), "bytes_per_s"),
                                value(results, (nton_of(s), *rest), "bytes_per_s"))
    if (s + BASE, *rest) in results:
        r["vs_baseline"] = ratio(value(results, (s, *rest), "bytes_per_s"),
                                 value(results, (s + BASE, *rest), "bytes_per_s"))
    return r


def csv_order(s):
    """Systems in table order, each build's line after the current one."""
    return SYSTEMS.index(plain(s)), s.endswith(BASE)


def csv_system(s, baseline):
    """The CSV's system (and, with --baseline, build) cells of a result column."""
    return (plain(s), "baseline" if s.endswith(BASE) else "current") if baseline else (s,)


def build_source(build):
    """What a build tree was built from: its source folder's commit (from CMakeCache.txt and git), and the files
    of that work tree changed since (not all of them need be in the build)."""
    try:
        with open(os.path.join(build, "CMakeCache.txt")) as f:
            source = next((line.split("=", 1)[1].strip() for line in f
                           if line.startswith("CMAKE_HOME_DIRECTORY:")), None)
        if not source:
            return "source unknown"
        commit = subprocess.run(["git", "-C", source, "log", "-1", "--format=%h %s"], capture_output=True,
                                text=True, timeout=10).stdout.strip()
        changed = subprocess.run(["git", "-C", source, "status", "--porcelain", "--untracked-files=no"],
                                 capture_output=True, text=True, timeout=10).stdout.split("\n")
        changed = [line[3:] for line in changed if line.strip()]
    except (OSError, subprocess.SubprocessError):
        return "source unknown"
    if not commit:
        return f"source {source}"
    more = f", ... ({len(changed)} files)" if len(changed) > 3 else ""
    return (f"source {source} at {commit[:70]}"
            + (f" + changes not committed in {', '.join(changed[:3])}{more}" if changed else ""))


def value(results, key, field):
    r = results.get(key)
    if r is None or "na" in r:
        return None
    return r.get(field)


def ratio(a, b):
    return a / b if a is not None and b else None


def fmt(v, spec):
    return "n/a" if v is None else format(v, spec)


def rate_cell(v):
    return cell(v, 0)


def size_table(results, sizes, systems):
    labels = [LABEL[s] for s in systems]
    groups = [("", ["S"]), ("GB/s", labels)]
    eff = [s for s in systems if plain(s) in EVB_SYSTEMS and nton_of(s) in systems]
    if eff:
        groups.append(("efficiency", [LABEL[s] + "/N-to-N" for s in eff]))
    versus = compared(systems)
    if versus:
        groups.append(("current/baseline GB/s", [LABEL[s] for s in versus]))
    groups.append(("cores used", labels))
    groups.append(("other", ["cores"]))
    rows = []
    for size in sizes:
        row = [size_name(size)]
        row += [fmt(value(results, (s, size), "bytes_per_s") and value(results, (s, size), "bytes_per_s") / 1e9, ".3f")
                for s in systems]
        row += [fmt(ratio(value(results, (s, size), "bytes_per_s"), value(results, (nton_of(s), size), "bytes_per_s")),
                    ".3f") for s in eff]
        row += [fmt(ratio(value(results, (s, size), "bytes_per_s"), value(results, (s + BASE, size), "bytes_per_s")),
                    ".3f") for s in versus]
        row += [fmt(value(results, (s, size), "cores"), ".2f") for s in systems]
        loads = [value(results, (s, size), "other_cores") for s in systems]
        loads = [v for v in loads if v is not None]
        row.append(f"{max(loads):.2f}" if loads else "n/a")
        rows.append(row)
    print_table(groups, rows)


def events_table(results, sizes, systems, rus):
    evb = [s for s in systems if plain(s) in EVB_SYSTEMS]
    groups = [("", ["S", "event"]), ("events/s", [LABEL[s] for s in systems])]
    if evb:
        groups.append(("events/request", [LABEL[s] for s in evb]))
        groups.append(("build latency us", [LABEL[s] for s in evb]))
        groups.append(("RU blocks/s", [LABEL[s] for s in evb]))
    rows = []
    for size in sizes:
        row = [size_name(size), size_name(rus * size)]
        row += [rate_cell(value(results, (s, size), "events_per_s")) for s in systems]
        row += [fmt(value(results, (s, size), "events_per_request"), ".0f") for s in evb]
        row += [fmt(value(results, (s, size), "build_latency_median_us"), ".0f") for s in evb]
        row += [rate_cell(value(results, (s, size), "ru_blocks_per_s")) for s in evb]
        rows.append(row)
    print_table(groups, rows)


def topology_table(results, topologies, size, systems):
    labels = [LABEL[s] for s in systems]
    evb = [s for s in systems if plain(s) in EVB_SYSTEMS and nton_of(s) in systems]
    versus = compared(systems)
    groups = [("", ["NxM", "event"]), ("events/s", labels), ("GB/s", labels)]
    if evb:
        groups.append(("efficiency", [LABEL[s] + "/N-to-N" for s in evb]))
    if versus:
        groups.append(("current/baseline events/s", [LABEL[s] for s in versus]))
        groups.append(("current/baseline GB/s", [LABEL[s] for s in versus]))
    groups.append(("cores used", labels))
    groups.append(("other", ["cores"]))
    rows = []
    for n, m in topologies:
        def get(s, field):
            return value(results, (s, n, m), field)
        row = [f"{n}x{m}", size_name(n * size)]
        row += [rate_cell(get(s, "events_per_s")) for s in systems]
        row += [fmt(get(s, "bytes_per_s") and get(s, "bytes_per_s") / 1e9, ".3f") for s in systems]
        row += [fmt(ratio(get(s, "bytes_per_s"), get(nton_of(s), "bytes_per_s")), ".3f") for s in evb]
        row += [fmt(ratio(get(s, "events_per_s"), get(s + BASE, "events_per_s")), ".3f") for s in versus]
        row += [fmt(ratio(get(s, "bytes_per_s"), get(s + BASE, "bytes_per_s")), ".3f") for s in versus]
        row += [fmt(get(s, "cores"), ".2f") for s in systems]
        loads = [get(s, "other_cores") for s in systems]
        loads = [v for v in loads if v is not None]
        row.append(f"{max(loads):.2f}" if loads else "n/a")
        rows.append(row)
    print_table(groups, rows)


def workload_table(results, workloads, systems):
    labels = [LABEL[s] for s in systems]
    evb = [s for s in systems if plain(s) != "nton"]
    versus = compared(systems)
    # The BUs also receive the EvM's trigger fragment with every event, which the efficiency (RU bytes) leaves out:
    # with small fragments it is a large share of what is built, so the bytes built are shown beside it.
    groups = [("", ["workload", "mean S"]), ("GB/s", labels), ("efficiency", [LABEL[s] + "/N-to-N" for s in evb]),
              ("GB/s built, trigger in", [LABEL[s] for s in evb]), ("events/s", [LABEL[s] for s in evb]),
              ("events/request", [LABEL[s] for s in evb])]
    if versus:
        groups.append(("current/baseline GB/s", [LABEL[s] for s in versus]))
    groups.append(("cores used", labels))
    rows = []
    for w in workloads:
        def get(s, field):
            return value(results, (s, w), field)
        row = [WORKLOADS[w][0], size_name(workload_size(WORKLOADS[w][1]))]
        row += [fmt(get(s, "bytes_per_s") and get(s, "bytes_per_s") / 1e9, ".3f") for s in systems]
        row += [fmt(ratio(get(s, "bytes_per_s"), get(nton_of(s), "bytes_per_s")), ".3f") for s in evb]
        row += [fmt(get(s, "bu_bytes_per_s") and get(s, "bu_bytes_per_s") / 1e9, ".3f") for s in evb]
        row += [rate_cell(get(s, "events_per_s")) for s in evb]
        row += [fmt(get(s, "events_per_request"), ".0f") for s in evb]
        row += [fmt(ratio(get(s, "bytes_per_s"), get(s + BASE, "bytes_per_s")), ".3f") for s in versus]
        row += [fmt(get(s, "cores"), ".2f") for s in systems]
        rows.append(row)
    print_table(groups, rows)


def worst_other(results):
    loads = [r["other_cores"] for r in results.values() if "na" not in r and r.get("other_cores") is not None]
    return f"{max(loads):.2f}" if loads else "n/a"


def print_problems(results, describe):
    for key, r in results.items():
        if "na" in r:
            print(f"  n/a {describe(key)}: {r['na']}")
        elif r.get("note"):
            print(f"  note {describe(key)}: {r['note']}")


CSV_FIELDS = ["bytes_per_s", "events_per_s", "fragments_per_s", "frames_per_s", "efficiency", "bu_bytes_per_s",
              "trigger_bytes_per_s", "event_rate_gauge", "seconds", "cores", "cores_evm", "cores_rus", "cores_bus",
              "cores_senders", "cores_receivers", "other_cores", "build_latency_median_us", "evm_credits_queued",
              "evm_events_in_flight", "ru_fragments_in_flight", "ru_blocks_waiting", "ru_pool_waits_per_s",
              "ru_would_blocks_per_s", "ru_blocks_per_s", "requests_per_s", "pool_exhausted_per_s",
              "would_blocks_per_s", "block_size", "events_per_request", "repeats", "vs_baseline"]


def write_csv(path, rows, key_fields):
    with open(path, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(key_fields + CSV_FIELDS + ["note"])
        for key, r in rows:
            cells = ["" if r.get(k) is None else (f"{r[k]:.6g}" if isinstance(r[k], float) else r[k]) for k in CSV_FIELDS]
            writer.writerow(list(key) + cells + [r.get("na", r.get("note", ""))])
    print(f"wrote {path}")


def line_style(s):
    """A baseline's line: dashed, in its current twin's colour."""
    colour = f"C{SYSTEMS.index(plain(s))}"
    return {"color": colour, "linestyle": "--"} if s.endswith(BASE) else {"color": colour}


def log2_size_axis(axes, ticker, sizes):
    axes.set_xscale("log", base=2)
    axes.set_xticks(sizes)
    axes.set_xticklabels([size_name(s) for s in sizes])
    axes.xaxis.set_minor_locator(ticker.NullLocator())
    axes.grid(True, which="both", alpha=0.3)


def plot_sizes(out, results, sizes, systems, title):
    plt, ticker = pyplot("plots")
    if plt is None:
        return
    # Efficiency and throughput against size.
    figure, (top, bottom) = plt.subplots(2, 1, figsize=(9, 8), sharex=True)
    for s in [x for x in systems if plain(x) in EVB_SYSTEMS and nton_of(x) in systems]:
        points = [(size, ratio(value(results, (s, size), "bytes_per_s"), value(results, (nton_of(s), size), "bytes_per_s")))
                  for size in sizes]
        points = [(x, y) for x, y in points if y is not None]
        if points:
            top.plot([x for x, _ in points], [y for _, y in points], marker="o", label=f"{LABEL[s]} / N-to-N",
                     **line_style(s))
    top.axhline(0.95, color="grey", linestyle="--", linewidth=1, label="target 0.95")
    top.set_ylabel("efficiency (EvB GB/s / N-to-N GB/s)")
    top.set_title(title, fontsize=10)
    top.legend()
    log2_size_axis(top, ticker, sizes)
    for s in systems:
        points = [(size, value(results, (s, size), "bytes_per_s")) for size in sizes]
        points = [(x, y / 1e9) for x, y in points if y is not None]
        if points:
            bottom.plot([x for x, _ in points], [y for _, y in points], marker="o", label=LABEL[s], **line_style(s))
    bottom.set_ylabel("throughput, GB/s (payload)")
    bottom.set_xlabel("super-fragment size S (per RU per event) = N-to-N frame size")
    bottom.legend()
    log2_size_axis(bottom, ticker, sizes)
    figure.tight_layout()
    path = os.path.join(out, "evb_efficiency.png")
    figure.savefig(path, dpi=120)
    plt.close(figure)
    print(f"wrote {path}")

    figure, axes = plt.subplots(figsize=(9, 5.5))
    for s in systems:
        points = [(size, value(results, (s, size), "events_per_s")) for size in sizes]
        points = [(x, y) for x, y in points if y is not None]
        if points:
            label = LABEL[s] if plain(s) != "nton" else LABEL[s] + " (frames/s per sender)"
            axes.plot([x for x, _ in points], [y for _, y in points], marker="o", label=label, **line_style(s))
    axes.set_yscale("log")
    axes.set_ylabel("events/s")
    axes.set_xlabel("super-fragment size S (per RU per event)")
    axes.set_title(title, fontsize=10)
    axes.legend()
    log2_size_axis(axes, ticker, sizes)
    figure.tight_layout()
    path = os.path.join(out, "evb_events_vs_size.png")
    figure.savefig(path, dpi=120)
    plt.close(figure)
    print(f"wrote {path}")


def plot_topologies(out, results, topologies, systems, title):
    plt, _ = pyplot()
    if plt is None:
        return
    names = [f"{n}x{m}" for n, m in topologies]
    figure, (left, right) = plt.subplots(1, 2, figsize=(11, 5))
    for s in systems:
        label = LABEL[s] if plain(s) != "nton" else LABEL[s] + " (frames/s per sender)"
        events = [value(results, (s, n, m), "events_per_s") for n, m in topologies]
        left.plot([x for x, y in zip(names, events) if y is not None], [y for y in events if y is not None],
                  marker="o", label=label, **line_style(s))
        gbs = [value(results, (s, n, m), "bytes_per_s") for n, m in topologies]
        right.plot([x for x, y in zip(names, gbs) if y is not None], [y / 1e9 for y in gbs if y is not None],
                   marker="o", label=LABEL[s], **line_style(s))
    left.set_ylabel("events/s")
    right.set_ylabel("throughput, GB/s (payload)")
    for a in (left, right):
        a.set_xlabel("N RUs x M BUs (N senders x M receivers)")
        a.grid(True, alpha=0.3)
        a.legend()
        a.set_ylim(bottom=0)
    figure.suptitle(title, fontsize=10)
    figure.tight_layout()
    path = os.path.join(out, "evb_events_vs_nxm.png")
    figure.savefig(path, dpi=120)
    plt.close(figure)
    print(f"wrote {path}")


# ---------------------------------------------------------------- main

def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build", default="build/release", help="the daqx build tree, Release (build/release)")
    parser.add_argument("--baseline", metavar="BUILD",
                        help="a second build tree (e.g. of the previous commit): every point measured with both, "
                             "taking turns within each repeat; its columns and the ratio current/baseline beside")
    parser.add_argument("--out", default="build/bench/evb", help="folder for CSV, plots, partitions, logs (build/bench/evb)")
    parser.add_argument("--sizes", nargs="+", help="super-fragment sizes S (1K 4KiB 1M ...), default 1 KiB .. 1 MiB")
    parser.add_argument("--topology", default="2x2", type=parse_topology,
                        help="RUs x BUs (= senders x receivers) of the size scan (2x2)")
    parser.add_argument("--topologies", help=f"NxM list of the topology scan ({DEFAULT_TOPOLOGIES}); 'none' skips it")
    parser.add_argument("--nxm-size", default="16K", help="S of the topology scan (16K)")
    parser.add_argument("--nxm-systems", default="evb,nton",
                        help="systems of the topology scan, from evb,evb-checks,evb-fixed,nton (evb,nton)")
    parser.add_argument("--seconds", type=float, help="measurement window, s (5; --quick 2)")
    parser.add_argument("--warmup", type=float, help="s from the last enable to the window's start (2; --quick 1)")
    parser.add_argument("--repeat", type=int, default=1,
                        help="runs per point, the systems taking turns; the median by GB/s is reported (1)")
    parser.add_argument("--systems", default=",".join(SYSTEMS), help="systems of the size scan, from evb,evb-checks,evb-fixed,nton (all; 'none' skips the scan)")
    parser.add_argument("--events-per-request", type=int,
                        help="EvM eventsPerRequest for EvB and EvB+checks (default: not set, the EvM sizes batches in bytes)")
    parser.add_argument("--batch-bytes", type=parse_size,
                        help="EvM batchBytes (default: not set, the EvM's default)")
    parser.add_argument("--fixed-events", type=int, default=8,
                        help="eventsPerRequest of 'EvB 8/request' (8, the EvM's default before batches were sized)")
    parser.add_argument("--workloads", default=",".join(WORKLOADS),
                        help=f"fragment-size workloads at the size scan's topology, from {','.join(WORKLOADS)} (all; 'none' skips)")
    parser.add_argument("--slots", type=int, default=16, help="BU slots (16, its default)")
    parser.add_argument("--trigger-size", type=int, default=1024,
                        help="EvM triggerSize, payload bytes of its own fragment per event (1024, its default)")
    parser.add_argument("--window", type=int, default=4096,
                        help="nton::Sender window, frames per receiver (4096, as in the TCP comparison)")
    parser.add_argument("--pin", nargs="?", const="", metavar="CPUS",
                        help="pin each context's threads to one CPU (partition Policy), contexts round-robin over "
                             "CPUS (e.g. 0-1; default: every usable CPU)")
    parser.add_argument("--quick", action="store_true",
                        help=f"smoke test: sizes 4 KiB, 64 KiB, 1 MiB, topologies {QUICK_TOPOLOGIES}, 1 s warmup, 2 s windows")
    args = parser.parse_args()

    args.seconds = args.seconds if args.seconds is not None else (2.0 if args.quick else 5.0)
    args.warmup = args.warmup if args.warmup is not None else (1.0 if args.quick else 2.0)
    sizes = [parse_size(s) for s in args.sizes] if args.sizes else (QUICK_SIZES if args.quick else DEFAULT_SIZES)
    topology_text = args.topologies or (QUICK_TOPOLOGIES if args.quick else DEFAULT_TOPOLOGIES)
    try:
        topologies = [] if topology_text == "none" else [parse_topology(t) for t in topology_text.split(",")]
    except argparse.ArgumentTypeError as e:
        parser.error(str(e))
    nxm_size = parse_size(args.nxm_size)
    systems = [s for s in SYSTEMS if s in args.systems.split(",")]
    workloads = [] if args.workloads == "none" else args.workloads.split(",")
    for w in workloads:
        if w not in WORKLOADS:
            parser.error(f"--workloads: '{w}' is none of {', '.join(WORKLOADS)}")
    workload_systems = ["evb", "evb-checks", "nton"]
    topology_systems = [s for s in SYSTEMS if s in args.nxm_systems.split(",")]
    args.pin_cpus = None
    if args.pin is not None:
        args.pin_cpus = parse_cpus(args.pin) if args.pin else sorted(os.sched_getaffinity(0))
    rus, bus = args.topology
    for size in sizes + [nxm_size]:
        if size <= SOURCE_OVERHEAD or size % 8:
            parser.error(f"size {size}: must be a multiple of 8 above {SOURCE_OVERHEAD} (the per-source header+trailer)")

    build = os.path.abspath(args.build)
    baseline = os.path.abspath(args.baseline) if args.baseline else None
    out = os.path.abspath(args.out)
    log_dir = os.path.join(out, "logs")
    os.makedirs(log_dir, exist_ok=True)

    # A SIGTERM to the driver unwinds like Ctrl-C, through the finally that stops every process.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))

    start_load = load_average()
    conditions = machine_conditions()
    print("== Event-building efficiency on loopback (127.0.0.1): evb::EvM/RU/BU vs nton::Sender/Receiver over pttcp")
    print(conditions_line(start_load, at_start=True))
    print(f"one executive per unit, every process shares these {conditions['usable_cpus']} CPUs"
          + (f"; contexts pinned round-robin to CPUs {args.pin_cpus}" if args.pin_cpus else " (nothing pinned)"))
    print(f"window {args.seconds:g} s after {args.warmup:g} s warm-up; size scan {rus}x{bus}: "
          f"{', '.join(size_name(s) for s in sizes)}; topology scan at {size_name(nxm_size)}: "
          f"{', '.join(f'{n}x{m}' for n, m in topologies) or 'none'}")
    print(f"build {build}: {build_source(build)}")
    if baseline:
        print(f"baseline {baseline}: {build_source(baseline)}; each point with both builds in turn "
              f"(repeats #1, #3, ... baseline first; #2, #4, ... current first)")

    processes = Processes(log_dir)
    setup = Setup(args, processes, build, out)
    base_setup = Setup(args, processes, baseline, out, tag="baseline") if baseline else None
    for which in filter(None, [setup, base_setup]):
        if which.missing([EVB]):
            print(f"cannot run: {which.missing([EVB])} (build with: ninja -C {which.build} daqx-executive daqx_evb "
                  f"daqx_nton daqx_pttcp)")
            return 2

    def runs_of(on):
        return {
            "evb": lambda n, m, size: run_evb(on, n, m, size, integrity=False),
            "evb-checks": lambda n, m, size: run_evb(on, n, m, size, integrity=True),
            "evb-fixed": lambda n, m, size: run_evb(on, n, m, size, fixed=True),
            "nton": lambda n, m, size: run_nton(on, n, m, size),
        }
    runs = runs_of(setup)
    if base_setup:
        runs.update({s + BASE: run for s, run in runs_of(base_setup).items()})
    builds = 2 if baseline else 1
    by_size, by_topology = {}, {}
    started = time.monotonic()
    progress = Progress(builds * args.repeat * (len(sizes) * len(systems) + len(topologies) * len(topology_systems)
                                                + len(workloads) * len(workload_systems)))
    by_workload = {}
    try:
        tries = {}
        for size in sizes:
            for n_try in range(args.repeat):
                for s in build_order(systems, n_try, baseline):
                    r = attempt(f"{LABEL[s]} {rus}x{bus} {size_name(size)} #{n_try + 1}", lambda: runs[s](rus, bus, size),
                                progress, point_summary)
                    tries.setdefault((s, size), []).append(r)
            for s in with_baseline(systems, baseline):
                by_size[(s, size)] = median_run(tries[(s, size)], "bytes_per_s", 1e9)
        for n, m in topologies:
            for n_try in range(args.repeat):
                for s in build_order(topology_systems, n_try, baseline):
                    r = attempt(f"{LABEL[s]} {n}x{m} {size_name(nxm_size)} #{n_try + 1}",
                                lambda: runs[s](n, m, nxm_size), progress, point_summary)
                    tries.setdefault((s, n, m), []).append(r)
            for s in with_baseline(topology_systems, baseline):
                by_topology[(s, n, m)] = median_run(tries[(s, n, m)], "bytes_per_s", 1e9)
        for w in workloads:
            ru = WORKLOADS[w][1]
            size = workload_size(ru)
            for n_try in range(args.repeat):
                for s in build_order(workload_systems, n_try, baseline):
                    def one(s=s):
                        on = base_setup if s.endswith(BASE) else setup
                        if plain(s) == "nton":
                            return run_nton(on, rus, bus, size)
                        return run_evb(on, rus, bus, size, integrity=(plain(s) == "evb-checks"), workload=ru)
                    r = attempt(f"{LABEL[s]} {rus}x{bus} {w} #{n_try + 1}", one, progress, point_summary)
                    tries.setdefault((s, w), []).append(r)
            for s in with_baseline(workload_systems, baseline):
                by_workload[(s, w)] = median_run(tries[(s, w)], "bytes_per_s", 1e9)
    except KeyboardInterrupt:
        print("\ninterrupted: stopping every executive")
        return 130
    finally:
        processes.stop_all()

    conditions_now = conditions_line(start_load)
    # From here on the systems are result columns: with --baseline each current one followed by its twin.
    systems = with_baseline(systems, baseline)
    topology_systems = with_baseline(topology_systems, baseline)
    workload_systems = with_baseline(workload_systems, baseline)
    build_key = ["build"] if baseline else []
    repeats = f"median of {args.repeat} runs" if args.repeat > 1 else "one run"
    title = (f"{rus}x{bus} on loopback over pttcp, one executive per unit, {conditions['usable_cpus']} CPUs shared; "
             f"{repeats}; outside load up to {worst_other(by_size)} cores")
    epr = (f"eventsPerRequest {args.events_per_request}" if args.events_per_request
           else "eventsPerRequest not set (batches sized in bytes)")
    common = (f"EvM {epr}{f', batchBytes {size_name(args.batch_bytes)}' if args.batch_bytes else ''} "
              f"(EvB 8/request: eventsPerRequest {args.fixed_events}, otherwise as EvB), triggerSize {args.trigger_size} B (not counted); BU slots "
              f"{args.slots}, output discard; RU sources 1, fragmentSize S-32 (super-fragment = S), fragmentSpread 0, "
              f"blockSize min(max(64 KiB, S + 4 KiB), 1 MiB) (S = 1 MiB spans two blocks); pttcp mode throughput. "
              f"EvB: pattern=false (RUs and EvM), checkData=false; EvB+checks: pattern=true, checkData=true. N-to-N: frameSize S, "
              f"pattern=false, window {args.window}, duration until stop. GB/s = 10^9 bytes/s of super-fragments "
              f"(sum over RUs of bytes_sent) or of frames (sum over receivers of bytes_received), from counter "
              f"differences over the window; events/s from the EvM's events_completed, for N-to-N frames/s per sender. "
              f"cores used: CPU of all the run's processes over the window; other: the rest of the machine.")
    baseline_note = (f" (baseline): the same point with the baseline build ({baseline}), run right before or after "
                     f"the current one in every repeat, its partitions checked against that build's executive; "
                     f"current/baseline: the ratio of the two medians." if baseline else "")
    common += baseline_note
    if systems and sizes:
        print()
        print(f"== 1. Efficiency, {rus} RUs x {bus} BUs (+ EvM) vs {rus} senders x {bus} receivers; {repeats}; {conditions_now}")
        size_table(by_size, sizes, systems)
        print()
        print(f"== 2. Events/s against super-fragment size, {rus}x{bus} (same runs); event = {rus} x S (+ trigger)")
        events_table(by_size, sizes, systems, rus)
        print_notes(common)
        print_problems(by_size, lambda k: f"{LABEL[k[0]]} {size_name(k[1])}")
        rows = [((size, *csv_system(s, baseline), rus, bus), csv_result(by_size, s, (size,)))
                for s, size in sorted(by_size, key=lambda k: (k[1], csv_order(k[0])))]
        write_csv(os.path.join(out, "evb_sizes.csv"), rows, ["size_bytes", "system"] + build_key + ["n", "m"])
        plot_sizes(out, by_size, sizes, systems, title)
    if topologies:
        print()
        print(f"== 3. Events/s and GB/s against NxM at S = {size_name(nxm_size)}; {repeats}; {conditions_line(start_load)}")
        topology_table(by_topology, topologies, nxm_size, topology_systems)
        print_notes("NxM = N RUs x M BUs plus the EvM, each its own executive (N + M + 1 processes); N-to-N: N senders x "
                    "M receivers (N + M processes). Parameters as above; EvB without checks. On a machine with few "
                    "cores the larger topologies are CPU-bound: compare 'cores used' with the CPU count." + baseline_note)
        print_problems(by_topology, lambda k: f"{LABEL[k[0]]} {k[1]}x{k[2]}")
        rows = [((nxm_size, *csv_system(s, baseline), n, m), csv_result(by_topology, s, (n, m)))
                for s, n, m in sorted(by_topology, key=lambda k: (k[1], k[2], csv_order(k[0])))]
        write_csv(os.path.join(out, "evb_topologies.csv"), rows, ["size_bytes", "system"] + build_key + ["n", "m"])
        plot_topologies(out, by_topology, topologies, topology_systems,
                        f"S = {size_name(nxm_size)}, loopback, {conditions['usable_cpus']} CPUs shared by all processes; "
                        f"{repeats}; outside load up to {worst_other(by_topology)} cores")
    if workloads:
        print()
        print(f"== 4. Workloads, {rus}x{bus}, EvB with default parameters; N-to-N frames of the mean super-fragment "
              f"size; {repeats}; {conditions_line(start_load)}")
        workload_table(by_workload, workloads, workload_systems)
        print(f"notes: GB/s and efficiency count the RUs' super-fragments only; 'GB/s built' is every byte of the built "
              f"events, the EvM's trigger fragment\n       ({args.trigger_size} B of payload, one source) included, "
              f"which N-to-N has no counterpart of.")
        print_problems(by_workload, lambda k: f"{LABEL[k[0]]} {k[1]}")
        rows = [((w, workload_size(WORKLOADS[w][1]), *csv_system(s, baseline), rus, bus), csv_result(by_workload, s, (w,)))
                for s, w in sorted(by_workload, key=lambda k: (k[1], csv_order(k[0])))]
        write_csv(os.path.join(out, "evb_workloads.csv"), rows,
                  ["workload", "size_bytes", "system"] + build_key + ["n", "m"])
    with open(os.path.join(out, "evb_machine.txt"), "w") as f:
        f.write(conditions_line(start_load) + "\n" + " ".join(sys.argv) + "\n")
        f.write(f"build {build}: {build_source(build)}\n")
        if baseline:
            f.write(f"baseline {baseline}: {build_source(baseline)}\n")
    print(f"{time.monotonic() - started:.0f} s in all; logs in {log_dir}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
