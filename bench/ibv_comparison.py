#!/usr/bin/env python3
"""ptibv against perftest: daqx ping-pong and one N-to-N stream (1 sender, 1 receiver) over ptibv, against
ib_send_lat and ib_send_bw on the same device for the same sizes, and against daqx over ptofi with the verbs
provider, side by side in one boot of the soft-RoCE guest (tests/rdma-vm). Printed as one table and written as
CSV and PNG plots. A benchmark, never a test. The guest is emulated (QEMU TCG, soft-RoCE): only the ratios of
one run mean anything, not the absolute figures.

Usage: python3 bench/ibv_comparison.py [--build BUILD] [--out DIR] [--sizes 64 4K ...] [--repeat N] [--seconds S]
          [--systems ibv-epoll,ibv-busy,ibv-pack,ofi-epoll,ofi-busy,perftest,perftest-e] [--cores 0/1|none] [--quick]
On the host it starts the guest and runs itself there (--in-guest); on a real RDMA node give --in-guest and
--host (an address of the device's netdev) and --device.
Reuses bench/ofi_comparison.py's daqx driver (two executives, nton::PingPong and nton::Sender/Receiver).
"""

import argparse
import math
import os
import signal
import subprocess
import sys
import time

sys.dont_write_bytecode = True  # importing the package would leave __pycache__ in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
from daqx.pair import (  # noqa: E402  (the repository's package, found from this file)
    COLOR, PTOFI, DaqxPair, DaqxSystem, attempt, parse_cores, plot)
from daqx.bench import (  # noqa: E402
    NTON, BenchError, Processes, Progress, get as value, load_average, machine_busy, machine_conditions, median_run,
    other_cores, parse_size, print_notes, print_table, ratio, size_name, tail, write_csv)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PTIBV = "libdaqx_ptibv.so"
DEFAULT_SIZES = [64, 1 << 10, 4 << 10, 16 << 10, 64 << 10, 256 << 10, 1 << 20]
QUICK_SIZES = [64, 4 << 10, 64 << 10, 1 << 20]
LATENCY_TARGET = 1.2      # mean round trip at most 1.2 x ib_send_lat's
THROUGHPUT_TARGET = 0.95  # at least 95 % of ib_send_bw's, from 4 KiB up
PACK_TARGET = 2.0         # coalescing (mode=throughput): at least 2 x ib_send_bw's from 64 B to 1 KiB
PACK_TARGET_UP_TO = 1 << 10
MIB = 1 << 20             # perftest's MB is 2^20 bytes; daqx's and this table's MB is 10^6


def systems_for(chosen):
    every = [
        DaqxSystem("ibv-epoll", "daqx ibv epoll", "ibv", PTIBV, {"waitMode": "epoll"}, True, True),
        DaqxSystem("ibv-busy", "daqx ibv busy", "ibv", PTIBV, {"waitMode": "busy"}, True, True),
        # Coalescing: small frames packed into one message up to packSize (docs/ptibv.md); a stream only.
        DaqxSystem("ibv-pack", "daqx ibv pack", "ibv", PTIBV, {"waitMode": "epoll", "mode": "throughput"}, False,
                   True),
        DaqxSystem("ofi-epoll", "daqx ofi/verbs epoll", "ofi", PTOFI, {"provider": "verbs", "waitMode": "epoll"},
                   True, True),
        DaqxSystem("ofi-busy", "daqx ofi/verbs busy", "ofi", PTOFI, {"provider": "verbs", "waitMode": "busy"},
                   True, True),
    ]
    return [s for s in every if s.name in chosen]


class Perftest:
    """ib_send_lat and ib_send_bw (perftest), connected through rdma_cm (-R) on the device: a fresh server on
    the receiving side's CPU and client on the sending side's for every point, sized to about `seconds`.
    events=False: both poll the CQ (perftest's default); events=True (-e): both sleep on the CQ's completion
    channel, as ptibv's waitMode=epoll does."""

    def __init__(self, processes, device, host, seconds):
        self.processes = processes
        self.device = device
        self.host = host
        self.seconds = seconds
        self.port = 18515
        self.rate = {}  # (kind, events) -> (size, operations per second) of the last run, to size the next one

    def iterations(self, kind, events, size):
        last = self.rate.get((kind, events))
        if last is None:
            return 500
        guess = last[1] * (last[0] / size if kind == "bw" and size > last[0] else 1.0)
        return int(max(200, min(200000, guess * self.seconds)))

    @staticmethod
    def result_line(path, size):
        """The numbers after the size on perftest's result line; None when the line is missing or not finite
        (ib_send_lat's client now and then prints inf and -nan in every column: its own timing failed)."""
        with open(path, errors="replace") as f:
            text = f.read()
        numbers = None
        for line in text.splitlines():
            fields = line.split()
            if fields and fields[0] == str(size) and len(fields) >= 5:
                try:
                    numbers = [float(x) for x in fields[1:]]
                except ValueError:
                    numbers = None
        if numbers is None or not all(math.isfinite(x) for x in numbers):
            return None
        return numbers

    def run(self, kind, size, events=False):
        program = "ib_send_lat" if kind == "lat" else "ib_send_bw"
        count = self.iterations(kind, events, size)
        self.port += 1
        common = [program, "-d", self.device, "-R", "-F", "-s", str(size), "-n", str(count), "-p", str(self.port)]
        if events:
            common.append("-e")
        tag = f"{program}{'-e' if events else ''}"
        server = self.processes.start(f"{tag}-server-{size}", common, "receiver")
        # An rdma_cm listener shows nowhere to wait on, and under emulation the server may take more than a
        # second to listen (programs load over 9p): a client refused while the server still runs (rdma_cm
        # REJECTED, reason 8: nobody listens there yet) tries again, as tests/rdma-vm/smoke.sh does.
        time.sleep(1.0)
        try:
            for attempt_number in range(1, 6):
                busy0 = machine_busy()
                started = time.monotonic()
                client = self.processes.start(
                    f"{tag}-client-{size}" + (f"-{attempt_number}" if attempt_number > 1 else ""),
                    common + [self.host], "sender")
                client_code, client_cpu = self.processes.exit_cpu(client, 60 + 10 * self.seconds)
                server_running = os.waitid(os.P_PID, server.pid, os.WEXITED | os.WNOWAIT | os.WNOHANG) is None
                if client_code == 0 or not server_running or attempt_number == 5:
                    break
                time.sleep(1.0)
            server_code, server_cpu = self.processes.exit_cpu(server, 20)
        except BenchError:
            # A client that hung leaves its server waiting; a polling one spins on a CPU and would load every
            # later point of the run: stop it before the point is reported n/a.
            self.processes.stop(server)
            raise
        elapsed = time.monotonic() - started
        busy1 = machine_busy()
        if client_code != 0 or server_code != 0:
            raise BenchError(f"{tag} failed ({client_code}/{server_code}): {tail(client.log_path, 3)}")
        # The client's figures; the server's (the same measure, taken on the other side) when the client's
        # are not finite. ib_send_bw's server prints a peak of 0 but a valid average.
        numbers = self.result_line(client.log_path, size)
        side = "client"
        if numbers is None:
            numbers = self.result_line(server.log_path, size)
            side = "server"
        if numbers is None:
            raise BenchError(f"{tag}: no finite result line in {client.log_path} or {server.log_path}")
        other = other_cores(busy0, busy1, client_cpu + server_cpu)
        if kind == "lat":
            # iterations, t_min, t_max, t_typical, t_avg, t_stdev, p99, p99.9: one-way times, half a round trip
            one_way = numbers[4]
            self.rate[(kind, events)] = (size, 1e6 / (2 * one_way))
            return {"mean_us": 2 * one_way, "median_us": 2 * numbers[3], "p99_us": 2 * numbers[6],
                    "one_way_us": one_way, "iterations": count, "seconds": elapsed, "other_cores": other,
                    "note": "" if side == "client" else "the client printed no finite figures: the server's"}
        mb_per_s = numbers[2] * MIB / 1e6  # BW average
        self.rate[(kind, events)] = (size, mb_per_s * 1e6 / size)
        return {"mb_per_s": mb_per_s, "msgs_per_s": numbers[3] * 1e6, "iterations": count, "seconds": elapsed,
                "other_cores": other, "note": "" if side == "client" else "the client's average: the server's"}


# The rows each daqx-over-ptibv row is compared with: the same way of waiting for completions.
COUNTERPARTS = {
    "ibv-epoll": (("ib_send_lat-e", "ib_send_bw-e"), ("ib_send_lat", "ib_send_bw"), ("ofi-epoll", "ofi-busy")),
    "ibv-busy": (("ib_send_lat", "ib_send_bw"), ("ib_send_lat-e", "ib_send_bw-e"), ("ofi-busy", "ofi-epoll")),
    "ibv-pack": ((None, "ib_send_bw-e"), (None, "ib_send_bw"), ("ofi-epoll", "ofi-epoll")),
}
for _name, _colour in (("ibv-epoll", "C5"), ("ibv-busy", "C6"), ("ib_send_lat", "C2"), ("ib_send_bw", "C2"),
                       ("ib_send_lat-e", "C4"), ("ib_send_bw-e", "C4"), ("ibv-pack", "C7")):
    COLOR.setdefault(_name, _colour)


def first_value(results, systems, size, key):
    """The value of the first of `systems` that has one at this size, and that system's name."""
    for system in systems:
        v = value(results, system, size, key)
        if v is not None:
            return v, system
    return None, None


def row_names(latency_row, throughput_row):
    """What the 'vs' column shows: the row both ratios used, or latency's/throughput's when they differ."""
    if latency_row == throughput_row:
        return latency_row or ""
    return f"{latency_row or '-'}/{throughput_row or '-'}"


def in_guest(args):
    sizes = [parse_size(s) for s in args.sizes] if args.sizes else (QUICK_SIZES if args.quick else DEFAULT_SIZES)
    repeat = 1 if args.quick and args.repeat == 3 else args.repeat
    build, out = os.path.abspath(args.build), os.path.abspath(args.out)
    log_dir = os.path.join(out, "logs")
    for folder in (log_dir, os.path.join(out, "partitions")):
        os.makedirs(folder, exist_ok=True)
    chosen = set(args.systems.split(","))
    unknown = chosen - {"ibv-epoll", "ibv-busy", "ibv-pack", "ofi-epoll", "ofi-busy", "perftest", "perftest-e"}
    if unknown:
        raise SystemExit(f"--systems: unknown {', '.join(sorted(unknown))}")
    systems = systems_for(chosen)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    cores = args.cores
    conditions = machine_conditions()
    start_load = conditions["load_average"]
    pinning = (f"sending side CPU {cores[0]}, receiving side CPU {cores[1]}" if cores else "nothing pinned")
    print(f"== ptibv vs perftest on {args.device} ({args.host}); nproc {conditions['nproc']}, kernel "
          f"{conditions['kernel']}, load average {start_load}; {pinning}; {args.seconds:g} s per point, "
          f"median of {repeat}")
    processes = Processes(log_dir, {"sender": {cores[0]}, "receiver": {cores[1]}} if cores else None)
    tools = Perftest(processes, args.device, args.host, args.seconds)
    tools_chosen = [events for events, name in ((False, "perftest"), (True, "perftest-e")) if name in chosen]
    tries = {}
    started = time.monotonic()
    serial = 0
    per_size = sum(int(bool(x.latency)) + int(bool(x.throughput)) for x in systems) + 2 * len(tools_chosen)
    progress = Progress(repeat * len(sizes) * per_size)
    try:
        for round_index in range(repeat):
            for system in systems:
                serial += 1
                pair = None
                for size in sizes:
                    for kind in ("latency", "throughput"):
                        if not getattr(system, kind):
                            continue

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
                            attempt(f"{kind} {system.name}", size, round_index, point, progress))
                if pair is not None:
                    pair.shut()
            for events in tools_chosen:
                suffix = "-e" if events else ""
                for size in sizes:
                    tries.setdefault(("latency", "ib_send_lat" + suffix, size), []).append(
                        attempt("latency ib_send_lat" + suffix, size, round_index,
                                lambda: tools.run("lat", size, events), progress))
                    tries.setdefault(("throughput", "ib_send_bw" + suffix, size), []).append(
                        attempt("throughput ib_send_bw" + suffix, size, round_index,
                                lambda: tools.run("bw", size, events), progress))
    finally:
        processes.stop_all()

    latency = {(s, z): median_run(r, "mean_us") for (k, s, z), r in tries.items() if k == "latency"}
    throughput = {(s, z): median_run(r, "mb_per_s") for (k, s, z), r in tries.items() if k == "throughput"}
    rows = [(s.label, s.name if s.latency else None, s.name if s.throughput else None) for s in systems]
    if False in tools_chosen:
        rows.append(("ib_send_lat/bw (poll)", "ib_send_lat", "ib_send_bw"))
    if True in tools_chosen:
        rows.append(("ib_send_lat/bw -e (events)", "ib_send_lat-e", "ib_send_bw-e"))
    lines = []
    for size in sizes:
        for label, lat_system, thr_system in rows:
            mean, rate = value(latency, lat_system, size, "mean_us"), value(throughput, thr_system, size, "mb_per_s")
            line = {"size": size, "system": label, "median_us": value(latency, lat_system, size, "median_us"),
                    "p99_us": value(latency, lat_system, size, "p99_us"), "mean_us": mean, "mb_per_s": rate}
            system = lat_system or thr_system
            if system in COUNTERPARTS:
                preferred, fallback, ofi = COUNTERPARTS[system]
                # perftest in the same waiting mode when it ran, else the other one (named in the row)
                tool_lat, lat_tool = first_value(latency, (preferred[0], fallback[0]), size, "mean_us")
                tool_thr, thr_tool = first_value(throughput, (preferred[1], fallback[1]), size, "mb_per_s")
                ofi_lat, lat_ofi = first_value(latency, ofi, size, "mean_us")
                ofi_thr, thr_ofi = first_value(throughput, ofi, size, "mb_per_s")
                line["lat_vs_perftest"] = ratio(mean, tool_lat)
                line["thr_vs_perftest"] = ratio(rate, tool_thr)
                line["perftest_row"] = row_names(*(None if t is None else ("-e" if t.endswith("-e") else "poll")
                                                   for t in (lat_tool, thr_tool)))
                line["lat_vs_ofi"] = ratio(mean, ofi_lat)
                line["thr_vs_ofi"] = ratio(rate, ofi_thr)
                line["ofi_row"] = row_names(*(None if t is None else t[len("ofi-"):] for t in (lat_ofi, thr_ofi)))
                lr, tr = line["lat_vs_perftest"], line["thr_vs_perftest"]
                line["lat_target"] = ("-" if lat_system is None else "n/a" if lr is None else
                                      "PASS" if lr <= LATENCY_TARGET else "MISS")
                if system == "ibv-pack" and size <= PACK_TARGET_UP_TO:
                    line["thr_target"] = ("n/a" if tr is None else "PASS" if tr >= PACK_TARGET else "MISS") + \
                        f" ({PACK_TARGET:g}x)"
                else:
                    line["thr_target"] = ("-" if size < 4096 else "n/a" if tr is None else
                                          "PASS" if tr >= THROUGHPUT_TARGET else "MISS")
            lines.append(line)
    elapsed = time.monotonic() - started

    def number(v, digits=1):
        return "-" if v is None else f"{v:.{digits}f}"
    print()
    print(f"== daqx over ptibv vs perftest and ptofi/verbs on {args.device}; {pinning}; median of {repeat}, "
          f"{args.seconds:g} s per point; load average {start_load} at the start, {load_average()} now; "
          f"{elapsed:.0f} s")
    groups = [("", ["size", "system"]), ("round trip, us", ["median", "p99", "mean"]), ("throughput", ["MB/s"]),
              ("ibv / perftest", ["lat", "thr", "vs"]), ("ibv / ptofi", ["lat", "thr", "vs"]),
              ("target", [f"lat<={LATENCY_TARGET:g}", f"thr>={THROUGHPUT_TARGET:g}"])]
    print_table(groups, [[size_name(l["size"]), l["system"], number(l["median_us"]), number(l["p99_us"]),
                          number(l["mean_us"]), number(l["mb_per_s"]), number(l.get("lat_vs_perftest"), 2),
                          number(l.get("thr_vs_perftest"), 2), l.get("perftest_row", ""),
                          number(l.get("lat_vs_ofi"), 2), number(l.get("thr_vs_ofi"), 2), l.get("ofi_row", ""),
                          l.get("lat_target", ""), l.get("thr_target", "")]
                         for l in lines])
    print_notes(
        "EMULATED GUEST (QEMU TCG, soft-RoCE rxe): the absolute figures mean nothing, only the ratios of one run "
        "do. Round trip: daqx = nton::PingPong between two executives (mean = window time / round trips); "
        "ib_send_lat -R reports one-way times (half a round trip): shown doubled (median = 2 x t_typical). "
        "Throughput: daqx = nton::Sender -> nton::Receiver "
        f"(window {args.window}), the receiver's bytes; ib_send_bw -R, its average, converted from perftest's MB "
        "(2^20) to 10^6 bytes. Ratios pair like with like ('vs' names the row used): ptibv epoll against "
        "perftest -e (sleeps on CQ events) and ptofi epoll, ptibv busy against polling perftest and ptofi busy; "
        "the other mode when that row did not run ('lat/thr' when the two differ). Targets: latency <= "
        f"{LATENCY_TARGET:g} x perftest's, throughput >= {THROUGHPUT_TARGET:g} x from 4 KiB; pack = ptibv "
        f"mode=throughput (frames coalesced into messages of up to packSize, a stream only): >= {PACK_TARGET:g} x "
        f"ib_send_bw up to {size_name(PACK_TARGET_UP_TO)}; informational.")
    for kind, results in (("latency", latency), ("throughput", throughput)):
        for (system, size), r in sorted(results.items(), key=lambda kv: (kv[0][1], kv[0][0])):
            if "na" in r:
                print(f"  n/a {kind} {system} {size_name(size)}: {r['na']}")
            elif r.get("note"):
                print(f"  note {kind} {system} {size_name(size)}: {r['note']}")
    fields = ["size", "system", "median_us", "p99_us", "mean_us", "mb_per_s", "lat_vs_perftest", "thr_vs_perftest",
              "perftest_row", "lat_vs_ofi", "thr_vs_ofi", "ofi_row", "lat_target", "thr_target"]
    with open(os.path.join(out, "ibv_comparison.csv"), "w") as f:
        f.write(",".join(fields) + "\n")
        for l in lines:
            f.write(",".join("" if l.get(k) is None else (f"{l[k]:.6g}" if isinstance(l[k], float) else str(l[k]))
                             for k in fields) + "\n")
    # (write_csv adds each point's note, or why it is n/a, as the last column)
    write_csv(os.path.join(out, "ibv_latency.csv"), latency,
              ["median_us", "p99_us", "mean_us", "one_way_us", "repeats"])
    write_csv(os.path.join(out, "ibv_throughput.csv"), throughput, ["mb_per_s", "msgs_per_s", "repeats"])
    title = f"soft-RoCE guest ({args.device}, emulated: compare ratios only), {pinning}, median of {repeat}"
    tool_series = [(f"ib_send_lat{suffix}", f"ib_send_lat{suffix} mean (2 x t_avg)", "--", "mean_us")
                   for suffix in ["" if not events else "-e" for events in tools_chosen]]
    plot(os.path.join(out, "ibv_latency.png"), latency,
         [(s.name, f"{s.label} mean", "-", "mean_us") for s in systems if s.latency] + tool_series,
         sizes, "mean_us", "round trip, us", f"ping-pong: {title}")
    plot(os.path.join(out, "ibv_throughput.png"), throughput,
         [(s.name, s.label, "-", None) for s in systems if s.throughput] +
         [(f"ib_send_bw{'-e' if events else ''}", f"ib_send_bw{' -e' if events else ''}", "--", None)
          for events in tools_chosen],
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
    parser.add_argument("--systems", default="ibv-epoll,ibv-busy,ibv-pack,ofi-epoll,ofi-busy,perftest,perftest-e",
                        help="of ibv-epoll, ibv-busy, ibv-pack (mode=throughput, a stream only), ofi-epoll, ofi-busy, perftest (polling), perftest-e (-e: "
                             "sleeping on CQ events); all by default")
    parser.add_argument("--cores", type=parse_cores, default=[0, 1],
                        help="SENDING/RECEIVING: the CPUs of the sending side (ping, Sender, perftest clients) and "
                             "the receiving side (pong, Receiver, perftest servers), 0/1 by default; none: unpinned")
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
    # The guest sees the checkout (this script, perftest and the rest of the host's root read-only) and every
    # --share read-write at the same paths: the build tree and the results folder. The options go along as
    # given, then the absolute paths, which win.
    guest = [os.path.join(ROOT, "tests", "rdma-vm", "run-in-guest.sh"), "--timeout", str(args.timeout),
             "--share", build, "--share", out, "--", "/usr/bin/python3", os.path.abspath(__file__), "--in-guest"]
    guest += sys.argv[1:] + ["--build", build, "--out", out]
    return subprocess.call(guest)


if __name__ == "__main__":
    sys.exit(main())
