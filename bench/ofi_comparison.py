#!/usr/bin/env python3
"""ptofi against libfabric's own tools: daqx over ptofi (provider tcp on loopback, or verbs) against fi_pingpong
and fi_msg_bw on the same provider and endpoint type (FI_EP_MSG), and against daqx over pttcp, in one run;
printed as one table and written as CSV and PNG plots. A benchmark, never a test.

Usage: python3 bench/ofi_comparison.py [--build BUILD] [--out DIR] [--sizes 64 1K ...] [--repeat N] [--seconds S]
                                       [--systems ofi-epoll,ofi-busy,fi,tcp] [--cores 0/1] [--quick]
                                       [--provider tcp|verbs --host IP] [--fi-msg-bw PATH]
See docs/benchmarks-rdma.md ("ptofi vs libfabric tools") for what every column means and what makes it fair.
Its daqx pair and its cells and plots are python/daqx/pair.py, shared with ibv_comparison.py and poll_time.py;
processes, HTTP and tables are python/daqx/bench.py.
"""

import argparse
import csv
import os
import shutil
import signal
import subprocess
import sys
import time

sys.dont_write_bytecode = True  # importing the package would leave __pycache__ in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
from daqx.bench import (  # noqa: E402  (the repository's package, found from this file)
    NTON, BenchError, Processes, Progress, free_ports, get as value, listening, load_average, machine_busy,
    machine_conditions, median_run, other_cores, parse_size, print_notes, print_table, ratio, size_name, tail,
    wait_until, write_csv)
from daqx.pair import (  # noqa: E402
    PING_WARMUP, WARM_SECONDS, DaqxPair, DaqxSystem, attempt, daqx_systems, parse_cores, plot)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_SIZES = [64, 256, 1 << 10, 4 << 10, 16 << 10, 64 << 10, 256 << 10, 1 << 20]
QUICK_SIZES = [64, 4 << 10, 64 << 10, 1 << 20]


# The targets for daqx over ptofi against libfabric's tools on the same provider, each daqx row against the tool
# that waits the same way (epoll: fabtests -c fd; busy: the polling tools). Informational.
LATENCY_TARGET = 1.10     # mean round trip at most 1.1 x the tool's
THROUGHPUT_TARGET = 0.95  # at least 95 % of fi_msg_bw's MB/s
PACK_TARGET = 2.0         # coalescing (mode=throughput): at least 2 x fi_msg_bw from 64 B to 1 KiB
PACK_TARGET_UP_TO = 1 << 10


# ---------------------------------------------------------------- libfabric's tools

def interface_of(address):
    """The network interface that holds an address (the tcp provider's domain name), from `ip -o addr`."""
    try:
        text = subprocess.run(["ip", "-o", "addr", "show"], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    for line in text.splitlines():
        fields = line.split()
        if len(fields) > 3 and fields[3].split("/")[0] == address:
            return fields[1]
    return None


def perf_line(path):
    """The last result line of fi_pingpong or a fabtests benchmark: ... time MB/sec usec/xfer Mxfers/sec."""
    with open(path, errors="replace") as f:
        for line in reversed(f.readlines()):
            fields = line.split()
            if len(fields) >= 7 and fields[-4].endswith("s"):
                try:
                    return {"seconds": float(fields[-4][:-1]), "mb_per_s": float(fields[-3]),
                            "usec_per_xfer": float(fields[-2])}
                except ValueError:
                    continue
    raise BenchError(f"no result line in {path}: {tail(path)}")


class LibfabricTools:
    """fi_pingpong (libfabric-bin) and fi_msg_bw (fabtests): each point a fresh server (receiving side's CPU)
    and client (sending side's), FI_EP_MSG on the same provider, run for about `seconds`."""

    def __init__(self, processes, programs, provider, host, domain, seconds, window):
        self.processes = processes
        self.programs = programs  # name -> path or None
        self.provider = provider
        self.host = host
        self.domain = domain
        self.seconds = seconds
        self.window = window
        # What the last run of each size took, so that the next one is sized to `seconds`.
        self.round_trip_guess = {}
        self.rate_guess = {}

    def wait_server(self, server, port):
        # The tcp provider's passive endpoint and fi_pingpong's control socket are TCP listeners; an RDMA CM
        # listener is not in /proc/net/tcp, so over verbs the server is given a moment instead.
        if self.provider == "tcp" or server.name.startswith("fi_pingpong"):
            wait_until(lambda: listening(port), 10, f"{server.name} listening", server)
        else:
            time.sleep(1.0)

    def run(self, name, size, server_args, client_args, timeout):
        server = self.processes.start(f"{name}-server-{size}", server_args, "receiver")
        self.wait_server(server, int(server_args[server_args.index("-B") + 1]))
        busy0 = machine_busy()
        client = self.processes.start(f"{name}-client-{size}", client_args, "sender")
        client_code, client_cpu = self.processes.exit_cpu(client, timeout)
        server_code, server_cpu = self.processes.exit_cpu(server, 15)
        busy1 = machine_busy()
        if client_code != 0 or server_code != 0:
            raise BenchError(f"{name} failed ({client_code}/{server_code}): {tail(client.log_path, 3)} "
                             f"{tail(server.log_path, 3)}")
        return client, server, client_cpu, server_cpu, other_cores(busy0, busy1, client_cpu + server_cpu)

    def pingpong(self, size):
        program = self.programs.get("fi_pingpong")
        if program is None:
            raise BenchError("fi_pingpong not found (Debian: libfabric-bin)")
        guess = self.round_trip_guess.get(size, 40 + size / 400)  # us: a start, corrected by every run
        iterations = int(min(200000, max(500, self.seconds * 1e6 / guess)))
        (port,) = free_ports(1)
        common = [program, "-p", self.provider, "-e", "msg", "-S", str(size), "-I", str(iterations)]
        if self.domain:
            common += ["-d", self.domain]
        client, server, client_cpu, server_cpu, other = self.run(
            "fi_pingpong", size, common + ["-B", str(port)], common + ["-P", str(port), self.host],
            timeout=30 + 10 * self.seconds)
        result = perf_line(client.log_path)
        # usec/xfer is elapsed / (iterations x 2): half a round trip (util/pingpong.c, show_perf with
        # xfers_per_iter 2). MB/sec counts the bytes of both directions.
        mean = 2 * result["usec_per_xfer"]
        self.round_trip_guess[size] = mean
        return {"mean_us": mean, "one_way_us": result["usec_per_xfer"], "pingpong_mb_per_s": result["mb_per_s"],
                "round_trips": iterations, "seconds": result["seconds"], "cores_ping": client_cpu / result["seconds"],
                "cores_pong": server_cpu / result["seconds"], "other_cores": other}

    def fabtests_pingpong(self, size, wait):
        """fi_msg_pingpong -c WAIT (fabtests): like fi_pingpong, but it can wait on the CQ's file descriptor
        (-c fd), as ptofi's waitMode=epoll does, where fi_pingpong always spins."""
        program = self.programs.get("fi_msg_pingpong")
        if program is None:
            raise BenchError("fi_msg_pingpong not built (fabtests; see docs/benchmarks-rdma.md)")
        key = ("fabtests", wait, size)
        guess = self.round_trip_guess.get(key, 80 + size / 400)
        iterations = int(min(200000, max(500, self.seconds * 1e6 / guess)))
        (port,) = free_ports(1)
        common = [program, "-p", self.provider, "-e", "msg", "-S", str(size), "-I", str(iterations), "-w", "100",
                  "-c", wait]
        if self.domain:
            common += ["-d", self.domain]
        client, server, client_cpu, server_cpu, other = self.run(
            "fi_msg_pingpong", size, common + ["-s", self.host, "-B", str(port)],
            common + ["-P", str(port), self.host], timeout=30 + 10 * self.seconds)
        result = perf_line(client.log_path)
        mean = 2 * result["usec_per_xfer"]  # fabtests pingpong(): show_perf with xfers_per_iter 2, as fi_pingpong
        self.round_trip_guess[key] = mean
        seconds = result["seconds"] or 1e-9
        return {"mean_us": mean, "one_way_us": result["usec_per_xfer"], "pingpong_mb_per_s": result["mb_per_s"],
                "round_trips": iterations, "seconds": result["seconds"], "cores_ping": client_cpu / seconds,
                "cores_pong": server_cpu / seconds, "other_cores": other}

    def bandwidth(self, size, wait="spin"):
        program = self.programs.get("fi_msg_bw")
        if program is None:
            raise BenchError("fi_msg_bw not built (fabtests; see docs/benchmarks-rdma.md)")
        # messages/s: a start, corrected by every run
        rate = self.rate_guess.get((wait, size), min(200e3, 1e9 / size))
        iterations = int(min(5e6, max(4 * self.window, self.seconds * rate)))
        (port,) = free_ports(1)
        common = [program, "-p", self.provider, "-e", "msg", "-S", str(size), "-I", str(iterations),
                  "-W", str(self.window), "-w", str(self.window), "-c", wait]
        if self.domain:
            common += ["-d", self.domain]
        client, server, client_cpu, server_cpu, other = self.run(
            "fi_msg_bw", size, common + ["-s", self.host, "-B", str(port)], common + ["-P", str(port), self.host],
            timeout=30 + 10 * self.seconds)
        # Each side times its own loop (fabtests bandwidth()); the receiver's ends when the last message is in.
        received = perf_line(server.log_path)
        sent = perf_line(client.log_path)
        self.rate_guess[(wait, size)] = received["mb_per_s"] * 1e6 / size
        seconds = received["seconds"] or 1e-9
        return {"mb_per_s": received["mb_per_s"], "msgs_per_s": received["mb_per_s"] * 1e6 / size,
                "bytes": iterations * size, "seconds": received["seconds"], "sender_mb_per_s": sent["mb_per_s"],
                "cores_sender": client_cpu / seconds, "cores_receiver": server_cpu / seconds, "other_cores": other}


def find_fabtests(given, name):
    """A fabtests program: beside the given fi_msg_bw, in build/fabtests, or on the PATH."""
    beside = [os.path.join(os.path.dirname(given), name)] if given else []
    for candidate in beside + [os.path.join(ROOT, "build", "fabtests", name), shutil.which(name)]:
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    return None


# ---------------------------------------------------------------- results


def verdict(r, target, higher_is_better):
    if r is None:
        return "n/a"
    return "PASS" if (r >= target if higher_is_better else r <= target) else "MISS"


def tools_for(system, latency, throughput, size, tool_throughput):
    """The tool rows a daqx-over-ptofi row is compared with: the same way of waiting when that row ran
    (epoll and pack: fabtests -c fd; busy: fi_pingpong and fi_msg_bw, which poll), else the other one."""
    polling = ("fi_pingpong", tool_throughput)
    sleeping = ("fi-fd", "fi-fd")
    first, second = (polling, sleeping) if system == "ofi-busy" else (sleeping, polling)
    lat_tool = next((t for t, _ in (first, second) if value(latency, t, size, "mean_us") is not None), None)
    thr_tool = next((t for _, t in (first, second) if value(throughput, t, size, "mb_per_s") is not None), None)
    return lat_tool, thr_tool


TOOL_LABEL = {"fi_pingpong": "poll", "fi_msg_bw": "poll", "fi-fd": "fd", None: "-"}


def table_rows(latency, throughput, rows, sizes, tool_throughput):
    """One line per size and row; rows: [(label, latency system, throughput system)]. Ratios and targets on
    the daqx-over-ptofi rows: mean round trips (the only figure fi_pingpong gives) and MB/s, each against the
    tool that waits the same way (the `vs` column: poll or fd)."""
    lines, summary = [], []
    for size in sizes:
        tcp_mean = value(latency, "tcp-latency", size, "mean_us")
        tcp_rate = value(throughput, "tcp-throughput", size, "mb_per_s")
        for label, lat_system, thr_system in rows:
            mean = value(latency, lat_system, size, "mean_us")
            rate = value(throughput, thr_system, size, "mb_per_s")
            line = {"size": size, "tool": label,
                    "median_us": value(latency, lat_system, size, "median_us"),
                    "p99_us": value(latency, lat_system, size, "p99_us"), "mean_us": mean,
                    "one_way_us": value(latency, lat_system, size, "one_way_us"), "mb_per_s": rate}
            loads = [value(latency, lat_system, size, "other_cores"), value(throughput, thr_system, size, "other_cores")]
            loads = [v for v in loads if v is not None]
            line["other_cores"] = max(loads) if loads else None
            system = lat_system or thr_system
            if system.startswith("ofi-"):
                lat_tool, thr_tool = tools_for(system, latency, throughput, size, tool_throughput)
                line["vs"] = f"{TOOL_LABEL[lat_tool]}/{TOOL_LABEL[thr_tool]}" if lat_system else TOOL_LABEL[thr_tool]
                line["lat_vs_fi"] = ratio(mean, value(latency, lat_tool, size, "mean_us")) if lat_tool else None
                line["thr_vs_fi"] = ratio(rate, value(throughput, thr_tool, size, "mb_per_s")) if thr_tool else None
                line["lat_vs_tcp"] = ratio(mean, tcp_mean)
                line["thr_vs_tcp"] = ratio(rate, tcp_rate)
                base = "base-" + system
                line["lat_vs_base"] = ratio(mean, value(latency, base, size, "mean_us")) if lat_system else None
                line["thr_vs_base"] = ratio(rate, value(throughput, base, size, "mb_per_s"))
                line["lat_target"] = verdict(line["lat_vs_fi"], LATENCY_TARGET, False) if lat_system else ""
                packing = system == "ofi-pack" and size <= PACK_TARGET_UP_TO
                line["thr_target"] = verdict(line["thr_vs_fi"], PACK_TARGET if packing else THROUGHPUT_TARGET, True)
                if packing:
                    line["thr_target"] += f" ({PACK_TARGET:g}x)"
                summary.append((system, size, line["lat_target"], line["thr_target"]))
            lines.append(line)
    return lines, summary


def print_comparison(lines):
    groups = [("", ["size", "tool"]), ("round trip, us", ["median", "p99", "mean"]), ("one-way", ["us"]),
              ("throughput", ["MB/s"]), ("daqx-ofi / fi", ["lat", "thr", "vs"]), ("daqx-ofi / pttcp", ["lat", "thr"]),
              ("daqx-ofi / base", ["lat", "thr"]),
              (f"target", [f"lat<={LATENCY_TARGET:g}", f"thr>={THROUGHPUT_TARGET:g}"]), ("other", ["cores"])]

    def number(v, digits=1):
        return "-" if v is None else f"{v:.{digits}f}"

    rows = []
    for line in lines:
        rows.append([size_name(line["size"]), line["tool"], number(line["median_us"]), number(line["p99_us"]),
                     number(line["mean_us"]), number(line["one_way_us"]), number(line["mb_per_s"]),
                     number(line.get("lat_vs_fi"), 2), number(line.get("thr_vs_fi"), 2), line.get("vs", ""),
                     number(line.get("lat_vs_tcp"), 2), number(line.get("thr_vs_tcp"), 2),
                     number(line.get("lat_vs_base"), 2), number(line.get("thr_vs_base"), 2),
                     line.get("lat_target", ""), line.get("thr_target", ""), number(line["other_cores"], 2)])
    print_table(groups, rows)


def write_comparison_csv(path, lines):
    fields = ["size", "tool", "median_us", "p99_us", "mean_us", "one_way_us", "mb_per_s", "lat_vs_fi", "thr_vs_fi",
              "vs", "lat_vs_tcp", "thr_vs_tcp", "lat_vs_base", "thr_vs_base", "lat_target", "thr_target", "other_cores"]
    with open(path, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(fields)
        for line in lines:
            writer.writerow(["" if line.get(k) is None else (f"{line[k]:.6g}" if isinstance(line[k], float) else line[k])
                             for k in fields])


# ---------------------------------------------------------------- main


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build", default=os.path.join(ROOT, "build", "release"), help="the daqx build tree (Release)")
    parser.add_argument("--out", default=os.path.join(ROOT, "build", "bench", "ofi"),
                        help="folder for the CSV, the plots, partitions and logs (build/bench/ofi)")
    parser.add_argument("--sizes", nargs="+", help="message sizes (64 1K 4KiB 1M ...), default 64 B .. 1 MiB by 4")
    parser.add_argument("--seconds", type=float, default=1.0,
                        help="seconds measured per point; the fi tools' iterations are sized to take as long (1)")
    parser.add_argument("--repeat", type=int, default=3, help="runs per point, the median reported (3)")
    parser.add_argument("--systems", default="ofi-epoll,ofi-busy,ofi-pack,fi,fi-fd,tcp",
                        help="comma-separated subset of ofi-epoll, ofi-busy, ofi-pack (ptofi mode=throughput, a "
                             "stream only), fi (fi_pingpong, fi_msg_bw), fi-fd "
                             "(fi_msg_pingpong and fi_msg_bw with -c fd), tcp (pttcp)")
    parser.add_argument("--base-build", metavar="BUILD",
                        help="another daqx build tree (e.g. the last release): its ptofi epoll and busy rows run "
                             "side by side as base-ofi-epoll and base-ofi-busy, with daqx / base ratios")
    parser.add_argument("--no-latency", action="store_true", help="skip the ping-pongs")
    parser.add_argument("--no-throughput", action="store_true", help="skip the streams")
    parser.add_argument("--provider", default="tcp", help="libfabric provider for ptofi and the fi tools (tcp)")
    parser.add_argument("--host", default="127.0.0.1",
                        help="address of the data endpoints and fi servers (127.0.0.1; over verbs the RDMA device's)")
    parser.add_argument("--domain", help="fi tools' -d (default: for tcp the interface that holds --host, as ptofi picks)")
    parser.add_argument("--cores", type=parse_cores, default="0/1", metavar="A/B|none",
                        help="CPU of the sending side (ping, Sender, fi clients) and of the receiving side (0/1)")
    parser.add_argument("--window", type=int, default=4096, help="nton::Sender window, frames (4096)")
    parser.add_argument("--fi-window", type=int, default=64, help="fi_msg_bw -W, messages per window (64, its default)")
    parser.add_argument("--fi-msg-bw", help="the fi_msg_bw program (default: build/fabtests/fi_msg_bw, then PATH)")
    parser.add_argument("--quick", action="store_true", help="sizes 64 B, 4 KiB, 64 KiB, 1 MiB, one run each")
    args = parser.parse_args()

    sizes = [parse_size(s) for s in args.sizes] if args.sizes else (QUICK_SIZES if args.quick else DEFAULT_SIZES)
    repeat = 1 if args.quick and args.repeat == 3 else args.repeat
    build = os.path.abspath(args.build)
    out = os.path.abspath(args.out)
    log_dir = os.path.join(out, "logs")
    for folder in (log_dir, os.path.join(out, "partitions")):
        os.makedirs(folder, exist_ok=True)
    chosen = set(args.systems.split(","))
    unknown = chosen - {"ofi-epoll", "ofi-busy", "ofi-pack", "fi", "fi-fd", "tcp"}
    if unknown:
        parser.error(f"unknown systems: {', '.join(sorted(unknown))}")
    systems = [s for s in daqx_systems(args.provider)
               if s.name in chosen or (s.protocol == "tcp" and "tcp" in chosen)]
    if args.base_build:
        base_build = os.path.abspath(args.base_build)
        systems += [DaqxSystem("base-" + s.name, "base " + s.label[len("daqx "):], s.protocol, s.module,
                               s.properties, s.latency, s.throughput, base_build)
                    for s in list(systems) if s.name in ("ofi-epoll", "ofi-busy")]
    if args.no_latency:
        systems = [s for s in systems if s.throughput]
    if args.no_throughput:
        systems = [s for s in systems if s.latency]
    domain = args.domain or (interface_of(args.host) if args.provider == "tcp" else None)
    programs = {"fi_pingpong": shutil.which("fi_pingpong"), "fi_msg_bw": find_fabtests(args.fi_msg_bw, "fi_msg_bw"),
                "fi_msg_pingpong": find_fabtests(args.fi_msg_bw, "fi_msg_pingpong")}
    # Without fi_msg_bw the throughput is compared with fi_pingpong's MB/s (both directions of a ping-pong).
    tool_throughput = "fi_msg_bw" if programs["fi_msg_bw"] else "fi_pingpong"

    missing = [p for p in [os.path.join(build, "executive", "daqx-executive"), os.path.join(build, "modules", NTON)]
               + [os.path.join(build, "modules", m) for m in {s.module for s in systems}] if not os.path.exists(p)]
    if missing:
        raise SystemExit(f"not built: {', '.join(missing)} (build {build} first)")

    # A SIGTERM to the driver unwinds like Ctrl-C, through the finally that stops every process.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))

    conditions = machine_conditions()
    start_load = conditions["load_average"]
    print(f"== ptofi vs libfabric tools: provider {args.provider}, FI_EP_MSG, data on {args.host}"
          f"{' (domain ' + domain + ')' if domain else ''}")
    print(f"machine: nproc {conditions['nproc']} (usable {conditions['usable_cpus']}), load average {start_load}, "
          f"kernel {conditions['kernel']}, cpu {conditions['cpu']}")
    if args.cores:
        print(f"sending side (ping, Sender, fi clients) on CPU {args.cores[0]}, receiving side (pong, Receiver, "
              f"fi servers) on CPU {args.cores[1]}")
    else:
        print("nothing pinned")
    print(f"{args.seconds:g} s per point, {repeat} run(s) each, the median reported; sizes "
          f"{', '.join(size_name(s) for s in sizes)}")
    print(f"fi_pingpong: {programs['fi_pingpong'] or 'not found'}; fi_msg_bw: {programs['fi_msg_bw'] or 'not built'}; "
          f"fi_msg_pingpong: {programs['fi_msg_pingpong'] or 'not built'}")

    pin = {"sender": {args.cores[0]}, "receiver": {args.cores[1]}} if args.cores else None
    processes = Processes(log_dir, pin)
    tools = LibfabricTools(processes, programs, args.provider, args.host, domain, args.seconds, args.fi_window)
    tries = {}
    started = time.monotonic()
    serial = 0
    try:
        fi_points = 0
        if "fi" in chosen:
            fi_points += int(not args.no_latency or tool_throughput == "fi_pingpong")
            fi_points += int(not args.no_throughput and bool(programs["fi_msg_bw"]))
        if "fi-fd" in chosen:
            fi_points += int(not args.no_latency and bool(programs["fi_msg_pingpong"]))
            fi_points += int(not args.no_throughput and bool(programs["fi_msg_bw"]))
        per_size = sum(int(bool(x.latency)) + int(bool(x.throughput)) for x in systems) + fi_points
        progress = Progress(repeat * len(sizes) * per_size)
        # Repeats go round every system, so that whatever else loads the machine meanwhile falls on all alike.
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
                                pair = DaqxPair(processes, build, out, system, args.host, args.cores, args.window,
                                                args.seconds, serial)
                            try:
                                return pair.round_trips(size) if kind == "latency" else pair.stream(size)
                            except (BenchError, OSError, ValueError, KeyError, TypeError):
                                pair.shut()  # the next point starts a fresh pair: this one may be wedged
                                pair = None
                                raise

                        tries.setdefault((kind, system.name, size), []).append(
                            attempt(f"{kind} {system.name}", size, round_index, point, progress))
                if pair is not None:
                    pair.shut()
            if "fi" in chosen or "fi-fd" in chosen:
                for size in sizes if "fi" in chosen else []:
                    if not args.no_latency or tool_throughput == "fi_pingpong":
                        tries.setdefault(("latency", "fi_pingpong", size), []).append(
                            attempt("latency fi_pingpong", size, round_index, lambda: tools.pingpong(size),
                                    progress))
                    if not args.no_throughput and programs["fi_msg_bw"]:
                        tries.setdefault(("throughput", "fi_msg_bw", size), []).append(
                            attempt("throughput fi_msg_bw", size, round_index, lambda: tools.bandwidth(size),
                                    progress))
                # The same tools waiting on the CQ's file descriptor: what ptofi's waitMode=epoll does.
                if "fi-fd" in chosen:
                    for size in sizes:
                        if not args.no_latency and programs["fi_msg_pingpong"]:
                            tries.setdefault(("latency", "fi-fd", size), []).append(
                                attempt("latency fi_msg_pingpong -c fd", size, round_index,
                                        lambda: tools.fabtests_pingpong(size, "fd"), progress))
                        if not args.no_throughput and programs["fi_msg_bw"]:
                            tries.setdefault(("throughput", "fi-fd", size), []).append(
                                attempt("throughput fi_msg_bw -c fd", size, round_index,
                                        lambda: tools.bandwidth(size, "fd"), progress))
    finally:
        processes.stop_all()

    latency = {(system, size): median_run(runs, "mean_us")
               for (kind, system, size), runs in tries.items() if kind == "latency"}
    throughput = {(system, size): median_run(runs, "mb_per_s")
                  for (kind, system, size), runs in tries.items() if kind == "throughput"}
    if tool_throughput == "fi_pingpong":  # the fallback: fi_pingpong's own MB/s in the throughput column
        for size in sizes:
            r = latency.get(("fi_pingpong", size))
            if r is not None:
                throughput[("fi_pingpong", size)] = r if "na" in r else dict(r, mb_per_s=r["pingpong_mb_per_s"])

    provider = args.provider
    rows = [(s.label, s.name if s.latency else None, s.name if s.throughput else None)
            for s in systems if s.protocol == "ofi"]
    if "fi" in chosen:
        rows.append((f"fi_pingpong/{'fi_msg_bw' if tool_throughput == 'fi_msg_bw' else 'fi_pingpong'}",
                     "fi_pingpong", tool_throughput))
    if "fi-fd" in chosen and (programs["fi_msg_pingpong"] or programs["fi_msg_bw"]):
        rows.append(("fabtests -c fd", "fi-fd", "fi-fd"))
    if any(s.protocol == "tcp" for s in systems):
        rows.append(("daqx pttcp", "tcp-latency", "tcp-throughput"))
    lines, summary = table_rows(latency, throughput, rows, sizes, tool_throughput)
    elapsed = time.monotonic() - started
    end_load = load_average()

    print()
    print(f"== daqx over ptofi ({provider}) vs libfabric's tools and pttcp; median of {repeat} run(s) per point, "
          f"{args.seconds:g} s each; load average {start_load} at the start, {end_load} now; {elapsed:.0f} s in all")
    print_comparison(lines)
    throughput_tool = ("fi_msg_bw -W %d (one stream, windows of %d messages)" % (args.fi_window, args.fi_window)
                       if tool_throughput == "fi_msg_bw" else
                       "fi_pingpong's MB/sec (fi_msg_bw was not built: a ping-pong's bytes of both directions "
                       "over its time, not a bandwidth test)")
    print_notes(
        f"Round trip: daqx = nton::PingPong between two executives, frameSize = size (its 16-byte header "
        f"included; the transport adds its 32-byte frame header), median and p99 of every round trip after {PING_WARMUP} "
        f"of warmup until the stop, mean = the window's time over its round trips; fi_pingpong -p {provider} -e msg -S size "
        f"reports only a mean (usec/xfer = elapsed / iterations / 2, one way), shown as mean = 2 x usec/xfer. "
        f"The latency ratios and the target compare means. Throughput: daqx = nton::Sender -> nton::Receiver "
        f"(window {args.window}, pattern=false), receiver's bytes over a {args.seconds:g} s window {WARM_SECONDS} s "
        f"after enable; vs {throughput_tool}, the receiver's figure. MB = 10^6 bytes. pttcp: mode=latency for "
        f"round trips, mode=throughput for throughput. busy = ptofi waitMode=busy (its send and receive "
        f"threads poll without sleeping; fi_pingpong and fi_msg_bw poll). fabtests -c fd: fi_msg_pingpong "
        f"and fi_msg_bw waiting on the CQ's file descriptor (fi_trywait + poll), as waitMode=epoll does. "
        f"Ratios pair like with like: ptofi epoll and pack against fabtests -c fd, busy against the polling tools; "
        f"when that row did not run, the other (the vs column: poll or fd, latency/throughput). pack = ptofi "
        f"mode=throughput (frames coalesced into messages of up to packSize), target >= {PACK_TARGET:g} x up to "
        f"{size_name(PACK_TARGET_UP_TO)}. "
        + (f"Sending side on CPU {args.cores[0]}, receiving side on CPU {args.cores[1]} (partition Policy and "
           f"process affinity for daqx, the same affinity for the fi tools). " if args.cores else "Nothing pinned. ")
        + "other cores: CPU used meanwhile by processes outside the point (the worst of the row).")
    for kind, results in (("latency", latency), ("throughput", throughput)):
        for (system, size), r in sorted(results.items(), key=lambda kv: (kv[0][1], kv[0][0])):
            if "na" in r:
                print(f"  n/a {kind} {system} {size_name(size)}: {r['na']}")
            elif r.get("note"):
                print(f"  note {kind} {system} {size_name(size)}: {r['note']}")
    for system in sorted({s for s, _, _, _ in summary}):
        mine = [(size, lat, thr) for s, size, lat, thr in summary if s == system]
        lat_part = (f"latency target (<= {LATENCY_TARGET:g} x the tool) met at "
                    f"{sum(lat == 'PASS' for _, lat, _ in mine)} of {len(mine)} sizes, "
                    if any(lat for _, lat, _ in mine) else "")
        thr_rule = (f">= {PACK_TARGET:g} x up to {size_name(PACK_TARGET_UP_TO)}, {THROUGHPUT_TARGET:g} x above"
                    if system == "ofi-pack" else f">= {THROUGHPUT_TARGET:g} x")
        print(f"{system}: {lat_part}throughput target ({thr_rule}) met at "
              f"{sum(thr.startswith('PASS') for _, _, thr in mine)} of {len(mine)}")

    write_comparison_csv(os.path.join(out, "ofi_comparison.csv"), lines)
    write_csv(os.path.join(out, "ofi_latency.csv"), latency,
              ["median_us", "p99_us", "min_us", "max_us", "mean_us", "one_way_us", "samples", "round_trips",
               "seconds", "pingpong_mb_per_s", "cores_ping", "cores_pong", "other_cores", "repeats"])
    write_csv(os.path.join(out, "ofi_throughput.csv"), throughput,
              ["mb_per_s", "msgs_per_s", "bytes", "seconds", "sender_mb_per_s", "cores_sender", "cores_receiver",
               "would_blocks", "pool_exhausted", "other_cores", "repeats"])
    print(f"wrote {', '.join(os.path.join(out, f) for f in ('ofi_comparison.csv', 'ofi_latency.csv', 'ofi_throughput.csv'))}")
    title = (f"provider {provider}, {args.host}, {conditions['nproc']} cores"
             f"{', sides on CPUs %d/%d' % tuple(args.cores) if args.cores else ''}, median of {repeat}")
    latency_series = [(s.name, f"{s.label} mean", "-", "mean_us") for s in systems if s.latency and s.protocol == "ofi"]
    latency_series += [(s.name, f"{s.label} median", ":", "median_us") for s in systems if s.latency and s.protocol == "ofi"]
    latency_series += [("fi_pingpong", "fi_pingpong mean (2 x usec/xfer)", "-", "mean_us"),
                       ("fi-fd", "fi_msg_pingpong -c fd mean", "--", "mean_us")]
    latency_series += [(s.name, f"{s.label} mean", "--", "mean_us") for s in systems if s.latency and s.protocol == "tcp"]
    plot(os.path.join(out, "ofi_latency.png"), latency, latency_series, sizes, "mean_us", "round trip, us",
         f"ping-pong round trip: {title}")
    throughput_series = [(s.name, s.label, "-", None) for s in systems if s.throughput and s.protocol == "ofi"]
    throughput_series += [(tool_throughput, tool_throughput, "-", None), ("fi-fd", "fi_msg_bw -c fd", "--", None)]
    throughput_series += [(s.name, s.label, "--", None) for s in systems if s.throughput and s.protocol == "tcp"]
    plot(os.path.join(out, "ofi_throughput.png"), throughput, throughput_series, sizes, "mb_per_s",
         "throughput, MB/s (10^6 bytes)", f"one stream: {title}")
    with open(os.path.join(out, "ofi_machine.txt"), "w") as f:
        f.write(f"nproc {conditions['nproc']}, kernel {conditions['kernel']}, cpu {conditions['cpu']}; load average "
                f"{start_load} at the start, {end_load} at the end; {elapsed:.0f} s\n{' '.join(sys.argv)}\n")
    print(f"{elapsed:.0f} s in all; logs in {log_dir}")
    failed = [key for key, r in list(latency.items()) + list(throughput.items()) if "na" in r]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
