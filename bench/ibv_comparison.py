#!/usr/bin/env python3
"""ptibv against perftest: daqx ping-pong and one N-to-N stream (1 sender, 1 receiver) over ptibv, against
ib_send_lat and ib_send_bw on the same device for the same sizes, and against daqx over ptofi with the verbs
provider, side by side in one boot of the soft-RoCE guest (tests/rdma-vm). Printed as one table and written as
CSV and PNG plots. A benchmark, never a test. The guest is emulated (QEMU TCG, soft-RoCE): only the ratios of
one run mean anything, not the absolute figures.

Usage: python3 bench/ibv_comparison.py [--build BUILD] [--out DIR] [--sizes 64 4K ...] [--repeat N]
                                       [--seconds S] [--systems ibv-epoll,ibv-busy,ofi-busy,perftest] [--quick]
On the host it starts the guest and runs itself there (--in-guest); on a real RDMA node give --in-guest and
--host (an address of the device's netdev) and --device.
Reuses bench/ofi_comparison.py's daqx driver (two executives, nton::PingPong and nton::Sender/Receiver).
"""

import argparse
import os
import re
import signal
import subprocess
import sys
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ofi_comparison import (  # noqa: E402  (the shared driver lives beside this file)
    NTON, PTOFI, DaqxPair, DaqxSystem, attempt, plot, ratio, value)
from tcp_comparison import (  # noqa: E402
    BenchError, Processes, load_average, machine_busy, machine_conditions, median_run, other_cores, parse_size,
    print_notes, print_table, size_name, tail, write_csv)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PTIBV = "libdaqx_ptibv.so"
DEFAULT_SIZES = [64, 1 << 10, 4 << 10, 16 << 10, 64 << 10, 256 << 10, 1 << 20]
QUICK_SIZES = [64, 4 << 10, 64 << 10, 1 << 20]
LATENCY_TARGET = 1.2      # mean round trip at most 1.2 x ib_send_lat's
THROUGHPUT_TARGET = 0.95  # at least 95 % of ib_send_bw's, from 4 KiB up
MIB = 1 << 20             # perftest's MB is 2^20 bytes; daqx's and this table's MB is 10^6


def systems_for(chosen):
    every = [
        DaqxSystem("ibv-epoll", "daqx ibv epoll", "ibv", PTIBV, {"waitMode": "epoll"}, True, True),
        DaqxSystem("ibv-busy", "daqx ibv busy", "ibv", PTIBV, {"waitMode": "busy"}, True, True),
        DaqxSystem("ofi-epoll", "daqx ofi/verbs epoll", "ofi", PTOFI, {"provider": "verbs", "waitMode": "epoll"},
                   True, True),
        DaqxSystem("ofi-busy", "daqx ofi/verbs busy", "ofi", PTOFI, {"provider": "verbs", "waitMode": "busy"},
                   True, True),
    ]
    return [s for s in every if s.name in chosen]


class Perftest:
    """ib_send_lat and ib_send_bw (perftest), connected through rdma_cm (-R) on the device: a fresh server on
    the receiving side's CPU and client on the sending side's for every point, sized to about `seconds`."""

    def __init__(self, processes, device, host, seconds):
        self.processes = processes
        self.device = device
        self.host = host
        self.seconds = seconds
        self.port = 18515
        self.rate = {}  # kind -> (size, operations per second) of the last run, to size the next one

    def iterations(self, kind, size):
        last = self.rate.get(kind)
        if last is None:
            return 500
        guess = last[1] * (last[0] / size if kind == "bw" and size > last[0] else 1.0)
        return int(max(200, min(200000, guess * self.seconds)))

    def run(self, kind, size):
        program = "ib_send_lat" if kind == "lat" else "ib_send_bw"
        count = self.iterations(kind, size)
        self.port += 1
        common = [program, "-d", self.device, "-R", "-F", "-s", str(size), "-n", str(count), "-p", str(self.port)]
        server = self.processes.start(f"{program}-server-{size}", common, "receiver")
        time.sleep(1.0)  # an rdma_cm listener shows nowhere to wait on: give it a moment
        busy0 = machine_busy()
        started = time.monotonic()
        client = self.processes.start(f"{program}-client-{size}", common + [self.host], "sender")
        client_code, client_cpu = self.processes.exit_cpu(client, 60 + 10 * self.seconds)
        server_code, server_cpu = self.processes.exit_cpu(server, 20)
        elapsed = time.monotonic() - started
        busy1 = machine_busy()
        if client_code != 0 or server_code != 0:
            raise BenchError(f"{program} failed ({client_code}/{server_code}): {tail(client.log_path, 3)}")
        with open(client.log_path) as f:
            text = f.read()
        numbers = None
        for line in text.splitlines():
            fields = line.split()
            if fields and fields[0] == str(size) and len(fields) >= 5:
                numbers = [float(x) for x in fields[1:]]
        if numbers is None:
            raise BenchError(f"{program}: no result line in {client.log_path}")
        other = other_cores(busy0, busy1, client_cpu + server_cpu)
        if kind == "lat":
            # iterations, t_min, t_max, t_typical, t_avg, t_stdev, p99, p99.9: one-way times, half a round trip
            one_way = numbers[4]
            self.rate["lat"] = (size, 1e6 / (2 * one_way))
            return {"mean_us": 2 * one_way, "median_us": 2 * numbers[3], "p99_us": 2 * numbers[6],
                    "one_way_us": one_way, "iterations": count, "seconds": elapsed, "other_cores": other}
        mb_per_s = numbers[2] * MIB / 1e6  # BW average
        self.rate["bw"] = (size, mb_per_s * 1e6 / size)
        return {"mb_per_s": mb_per_s, "msgs_per_s": numbers[3] * 1e6, "iterations": count, "seconds": elapsed,
                "other_cores": other}


def in_guest(args):
    sizes = [parse_size(s) for s in args.sizes] if args.sizes else (QUICK_SIZES if args.quick else DEFAULT_SIZES)
    repeat = 1 if args.quick and args.repeat == 3 else args.repeat
    build, out = os.path.abspath(args.build), os.path.abspath(args.out)
    log_dir = os.path.join(out, "logs")
    for folder in (log_dir, os.path.join(out, "partitions")):
        os.makedirs(folder, exist_ok=True)
    chosen = set(args.systems.split(","))
    systems = systems_for(chosen)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    cores = (0, 1)
    conditions = machine_conditions()
    start_load = conditions["load_average"]
    print(f"== ptibv vs perftest on {args.device} ({args.host}); nproc {conditions['nproc']}, kernel "
          f"{conditions['kernel']}, load average {start_load}; sending side CPU 0, receiving side CPU 1; "
          f"{args.seconds:g} s per point, median of {repeat}")
    processes = Processes(log_dir, {"sender": {0}, "receiver": {1}})
    tools = Perftest(processes, args.device, args.host, args.seconds)
    tries = {}
    started = time.monotonic()
    serial = 0
    try:
        for round_index in range(repeat):
            for system in systems:
                serial += 1
                pair = None
                for size in sizes:
                    for kind in ("latency", "throughput"):
                        def point():
                            nonlocal pair
                            if pair is None:
                                pair = DaqxPair(processes, build, out, system, args.host, cores, args.window,
                                                args.seconds, serial)
                            try:
                                return pair.round_trips(size) if kind == "latency" else pair.stream(size)
                            except (BenchError, OSError, ValueError, KeyError, TypeError):
                                pair.shut()
                                pair = None
                                raise
                        tries.setdefault((kind, system.name, size), []).append(
                            attempt(f"{kind} {system.name}", size, round_index, point))
                if pair is not None:
                    pair.shut()
            if "perftest" in chosen:
                for size in sizes:
                    tries.setdefault(("latency", "ib_send_lat", size), []).append(
                        attempt("latency ib_send_lat", size, round_index, lambda: tools.run("lat", size)))
                    tries.setdefault(("throughput", "ib_send_bw", size), []).append(
                        attempt("throughput ib_send_bw", size, round_index, lambda: tools.run("bw", size)))
    finally:
        processes.stop_all()

    latency = {(s, z): median_run(r, "mean_us") for (k, s, z), r in tries.items() if k == "latency"}
    throughput = {(s, z): median_run(r, "mb_per_s") for (k, s, z), r in tries.items() if k == "throughput"}
    rows = [(s.label, s.name, s.name) for s in systems] + [("perftest ib_send_lat/bw", "ib_send_lat", "ib_send_bw")]
    lines = []
    for size in sizes:
        lat_tool, thr_tool = value(latency, "ib_send_lat", size, "mean_us"), value(throughput, "ib_send_bw", size, "mb_per_s")
        ofi_lat = value(latency, "ofi-busy", size, "mean_us") or value(latency, "ofi-epoll", size, "mean_us")
        ofi_thr = value(throughput, "ofi-busy", size, "mb_per_s") or value(throughput, "ofi-epoll", size, "mb_per_s")
        for label, lat_system, thr_system in rows:
            mean, rate = value(latency, lat_system, size, "mean_us"), value(throughput, thr_system, size, "mb_per_s")
            line = {"size": size, "system": label, "median_us": value(latency, lat_system, size, "median_us"),
                    "p99_us": value(latency, lat_system, size, "p99_us"), "mean_us": mean, "mb_per_s": rate}
            if lat_system.startswith("ibv-"):
                line["lat_vs_perftest"] = ratio(mean, lat_tool)
                line["thr_vs_perftest"] = ratio(rate, thr_tool)
                line["lat_vs_ofi"] = ratio(mean, ofi_lat)
                line["thr_vs_ofi"] = ratio(rate, ofi_thr)
                lr, tr = line["lat_vs_perftest"], line["thr_vs_perftest"]
                line["lat_target"] = "n/a" if lr is None else ("PASS" if lr <= LATENCY_TARGET else "MISS")
                line["thr_target"] = ("-" if size < 4096 else "n/a" if tr is None else
                                      "PASS" if tr >= THROUGHPUT_TARGET else "MISS")
            lines.append(line)
    elapsed = time.monotonic() - started

    def number(v, digits=1):
        return "-" if v is None else f"{v:.{digits}f}"
    print()
    print(f"== daqx over ptibv vs perftest and ptofi/verbs; median of {repeat}, {args.seconds:g} s per point; load "
          f"average {start_load} at the start, {load_average()} now; {elapsed:.0f} s")
    groups = [("", ["size", "system"]), ("round trip, us", ["median", "p99", "mean"]), ("throughput", ["MB/s"]),
              ("ibv / perftest", ["lat", "thr"]), ("ibv / ofi-verbs", ["lat", "thr"]),
              ("target", [f"lat<={LATENCY_TARGET:g}", f"thr>={THROUGHPUT_TARGET:g}"])]
    print_table(groups, [[size_name(l["size"]), l["system"], number(l["median_us"]), number(l["p99_us"]),
                          number(l["mean_us"]), number(l["mb_per_s"]), number(l.get("lat_vs_perftest"), 2),
                          number(l.get("thr_vs_perftest"), 2), number(l.get("lat_vs_ofi"), 2),
                          number(l.get("thr_vs_ofi"), 2), l.get("lat_target", ""), l.get("thr_target", "")]
                         for l in lines])
    print_notes(
        "Round trip: daqx = nton::PingPong between two executives (mean = window time / round trips); ib_send_lat "
        "-R reports one-way times (half a round trip): shown doubled. Throughput: daqx = nton::Sender -> "
        f"nton::Receiver (window {args.window}), the receiver's bytes; ib_send_bw -R, its average, converted from "
        "perftest's MB (2^20) to 10^6 bytes. ibv/ofi ratios against ofi busy when it ran, else epoll. Emulated "
        "guest (QEMU TCG, soft-RoCE): only the ratios mean anything.")
    for kind, results in (("latency", latency), ("throughput", throughput)):
        for (system, size), r in sorted(results.items(), key=lambda kv: (kv[0][1], kv[0][0])):
            if "na" in r:
                print(f"  n/a {kind} {system} {size_name(size)}: {r['na']}")
    fields = ["size", "system", "median_us", "p99_us", "mean_us", "mb_per_s", "lat_vs_perftest", "thr_vs_perftest",
              "lat_vs_ofi", "thr_vs_ofi", "lat_target", "thr_target"]
    with open(os.path.join(out, "ibv_comparison.csv"), "w") as f:
        f.write(",".join(fields) + "\n")
        for l in lines:
            f.write(",".join("" if l.get(k) is None else (f"{l[k]:.6g}" if isinstance(l[k], float) else str(l[k]))
                             for k in fields) + "\n")
    write_csv(os.path.join(out, "ibv_latency.csv"), latency, ["median_us", "p99_us", "mean_us", "one_way_us", "repeats"])
    write_csv(os.path.join(out, "ibv_throughput.csv"), throughput, ["mb_per_s", "msgs_per_s", "repeats"])
    title = f"soft-RoCE guest ({args.device}), sides on CPUs 0/1, median of {repeat}"
    plot(os.path.join(out, "ibv_latency.png"), latency,
         [(s.name, f"{s.label} mean", "-", "mean_us") for s in systems] +
         [("ib_send_lat", "ib_send_lat mean (2 x t_avg)", "--", "mean_us")],
         sizes, "mean_us", "round trip, us", f"ping-pong: {title}")
    plot(os.path.join(out, "ibv_throughput.png"), throughput,
         [(s.name, s.label, "-", None) for s in systems] + [("ib_send_bw", "ib_send_bw", "--", None)],
         sizes, "mb_per_s", "throughput, MB/s (10^6 bytes)", f"one stream: {title}")
    print(f"wrote {out}/ibv_comparison.csv, ibv_latency.csv, ibv_throughput.csv and the plots; logs in {log_dir}")
    return 1 if any("na" in r for r in list(latency.values()) + list(throughput.values())) else 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--build", default=os.path.join(ROOT, "build", "release"), help="the daqx build tree (Release)")
    parser.add_argument("--out", default=os.path.join(ROOT, "build", "bench", "ibv"), help="results and logs")
    parser.add_argument("--sizes", nargs="+", help="message sizes (64 1K 4KiB 1M ...)")
    parser.add_argument("--seconds", type=float, default=1.0, help="measuring time per point (1 s)")
    parser.add_argument("--repeat", type=int, default=3, help="runs per point, the median reported (3)")
    parser.add_argument("--systems", default="ibv-epoll,ibv-busy,ofi-busy,perftest",
                        help="of ibv-epoll, ibv-busy, ofi-epoll, ofi-busy, perftest")
    parser.add_argument("--window", type=int, default=4096, help="nton::Sender window, frames (4096)")
    parser.add_argument("--quick", action="store_true", help="sizes 64 B, 4 KiB, 64 KiB, 1 MiB, one run each")
    parser.add_argument("--in-guest", action="store_true", help="run here (in the guest, or on an RDMA node)")
    parser.add_argument("--host", default="10.77.0.1", help="the device's IP address (the guest's rxe0: 10.77.0.1)")
    parser.add_argument("--device", default="rxe0", help="the RDMA device for perftest (rxe0)")
    parser.add_argument("--timeout", type=int, default=3600, help="the guest's time limit, s (3600)")
    args = parser.parse_args()
    if args.in_guest:
        return in_guest(args)
    build, out = os.path.abspath(args.build), os.path.abspath(args.out)
    os.makedirs(out, exist_ok=True)
    missing = [p for p in [os.path.join(build, "modules", m) for m in (PTIBV, PTOFI, NTON)] if not os.path.exists(p)]
    if missing:
        raise SystemExit(f"not built: {', '.join(missing)}")
    forwarded = [a for a in sys.argv[1:] if a != "--in-guest"]
    guest = [os.path.join(ROOT, "tests", "rdma-vm", "run-in-guest.sh"), "--timeout", str(args.timeout),
             "--share", build, "--share", out, "--", "/usr/bin/python3", os.path.abspath(__file__), "--in-guest",
             "--build", build, "--out", out] + [a for a in forwarded]
    return subprocess.call(guest)


if __name__ == "__main__":
    sys.exit(main())
