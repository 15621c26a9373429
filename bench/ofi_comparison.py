#!/usr/bin/env python3
"""ptofi against libfabric's own tools: daqx over ptofi (provider tcp on loopback, or verbs) against fi_pingpong
and fi_msg_bw on the same provider and endpoint type (FI_EP_MSG), and against daqx over pttcp, in one run;
printed as one table and written as CSV and PNG plots. A benchmark, never a test.

Usage: python3 bench/ofi_comparison.py [--build BUILD] [--out DIR] [--sizes 64 1K ...] [--repeat N] [--seconds S]
                                       [--systems ofi-epoll,ofi-busy,fi,tcp] [--cores 0/1] [--quick]
                                       [--provider tcp|verbs --host IP] [--fi-msg-bw PATH]
See docs/benchmarks.md ("ptofi vs libfabric tools") for what every column means and what makes it fair.
Shares its process, HTTP and table helpers with the other drivers (bench/bench_common.py, imported from this folder).
"""

import argparse
import csv
import os
import shutil
import signal
import subprocess
import sys
import time

sys.dont_write_bytecode = True  # importing the sibling would leave bench/__pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_common import (  # noqa: E402  (the shared helpers live beside this file)
    BenchError, Executive, Processes, Progress, free_ports, listening, load_average, machine_busy, machine_conditions,
    median_run, other_cores, parse_size, point_prefix, print_notes, print_table, size_name, tail, wait_until,
    write_csv, xml_properties)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PTOFI = "libdaqx_ptofi.so"
PTTCP = "libdaqx_pttcp.so"
NTON = "libdaqx_nton.so"

DEFAULT_SIZES = [64, 256, 1 << 10, 4 << 10, 16 << 10, 64 << 10, 256 << 10, 1 << 20]
QUICK_SIZES = [64, 4 << 10, 64 << 10, 1 << 20]

PING, PONG, SENDER, RECEIVER = 12, 22, 11, 21

# The targets for daqx over ptofi against libfabric's tools on the same provider, each daqx row against the tool
# that waits the same way (epoll: fabtests -c fd; busy: the polling tools). Informational.
LATENCY_TARGET = 1.10     # mean round trip at most 1.1 x the tool's
THROUGHPUT_TARGET = 0.95  # at least 95 % of fi_msg_bw's MB/s
PACK_TARGET = 2.0         # coalescing (mode=throughput): at least 2 x fi_msg_bw from 64 B to 1 KiB
PACK_TARGET_UP_TO = 1 << 10

WARM_SECONDS = 0.5  # from enable to the first sample: connections warm, pools filled, slow start over
# Round trips the ping leaves out of its median and p99 (the mean is taken over the window only). Few: a
# point that makes 40 round trips a second (waitMode=busy on one core) must still keep some.
PING_WARMUP = 20


class DaqxSystem:
    """One way of running daqx: a transport with its endpoint properties, and what it is measured for."""

    def __init__(self, name, label, protocol, module, properties, latency, throughput, build=None):
        self.name = name
        self.build = build  # another build tree to run this system from (--base-build), else the driver's
        self.label = label
        self.protocol = protocol
        self.module = module
        self.properties = properties
        self.latency = latency
        self.throughput = throughput


def daqx_systems(provider):
    systems = [
        DaqxSystem("ofi-epoll", f"daqx ofi/{provider} epoll", "ofi", PTOFI,
                   {"provider": provider, "waitMode": "epoll"}, True, True),
        DaqxSystem("ofi-busy", f"daqx ofi/{provider} busy", "ofi", PTOFI,
                   {"provider": provider, "waitMode": "busy"}, True, True),
        # Coalescing: small frames packed into one message up to packSize (docs/ptofi.md); a stream only.
        DaqxSystem("ofi-pack", f"daqx ofi/{provider} pack", "ofi", PTOFI,
                   {"provider": provider, "waitMode": "epoll", "mode": "throughput"}, False, True),
    ]
    if provider == "tcp":  # pttcp only compares with the tcp provider: over verbs it would be another network
        systems += [DaqxSystem("tcp-latency", "daqx pttcp", "tcp", PTTCP, {"mode": "latency"}, True, False),
                    DaqxSystem("tcp-throughput", "daqx pttcp", "tcp", PTTCP, {"mode": "throughput"}, False, True)]
    return systems


# ---------------------------------------------------------------- daqx: two executives, driven per application

def pair_partition(name, system, host, control_ports, data_ports, cores, window):
    """Two contexts: the first with the ping and the Sender, the second with the pong and the Receiver. With
    cores, each context's threads are pinned to its CPU by the partition's Policy."""
    urls = [f"http://127.0.0.1:{p}" for p in control_ports]
    policy = ""
    if cores:
        rules = "".join(f'    <Thread pattern="*" cores="{c}" context="{u}"/>\n' for c, u in zip(cores, urls))
        policy = f"  <Policy>\n{rules}  </Policy>\n"
    # count 0: the ping runs until stopped and keeps its last 2^20 round trips; the Sender likewise
    # (duration 0). frameSize is set before each point, through the control API.
    applications = [
        [("nton::PingPong", PING, {"role": "ping", "peer": PONG, "count": 0, "warmup": PING_WARMUP}),
         ("nton::Sender", SENDER, {"receivers": RECEIVER, "duration": 0, "window": window, "pattern": "false"})],
        [("nton::PingPong", PONG, {"role": "pong"}), ("nton::Receiver", RECEIVER, {})],
    ]
    contexts = ""
    for index, url in enumerate(urls):
        apps = "".join(f'    <Application class="{cls}" id="{tid}" instance="{index}" network="data">\n'
                       f'      <Properties>{xml_properties(properties)}</Properties>\n    </Application>\n'
                       for cls, tid, properties in applications[index])
        contexts += (f'  <Context url="{url}">\n'
                     f'    <Endpoint protocol="{system.protocol}" hostname="{host}" port="{data_ports[index]}" '
                     f'network="data">\n      <Properties>{xml_properties(system.properties)}</Properties>\n'
                     f'    </Endpoint>\n    <Module path="{system.module}"/>\n    <Module path="{NTON}"/>\n'
                     f'{apps}  </Context>\n')
    text = (f'<!-- Generated by bench/ofi_comparison.py. -->\n<Partition name="{name}">\n{policy}{contexts}'
            f'</Partition>\n')
    return text, urls


def command(executive, tid, what):
    answer = executive.request(f"/api/applications/{tid}/transition", {"command": what})
    if not answer.get("ok", False):
        raise BenchError(f"{executive.url}: application {tid} refused {what}: {answer}")


def set_parameter(executive, tid, name, value):
    executive.request(f"/api/applications/{tid}/parameters", {"name": name, "value": str(value)})


class DaqxPair:
    """Two executives of one system, kept for every size of a round: the ping and the Sender in the first
    (pinned to the sending side's CPU), the pong and the Receiver in the second. Each point configures and
    enables only its two applications, so the others stay Halted and idle."""

    def __init__(self, processes, build, out, system, host, cores, window, seconds, serial):
        self.processes = processes
        self.system = system
        self.seconds = seconds
        build = system.build or build
        binary = os.path.join(build, "executive", "daqx-executive")
        env = dict(os.environ, DAQX_MODULE_PATH=os.path.join(build, "modules"))
        ports = free_ports(4)
        name = f"bench-ofi-{system.name}"
        text, urls = pair_partition(name, system, host, ports[:2], ports[2:], cores, window)
        path = os.path.join(out, "partitions", f"{system.name}-{serial}.xml")
        with open(path, "w") as f:
            f.write(text)
        self.executives = [Executive(processes, binary, env, path, url, f"{system.name}-{serial}-{i}",
                                     ("sender", "receiver")[i]) for i, url in enumerate(urls)]
        try:
            for e in self.executives:
                e.wait_ready()
            wait_until(self.connected, 20, f"{system.name} connections up")
        except BenchError:
            self.shut()
            raise

    def connected(self):
        """Both executives see an outgoing and an incoming connection up (connectAt=start for ptofi)."""
        for e in self.executives:
            connections = [c for t in e.transports() for c in t.get("connections", [])]
            if len(connections) < 2 or not all(c.get("up") for c in connections):
                return False
        return True

    def shut(self):
        for e in self.executives:
            self.processes.stop(e.process, grace=15)

    def cpu(self):
        return [e.cpu() for e in self.executives]

    def sample(self, executive, tid, key):
        """One counter, timed at the middle of its request, with both executives' CPU and the machine's."""
        before = time.monotonic()
        value = executive.metrics(tid)[key]
        after = time.monotonic()
        return {"t": (before + after) / 2, "value": value, "cpu": self.cpu(), "busy": machine_busy()}

    def window(self, executive, tid, key):
        """Enables have just been sent: a sample WARM_SECONDS later and another `seconds` after that."""
        time.sleep(WARM_SECONDS)
        first = self.sample(executive, tid, key)
        time.sleep(max(0.0, first["t"] + self.seconds - time.monotonic()))
        second = self.sample(executive, tid, key)
        elapsed = second["t"] - first["t"]
        cores = [(b - a) / elapsed for a, b in zip(first["cpu"], second["cpu"])]
        other = other_cores(first["busy"], second["busy"], sum(second["cpu"]) - sum(first["cpu"]))
        return second["value"] - first["value"], elapsed, cores, other

    def round_trips(self, size):
        ping, pong = self.executives
        set_parameter(ping, PING, "frameSize", size)
        for e, tid in ((pong, PONG), (ping, PING)):
            command(e, tid, "configure")
        for e, tid in ((pong, PONG), (ping, PING)):
            command(e, tid, "enable")
        try:
            trips, elapsed, cores, other = self.window(ping, PING, "round_trips")
        finally:
            command(ping, PING, "stop")  # the ping publishes its summary of the round trips since the warmup
            command(pong, PONG, "stop")
        m = ping.metrics(PING)
        for e, tid in ((ping, PING), (pong, PONG)):
            command(e, tid, "halt")
        if trips <= 0:
            raise BenchError(f"no round trip in {elapsed:.2f} s (sends deferred {m.get('sends_deferred')})")
        mean = elapsed / trips * 1e6
        kept = m["samples"] > 0  # none when the run was shorter than the warmup
        return {"median_us": m["rtt_median_us"] if kept else None, "p99_us": m["rtt_p99_us"] if kept else None,
                "min_us": m["rtt_min_us"] if kept else None, "max_us": m["rtt_max_us"] if kept else None,
                "samples": m["samples"], "mean_us": mean, "one_way_us": mean / 2,
                # as fi_pingpong counts it: the bytes of both directions over the time
                "pingpong_mb_per_s": 2 * size / mean, "round_trips": trips, "seconds": elapsed,
                "cores_ping": cores[0], "cores_pong": cores[1], "other_cores": other}

    def stream(self, size):
        sender, receiver = self.executives
        set_parameter(sender, SENDER, "frameSize", size)
        for e, tid in ((receiver, RECEIVER), (sender, SENDER)):
            command(e, tid, "configure")
        for e, tid in ((receiver, RECEIVER), (sender, SENDER)):
            command(e, tid, "enable")
        try:
            moved, elapsed, cores, other = self.window(receiver, RECEIVER, "bytes_received")
        finally:
            command(sender, SENDER, "stop")
        # What was sent before the stop arrives; then the receiver stops too.
        sent = sender.metrics(SENDER)
        try:
            wait_until(lambda: receiver.metrics(RECEIVER)["frames_received"] >= sent["frames_sent"], 10,
                       "every frame sent at the receiver")
        except BenchError:
            pass  # reported below as a difference of counts
        received = receiver.metrics(RECEIVER)
        command(receiver, RECEIVER, "stop")
        for e, tid in ((sender, SENDER), (receiver, RECEIVER)):
            command(e, tid, "halt")
        notes = [f"sender {k}={sent[k]:.0f}" for k in ("send_errors",) if sent.get(k)]
        notes += [f"receiver {k}={received[k]:.0f}" for k in ("pattern_errors", "sequence_errors",
                                                               "malformed_frames", "send_errors") if received.get(k)]
        if sent.get("frames_sent") != received.get("frames_received"):
            notes.append(f"frames sent {sent.get('frames_sent'):.0f} != received {received.get('frames_received'):.0f}")
        if moved <= 0:
            raise BenchError(f"no byte received in {elapsed:.2f} s ({'; '.join(notes) or 'no error counted'})")
        return {"mb_per_s": moved / elapsed / 1e6, "msgs_per_s": moved / size / elapsed, "bytes": moved,
                "seconds": elapsed, "cores_sender": cores[0], "cores_receiver": cores[1], "other_cores": other,
                "would_blocks": sent.get("sends_deferred"), "pool_exhausted": sent.get("pool_exhausted"),
                "note": "; ".join(notes)}


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
            raise BenchError("fi_msg_pingpong not built (fabtests; see docs/benchmarks.md)")
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
            raise BenchError("fi_msg_bw not built (fabtests; see docs/benchmarks.md)")
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

def attempt(what, size, repeat, run, progress=None):
    print(f"  {point_prefix(progress)}{what:>30} {size_name(size):>8} #{repeat + 1} ...", end="", flush=True)
    try:
        r = run()
    except BenchError as e:
        r = {"na": str(e)}
    except (OSError, ValueError, KeyError, TypeError) as e:  # an unexpected answer: this point only is lost
        r = {"na": f"{type(e).__name__}: {e}"}
    if "na" in r:
        print(f" n/a: {r['na']}")
    elif "mb_per_s" in r:
        print(f" {r['mb_per_s']:.1f} MB/s, {r['msgs_per_s']:.0f} msg/s, other load {fmt(r['other_cores'])} cores")
    else:
        median = (f"median {r['median_us']:.1f} us, p99 {r['p99_us']:.1f} us, " if r.get("median_us") is not None
                  else "")
        print(f" {median}mean {r['mean_us']:.1f} us, other load {fmt(r['other_cores'])} cores")
    return r


def fmt(value, digits=2):
    return "n/a" if value is None else f"{value:.{digits}f}"


def value(results, system, size, key):
    r = results.get((system, size))
    if r is None or "na" in r:
        return None
    return r.get(key)


def ratio(a, b):
    return a / b if a is not None and b else None


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


# One colour per system in both plots; a system's mean and median share it.
COLOR = {"ofi-epoll": "C0", "ofi-busy": "C1", "ofi-pack": "C5", "fi_pingpong": "C2", "fi_msg_bw": "C2", "tcp-latency": "C3",
         "tcp-throughput": "C3", "fi-fd": "C4"}


def plot(path, results, series, sizes, key, ylabel, title):
    """series: [(system, label, line style, field or None for key)]; both axes logarithmic."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        import matplotlib.ticker
    except ImportError:
        print(f"matplotlib is missing (Debian: python3-matplotlib, run with /usr/bin/python3): no plot {path}")
        return
    figure, axes = plt.subplots(figsize=(9, 5.5))
    for system, label, style, field in series:
        points = [(size, value(results, system, size, field or key)) for size in sizes]
        points = [(x, y) for x, y in points if y is not None]
        if points:
            axes.plot([x for x, _ in points], [y for _, y in points], style, color=COLOR.get(system), marker="o",
                      label=label)
    axes.set_xscale("log", base=2)
    axes.set_yscale("log")
    axes.set_xticks(sizes)
    axes.set_xticklabels([size_name(s) for s in sizes])
    axes.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())  # only the measured sizes are labelled
    axes.set_xlabel("message size")
    axes.set_ylabel(ylabel)
    axes.set_title(title, fontsize=10)
    axes.grid(True, which="both", alpha=0.3)
    axes.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)
    print(f"wrote {path}")


# ---------------------------------------------------------------- main

def parse_cores(text):
    if text == "none":
        return None
    sending, _, receiving = text.partition("/")
    if not sending.isdigit() or not receiving.isdigit():
        raise argparse.ArgumentTypeError(f"--cores '{text}': expected SENDING/RECEIVING CPUs, e.g. 0/1, or none")
    return [int(sending), int(receiving)]


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
