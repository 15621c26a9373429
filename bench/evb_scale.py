#!/usr/bin/env python3
"""Event-builder scale: what one context of an event-builder partition costs as the partition grows, over pttcp
and over ptofi (libfabric's tcp provider): C = 1 EvM + N RUs + N BUs contexts, one executive each, on loopback,
at a low trigger rate; per role (EvM, RU, BU) the median and the max over its contexts of resident memory, the
transport's receive pool, registered memory, receive buffers held and the receive budget, connections, file
descriptors, threads and CPU; for the partition the events built per second, the time to start, configure,
connect and enable, and the transport's starvation counters. A benchmark, never a test.

Usage: python3 bench/evb_scale.py [--build BUILD] [--out DIR] [--sizes 9,33,65,129,257] [--transports tcp,ofi]
                                  [--seconds S] [--trigger-rate HZ] [--repeat N] [--quick]
The goal it checks (printed as ratios): every per-context figure flat within 2x from the smallest C to the largest.
Shares its process, HTTP and table helpers with the other drivers (python/daqx/bench.py).
"""

import argparse
import csv
import os
import resource
import signal
import statistics
import subprocess
import sys
import time

sys.dont_write_bytecode = True  # importing the package would leave __pycache__ in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
from daqx.bench import (  # noqa: E402  (the repository's package, found from this file)
    BenchError, BuildTree, Executive, Processes, Progress, attempt, checked_xml, conditions_line, cpu_seconds,
    load_average, machine_busy, machine_conditions, print_notes, print_table, pyplot, tail)
from daqx.machine import PortPicker, limits_line, mem_available, read_int, system_threads  # noqa: E402
from daqx.partition import Application, Context, Endpoint, Partition  # noqa: E402

EVB = "libdaqx_evb.so"
# protocol of the Endpoint, transport module, name the transport's receive pool starts with, label
TRANSPORTS = {
    "tcp": ("tcp", "libdaqx_pttcp.so", "pt/tcp/recv", "pttcp"),
    "ofi": ("ofi", "libdaqx_ptofi.so", "pt/ofi/recv", "ptofi (provider tcp)"),
}
DEFAULT_SIZES = [9, 33, 65, 129, 257]
QUICK_SIZES = [9, 33, 65]

# Transport ids: none collide up to 4000 RUs and BUs each.
EVM_TID, RU_FIRST_TID, BU_FIRST_TID = 10, 1000, 5000
ROLES = ["evm", "ru", "bu"]
ROLE_NAME = {"evm": "EvM", "ru": "RU", "bu": "BU"}

# A low rate and small fragments: this measures how many, not how fast (--trigger-rate). Low enough that 257
# executives sharing two cores build every event: above what a partition builds, its BUs fill their slots with
# the events in flight (up to memoryBudget), and their memory measures that backlog, not the cost of a peer.
TRIGGER_RATE = 50.0
# A point that builds less than this share of its trigger rate is flagged: its memory includes a backlog.
KEPT_UP = 0.9
FRAGMENT_SIZE = 256
# Hundreds of executives on two busy cores answer heartbeats late: with the defaults (BU 1 s, RU 5 s) the EvM
# would drop units that are only slow. Generous timeouts, as in tests/transport/event_builder_scale_test.cpp.
UNIT_TIMEOUT = 60

# Transport counters that must stay 0 (connections refused, or left without a receive buffer).
STARVATION = ["connections_starved", "receive_starvations", "connections_over_limit"]
# Application counters that must stay 0 in a healthy run (as bench/evb_efficiency.py checks them).
APP_PROBLEMS = {
    "evm": ["events_lost", "events_incomplete", "events_corrupt", "unexpected_discards", "bu_drops", "ru_downs",
            "malformed_frames"],
    "ru": ["send_errors", "events_dropped", "bu_downs", "malformed_frames"],
    "bu": ["events_corrupt", "events_incomplete", "events_abandoned", "protocol_errors", "duplicate_pieces",
           "malformed_frames"],
}

MIB = 1 << 20
# Per-context figures: key, column header, scale, format. Memory in MiB.
MEMORY_FIGURES = [("rss", "RSS MiB", MIB, ".1f"), ("recv", "recv pool MiB", MIB, ".1f"),
                  ("registered", "registered MiB", MIB, ".1f"), ("held", "recv bufs held", 1, ".0f"),
                  ("budget", "recv budget", 1, ".0f")]
CONNECTION_FIGURES = [("out", "conns out", 1, ".0f"), ("in", "conns in", 1, ".0f"),
                      ("plan_out", "plan out", 1, ".0f"), ("plan_in", "plan in", 1, ".0f"),
                      ("fds", "fds", 1, ".0f"), ("threads", "threads", 1, ".0f"), ("cpu", "CPU %", 0.01, ".1f")]
FIGURES = MEMORY_FIGURES + CONNECTION_FIGURES
# Figures sampled but not in the tables (in the CSV).
EXTRA_FIGURES = ["recv_reserved", "recv_used", "out_down", "in_down"] + STARVATION


# ---------------------------------------------------------------- machine: limits, memory, ports

def check_limits(contexts):
    """Refuses a partition the limits cannot hold: a context opens a socket per connection (the EvM 2N out and 2N
    in, libfabric maybe as many again), so its executive needs about 4C file descriptors plus its own; threads and
    processes a few dozen per executive."""
    need = 4 * contexts + 256
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < need:
        raise BenchError(f"C={contexts}: the hard open-file limit {hard} is below the ~{need} an EvM needs "
                         f"(ulimit -Hn)")
    threads_max = read_int("/proc/sys/kernel/threads-max") or 0
    pid_max = read_int("/proc/sys/kernel/pid_max") or 0
    threads_needed = system_threads() + 40 * contexts
    if threads_needed > min(threads_max, pid_max):
        raise BenchError(f"C={contexts}: ~{threads_needed} threads would pass threads-max {threads_max} or pid_max "
                         f"{pid_max}")
    nproc_soft, _ = resource.getrlimit(resource.RLIMIT_NPROC)
    if os.getuid() != 0 and nproc_soft != resource.RLIM_INFINITY and threads_needed > nproc_soft:
        raise BenchError(f"C={contexts}: ~{threads_needed} threads would pass RLIMIT_NPROC {nproc_soft} (ulimit -u)")


# ---------------------------------------------------------------- the partition

class Unit:
    """One application in its own context (one executive) on 127.0.0.1, with one endpoint on network data."""

    def __init__(self, role, cls, tid, instance, properties, control_port, data_port):
        self.role = role
        self.cls = cls
        self.tid = tid
        self.instance = instance
        self.properties = properties
        self.data_port = data_port
        self.url = f"http://127.0.0.1:{control_port}"
        self.executive = None


def make_units(n, ports, trigger_rate):
    """BUs first, RUs next, the EvM last: the order of the partition, of configure and of enable (receivers ready
    before the EvM starts the flow)."""
    evm = {"triggerRate": trigger_rate, "buTimeout": UNIT_TIMEOUT, "ruTimeout": UNIT_TIMEOUT}
    ru = {"fragmentSize": FRAGMENT_SIZE, "fragmentSpread": 0, "evmTimeout": UNIT_TIMEOUT}
    bu = {"evmTimeout": UNIT_TIMEOUT}
    spec = [("bu", "evb::BU", BU_FIRST_TID + j, j, bu) for j in range(n)]
    spec += [("ru", "evb::RU", RU_FIRST_TID + i, i, ru) for i in range(n)]
    spec.append(("evm", "evb::EvM", EVM_TID, 0, evm))
    return [Unit(role, cls, tid, instance, properties, ports[2 * k], ports[2 * k + 1])
            for k, (role, cls, tid, instance, properties) in enumerate(spec)]


def partition_xml(name, units, protocol, module, binary):
    partition = Partition(name, comment=["Generated by bench/evb_scale.py."])
    for u in units:
        partition.contexts.append(Context(u.url, Endpoint(protocol, "127.0.0.1", u.data_port, "data"),
                                          [module, EVB], [Application(u.cls, u.tid, u.instance, "data",
                                                                      u.properties)]))
    return checked_xml(partition, binary)


# ---------------------------------------------------------------- one executive's figures

def proc_status(pid):
    values = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            key, _, rest = line.partition(":")
            if key in ("VmRSS", "Threads"):
                values[key] = int(rest.split()[0])
    return values.get("VmRSS", 0) * 1024, values.get("Threads")


def open_file_soft_limit(pid):
    try:
        with open(f"/proc/{pid}/limits") as f:
            for line in f:
                if line.startswith("Max open files"):
                    return line.split()[3]
    except OSError:
        pass
    return None


def transport_metric(transport, name):
    for m in transport.get("metrics", []):
        if m.get("name") == name and not m.get("labels"):
            return m.get("value")
    return None


def sample_context(unit, pool_prefix, request_timeout):
    """Everything one context is measured by, read from /proc and its JSON API."""
    e = unit.executive
    pid = e.process.pid
    if e.process.poll() is not None:
        raise BenchError(f"{ROLE_NAME[unit.role]} {unit.tid} exited ({e.process.returncode}): "
                         f"{tail(e.process.log_path)}")
    rss, threads = proc_status(pid)
    fds = len(os.listdir(f"/proc/{pid}/fd"))
    s = {"role": unit.role, "tid": unit.tid, "rss": rss, "threads": threads, "fds": fds}
    # The receive pool: the bytes of the chunks it has taken from its allocator (with the heap allocator not
    # necessarily resident: compare RSS), bytes_reserved as /api/pools gives it, and what its blocks in use hold.
    s["recv"] = s["recv_reserved"] = s["recv_used"] = None
    for pool in e.request("/api/pools", timeout=request_timeout):
        if pool.get("name", "").startswith(pool_prefix):
            s["recv"] = (s["recv"] or 0) + sum(c.get("bytes", 0) for c in pool.get("chunks", []))
            s["recv_reserved"] = (s["recv_reserved"] or 0) + pool.get("bytes_reserved", 0)
            s["recv_used"] = (s["recv_used"] or 0) + sum(c.get("block_size", 0) * c.get("blocks_used", 0)
                                                         for c in pool.get("classes", []))
    transports = e.request("/api/transports", timeout=request_timeout)
    for key in ["registered", "held", "budget", "out", "in", "out_down", "in_down", "plan_out", "plan_in"] + STARVATION:
        s[key] = None
    metric_names = {"registered": "registered_bytes", "held": "receive_buffers_held", "budget": "receive_budget"}
    metric_names.update({name: name for name in STARVATION})
    for t in transports:
        for key, name in metric_names.items():
            v = transport_metric(t, name)
            if v is not None:
                s[key] = (s[key] or 0) + v
        connections = t.get("connections", [])
        for key, outgoing in (("out", True), ("in", False)):
            mine = [c for c in connections if bool(c.get("outgoing")) == outgoing]
            s[key] = (s[key] or 0) + len(mine)
            s[key + "_down"] = (s[key + "_down"] or 0) + sum(1 for c in mine if not c.get("up"))
        plan = t.get("plan") or {}
        for key in ("outgoing", "incoming"):
            if plan.get(key) is not None:
                name = "plan_out" if key == "outgoing" else "plan_in"
                s[name] = (s[name] or 0) + plan[key]
    app = e.request(f"/api/applications/{unit.tid}", timeout=request_timeout)
    s["state"] = app.get("state")
    s["reason"] = app.get("reason")
    s["app"] = {m["name"]: m["value"] for m in app.get("metrics", []) if not m.get("labels")}
    return s


# ---------------------------------------------------------------- one partition

class Setup(BuildTree):
    def __init__(self, args, processes, build, out):
        super().__init__(build)
        self.args = args
        self.processes = processes
        self.config_dir = os.path.join(out, "partitions")
        os.makedirs(self.config_dir, exist_ok=True)
        self.ports = PortPicker()
        self.serial = 0


class MemoryWatch:
    """The lowest MemAvailable seen during a run; a BenchError before the machine runs out."""

    def __init__(self, floor):
        self.floor = floor
        self.lowest = mem_available()

    def check(self, what):
        now = mem_available()
        if now is None:
            return
        self.lowest = min(self.lowest, now)
        if now < self.floor:
            raise BenchError(f"memory nearly exhausted {what}: MemAvailable {now / MIB:.0f} MiB, below the "
                             f"--min-free-mib {self.floor / MIB:.0f}; stopped before the machine runs out")


class ScaleRun:
    """One partition: started, every executive ready, configured, connected and enabled in partition order
    (BUs, RUs, the EvM last), run for --seconds while the EvM builds events, every context sampled, then stopped,
    halted and terminated."""

    def __init__(self, setup, transport, contexts):
        self.setup = setup
        self.args = setup.args
        self.protocol, self.module, self.pool_prefix, _ = TRANSPORTS[transport]
        self.contexts = contexts
        self.n = (contexts - 1) // 2
        self.units = make_units(self.n, setup.ports.take(2 * contexts), self.args.trigger_rate)
        setup.serial += 1
        self.name = f"{setup.serial:03d}-{transport}-c{contexts}"
        self.path = os.path.join(setup.config_dir, f"{self.name}.xml")
        with open(self.path, "w") as f:
            f.write(partition_xml(f"evb-scale-{transport}-{contexts}", self.units, self.protocol, self.module,
                                  setup.binary))
        self.memory = MemoryWatch(self.args.min_free_mib * MIB)
        self.timing = {}
        self.notes = []
        # Bounds that grow with the partition: 257 executives on two busy cores take a while.
        self.ready_timeout = self.args.ready_timeout or 120 + 2.0 * contexts
        self.request_timeout = 120

    def evm(self):
        return self.units[-1]

    def post(self, unit, path, body, timeout=None):
        return unit.executive.request(path, body if body is not None else {}, timeout=timeout or self.request_timeout)

    def transition_all(self, command):
        for u in self.units:
            answer = self.post(u, "/api/transition", {"command": command})
            if not answer.get("ok", False):
                raise BenchError(f"{ROLE_NAME[u.role]} {u.tid} ({u.url}) refused {command}: {answer}")
            self.memory.check(f"at {command}")

    def start(self):
        started = time.monotonic()
        for u in self.units:
            u.executive = Executive(self.setup.processes, self.setup.binary, self.setup.env, self.path, u.url,
                                    f"{self.name}-{u.role}{u.instance}", u.role)
        self.timing["spawn_s"] = time.monotonic() - started
        pending = list(self.units)
        deadline = started + self.ready_timeout
        while pending:
            still = []
            for u in pending:
                p = u.executive.process
                if p.poll() is not None:
                    raise BenchError(f"{ROLE_NAME[u.role]} {u.tid} exited ({p.returncode}) before ready: "
                                     f"{tail(p.log_path)}")
                with open(p.log_path, errors="replace") as f:
                    if " ready " not in f.read():
                        still.append(u)
            pending = still
            self.memory.check(f"while {len(pending)} of {self.contexts} executives were starting")
            if pending:
                if time.monotonic() > deadline:
                    raise BenchError(f"{len(pending)} of {self.contexts} executives not ready within "
                                     f"{self.ready_timeout:.0f} s, e.g. {pending[0].url}: "
                                     f"{tail(pending[0].executive.process.log_path)}")
                time.sleep(0.2)
        self.timing["ready_s"] = time.monotonic() - started

        t = time.monotonic()
        self.transition_all("configure")
        self.timing["configure_s"] = time.monotonic() - t

        # Every outgoing connection opened and waited for before enable (POST /api/connect): all start at once
        # (timeout=0), then each context is waited for with what is left of the bound.
        t = time.monotonic()
        for u in self.units:
            try:
                self.post(u, "/api/connect?timeout=0", {})
            except BenchError as e:
                if "HTTP 504" not in str(e):  # 504: not all up yet, which timeout=0 always says at first
                    raise
        deadline = t + self.args.connect_timeout
        down = []
        for u in self.units:
            left_ms = int(max(0.0, min(120.0, deadline - time.monotonic())) * 1000)
            try:
                self.post(u, f"/api/connect?timeout={left_ms}", {}, timeout=left_ms / 1000 + 60)
            except BenchError as e:
                down.append(f"{ROLE_NAME[u.role]} {u.tid}: {str(e)[:200]}")
            self.memory.check("while connecting")
        self.timing["connect_s"] = time.monotonic() - t
        if down:
            self.notes.append(f"{len(down)} context(s) not fully connected within {self.args.connect_timeout:.0f} s, "
                              f"e.g. {down[0]}")

        t = time.monotonic()
        self.transition_all("enable")
        self.timing["enable_s"] = time.monotonic() - t
        self.timing["to_enabled_s"] = time.monotonic() - started

    def sleep_until(self, moment):
        while True:
            left = moment - time.monotonic()
            if left <= 0:
                return
            self.memory.check("during the run")
            for u in self.units:
                if u.executive.process.poll() is not None:
                    raise BenchError(f"{ROLE_NAME[u.role]} {u.tid} exited ({u.executive.process.returncode}) "
                                     f"during the run: {tail(u.executive.process.log_path)}")
            time.sleep(min(1.0, left))

    def evm_metrics(self):
        app = self.evm().executive.request(f"/api/applications/{EVM_TID}", timeout=self.request_timeout)
        if app.get("state") == "Failed":
            raise BenchError(f"the EvM failed: {app.get('reason')}")
        return {m["name"]: m["value"] for m in app.get("metrics", []) if not m.get("labels")}

    def cpu_all(self):
        return {u.tid: cpu_seconds(u.executive.process.pid) for u in self.units}

    def wait_all_alive(self):
        """Until the EvM counts every RU and BU alive: at 257 contexts on two cores the units' first statuses
        reach it many seconds after the enable, and a window that starts before measures a partition still
        starting (bounded by the ready timeout; the window starts anyway then, and the point's note says so)."""
        deadline = time.monotonic() + self.ready_timeout
        while True:
            m = self.evm_metrics()
            if m.get("bus_alive", 0) >= self.n and m.get("rus_alive", 0) >= self.n:
                return
            if time.monotonic() > deadline:
                self.notes.append(f"the window started with {m.get('bus_alive', 0)} of {self.n} BUs and "
                                  f"{m.get('rus_alive', 0)} of {self.n} RUs alive at the EvM "
                                  f"({self.ready_timeout:.0f} s after the warm-up)")
                return
            time.sleep(0.5)

    def measure(self):
        """The window: it starts `warmup` s after enable once the EvM counts every unit alive, and lasts
        `seconds` - `warmup` s; events/s from the EvM's events_completed over it, which must grow. Then every
        context is sampled."""
        enabled = time.monotonic()
        self.sleep_until(enabled + self.args.warmup)
        self.wait_all_alive()
        self.timing["all_alive_s"] = time.monotonic() - enabled
        t0, first = time.monotonic(), self.evm_metrics()
        cpu0, busy0 = self.cpu_all(), machine_busy()
        self.sleep_until(t0 + max(self.args.seconds - self.args.warmup, 1))
        t1, second = time.monotonic(), self.evm_metrics()
        cpu1, busy1 = self.cpu_all(), machine_busy()
        built = second.get("events_completed", 0) - first.get("events_completed", 0)
        if built <= 0:
            raise BenchError(
                f"did not build events: the EvM's events_completed stayed at {second.get('events_completed')} over "
                f"{t1 - t0:.1f} s (assigned {second.get('events_assigned')}, in flight "
                f"{second.get('events_in_flight')}, bus_alive {second.get('bus_alive')}, rus_alive "
                f"{second.get('rus_alive')}, credits_queued {second.get('credits_queued')})")
        wall = busy1[0] - busy0[0]
        ours = sum(cpu1[tid] - cpu0[tid] for tid in cpu0)
        result = {
            "contexts": self.contexts, "n": self.n,
            "events_per_s": built / (t1 - t0),
            "events_completed": second.get("events_completed"),
            "events_per_request": second.get("events_per_request"),
            "window_s": t1 - t0,
            "cores_ours": ours / wall if wall > 0 else None,
            "other_cores": max(0.0, (busy1[1] - busy0[1] - ours) / wall) if wall > 0 else None,
        }
        result.update(self.timing)

        t = time.monotonic()
        samples = []
        for u in self.units:
            s = sample_context(u, self.pool_prefix, self.request_timeout)
            s["cpu"] = (cpu1[u.tid] - cpu0[u.tid]) / (t1 - t0)
            samples.append(s)
            self.memory.check("while sampling")
        result["sample_s"] = time.monotonic() - t
        result["evm_nofile_soft"] = open_file_soft_limit(self.evm().executive.process.pid)
        result["min_mem_available_gib"] = self.memory.lowest / 2**30

        for role in ROLES:
            mine = [s for s in samples if s["role"] == role]
            for key in [k for k, *_ in FIGURES] + EXTRA_FIGURES:
                values = [s[key] for s in mine if s.get(key) is not None]
                result[f"{role}.{key}.median"] = statistics.median(values) if values else None
                result[f"{role}.{key}.max"] = max(values) if values else None
        for name in STARVATION:
            result[name] = sum(s[name] or 0 for s in samples)
        problems = []
        for s in samples:
            label = f"{ROLE_NAME[s['role']]} {s['tid']}"
            if s["state"] != "Enabled":
                problems.append(f"{label} {s['state']}{' (' + s['reason'] + ')' if s.get('reason') else ''}")
            for name in STARVATION:
                if s[name]:
                    problems.append(f"{label} {name}={s[name]:.0f}")
            for name in APP_PROBLEMS[s["role"]]:
                if s["app"].get(name):
                    problems.append(f"{label} {name}={s['app'][name]:.0f}")
            if s["out_down"] or s["in_down"]:
                problems.append(f"{label} connections down: {s['out_down']} out, {s['in_down']} in")
        if len(problems) > 6:
            problems = problems[:6] + [f"... {len(problems) - 6} more"]
        short = short_of_trigger(result["events_per_s"], self.args.trigger_rate)
        result["note"] = "; ".join(self.notes + problems + ([short] if short else []))
        return result

    def command_all(self, command):
        """A command to every context in reverse order, refusals ignored (the executive's own shutdown halts
        whatever is left)."""
        for u in reversed(self.units):
            if u.executive is None or u.executive.process.poll() is not None:
                continue
            try:
                u.executive.request("/api/transition", {"command": command}, timeout=20)
            except BenchError:
                pass

    def terminate(self):
        """Stop and halt (the EvM first), then SIGTERM to every executive at once, SIGKILL to any still there
        after 30 s."""
        try:
            self.command_all("stop")
            self.command_all("halt")
        finally:
            terminate_all(self.setup.processes, [u.executive.process for u in self.units if u.executive], 30)


def terminate_all(processes, started, grace):
    for process in started:
        if process.poll() is None:
            try:
                process.send_signal(signal.SIGTERM)
            except OSError:
                pass
    deadline = time.monotonic() + grace
    for process in started:
        try:
            process.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        if process in processes.running:
            processes.running.remove(process)


def build_stamp(build):
    """The newest modification time of the executive, its libraries and the modules: another build into the tree
    while the driver runs would change what is measured (and replace a program as it is started)."""
    newest = 0.0
    for folder in ("executive", "modules", "api", "mempool", "services", os.path.join("pt", "base")):
        path = os.path.join(build, folder)
        try:
            names = os.listdir(path)
        except OSError:
            continue
        for name in names:
            if name == "daqx-executive" or ".so" in name:
                try:
                    newest = max(newest, os.stat(os.path.join(path, name)).st_mtime)
                except OSError:
                    pass
    return newest


def stamp_text(stamp):
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(stamp))


def run_point(setup, transport, contexts):
    _, module, _, _ = TRANSPORTS[transport]
    missing = setup.missing([module, EVB])
    if missing:
        raise BenchError(missing)
    check_limits(contexts)
    before = build_stamp(setup.build)
    run = ScaleRun(setup, transport, contexts)
    try:
        run.start()
        result = run.measure()
    except (BenchError, OSError) as e:
        if build_stamp(setup.build) != before:
            raise BenchError(f"{e} (the build tree changed during the point: built at {stamp_text(before)}, now "
                             f"{stamp_text(build_stamp(setup.build))})") from None
        raise
    finally:
        run.terminate()
    result["build"] = stamp_text(before)
    if build_stamp(setup.build) != before:
        result["note"] = "; ".join(filter(None, [result.get("note"), "the build tree changed during the point"]))
    return result


def point_summary(r):
    return (f"{r['events_per_s']:.0f} ev/s, ready {r['ready_s']:.1f} s, enabled {r['to_enabled_s']:.1f} s, "
            f"all alive {r['all_alive_s']:.1f} s after, "
            f"BU RSS median {fmt(r.get('bu.rss.median'), MIB, '.1f')} MiB, other {r['other_cores']:.2f} cores")


def short_of_trigger(events_per_s, trigger_rate):
    """The note for a point that built less than KEPT_UP of its trigger rate, or None."""
    if trigger_rate <= 0 or events_per_s >= KEPT_UP * trigger_rate:
        return None
    return (f"built {events_per_s:.0f} of {trigger_rate:g} events/s: the machine did not keep up, so the BUs hold "
            f"the events in flight and their memory includes that backlog (lower --trigger-rate)")


def median_of(tries):
    """Each figure's median over the successful repeats (every figure on its own); the last failure if none
    succeeded."""
    good = [r for r in tries if "na" not in r]
    if not good:
        return tries[-1]
    result = {}
    for key in good[0]:
        values = [r[key] for r in good if isinstance(r.get(key), (int, float)) and not isinstance(r.get(key), bool)]
        if values and len(values) == len([r for r in good if r.get(key) is not None]):
            result[key] = statistics.median(values)
        else:
            result[key] = good[len(good) // 2].get(key)
    notes = [r["note"] for r in good if r.get("note")]
    failed = [r["na"] for r in tries if "na" in r]
    if failed:
        notes.append(f"{len(failed)} repeat(s) failed: {failed[0]}")
    result["note"] = "; ".join(notes)
    result["repeats"] = " ".join("n/a" if "na" in r else f"{r['events_per_s']:.4g}" for r in tries)
    return result


# ---------------------------------------------------------------- tables, ratios, CSV, plot

def fmt(v, scale=1, spec=".1f"):
    return "n/a" if v is None else format(v / scale, spec)


def role_table(results, transport, sizes, role, figures):
    groups = [("", ["C"])] + [(header, ["med", "max"]) for _, header, _, _ in figures]
    rows = []
    for c in sizes:
        r = results.get((transport, c))
        row = [str(c)]
        for key, _, scale, spec in figures:
            if r is None or "na" in r:
                row += ["n/a", "n/a"]
            else:
                row += [fmt(r.get(f"{role}.{key}.median"), scale, spec), fmt(r.get(f"{role}.{key}.max"), scale, spec)]
        rows.append(row)
    print_table(groups, rows)


def partition_table(results, transport, sizes):
    groups = [("", ["C", "N"]), ("seconds to", ["ready", "config", "connect", "enable"]),
              ("events", ["ev/s", "ev/req"]),
              ("transport counters (sum over contexts)", ["conn starved", "recv starvations", "over limit"]),
              ("cores", ["ours", "other"]), ("MemAvail", ["min GiB"])]
    rows = []
    for c in sizes:
        r = results.get((transport, c))
        if r is None:
            continue
        if "na" in r:
            rows.append([str(c), str((c - 1) // 2)] + ["n/a"] * 13)
            continue
        rows.append([str(c), str(r["n"]), fmt(r["ready_s"]), fmt(r["configure_s"]), fmt(r["connect_s"]),
                     fmt(r["enable_s"]), fmt(r["events_per_s"], 1, ".0f"), fmt(r.get("events_per_request"), 1, ".0f"),
                     fmt(r["connections_starved"], 1, ".0f"), fmt(r["receive_starvations"], 1, ".0f"),
                     fmt(r["connections_over_limit"], 1, ".0f"), fmt(r.get("cores_ours"), 1, ".2f"),
                     fmt(r.get("other_cores"), 1, ".2f"), fmt(r.get("min_mem_available_gib"), 1, ".1f")])
    print_table(groups, rows)


def ratio(a, b):
    if a is None or b is None:
        return None
    if b == 0:
        return 1.0 if a == 0 else float("inf")
    return a / b


def ratios(results, transport, sizes):
    """(smallest C, largest C, {(role, key, "median"|"max"): ratio}) over the sizes that were measured."""
    measured = [c for c in sizes if (transport, c) in results and "na" not in results[(transport, c)]]
    if len(measured) < 2:
        return None
    small, large = results[(transport, measured[0])], results[(transport, measured[-1])]
    table = {}
    for role in ROLES:
        for key, *_ in FIGURES:
            for stat in ("median", "max"):
                table[(role, key, stat)] = ratio(large.get(f"{role}.{key}.{stat}"), small.get(f"{role}.{key}.{stat}"))
    return measured[0], measured[-1], table


def ratio_cell(v):
    if v is None:
        return "n/a"
    if v == float("inf"):
        return "inf!"
    return f"{v:.2f}{'!' if v > 2.0 else ''}"


def ratio_table(results, transport, sizes):
    found = ratios(results, transport, sizes)
    if found is None:
        print("  (fewer than two sizes measured: no ratio)")
        return []
    small, large, table = found
    groups = [("", ["role"])] + [(header, ["med", "max"]) for _, header, _, _ in FIGURES]
    rows = []
    for role in ROLES:
        row = [ROLE_NAME[role]]
        for key, *_ in FIGURES:
            row += [ratio_cell(table[(role, key, "median")]), ratio_cell(table[(role, key, "max")])]
        rows.append(row)
    print(f"  ratio C={large} / C={small} per role ('!': more than 2x, the goal is flat within 2x)")
    print_table(groups, rows)
    grown = []
    for (role, key, stat), v in table.items():
        if v is not None and v > 2.0 and key not in ("out", "in", "plan_out", "plan_in"):
            header = next(h for k, h, _, _ in FIGURES if k == key)
            grown.append(f"{ROLE_NAME[role]} {header} {stat} x{v:.2f}")
    return [(transport, small, large, g) for g in grown]


PARTITION_FIELDS = ["n", "ready_s", "spawn_s", "configure_s", "connect_s", "enable_s", "to_enabled_s", "all_alive_s",
                    "window_s", "sample_s", "events_per_s", "events_completed", "events_per_request",
                    "connections_starved", "receive_starvations", "connections_over_limit", "cores_ours", "other_cores",
                    "min_mem_available_gib", "evm_nofile_soft", "build", "repeats"]


def write_csvs(out, results, transports, sizes):
    path = os.path.join(out, "evb_scale_partitions.csv")
    with open(path, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["transport", "contexts"] + PARTITION_FIELDS + ["note"])
        for t in transports:
            for c in sizes:
                r = results.get((t, c))
                if r is None:
                    continue
                cells = ["" if r.get(k) is None else (f"{r[k]:.6g}" if isinstance(r[k], float) else r[k])
                         for k in PARTITION_FIELDS]
                writer.writerow([t, c] + cells + [r.get("na", r.get("note", ""))])
    print(f"wrote {path}")
    path = os.path.join(out, "evb_scale_contexts.csv")
    with open(path, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["transport", "contexts", "role", "figure", "median", "max"])
        for t in transports:
            for c in sizes:
                r = results.get((t, c))
                if r is None or "na" in r:
                    continue
                for role in ROLES:
                    for key in [k for k, *_ in FIGURES] + EXTRA_FIGURES:
                        values = [r.get(f"{role}.{key}.{stat}") for stat in ("median", "max")]
                        writer.writerow([t, c, role, key] + ["" if v is None else f"{v:.6g}" for v in values])
    print(f"wrote {path}")


def plot(out, results, transports, sizes, title):
    plt, ticker = pyplot("plot")
    if plt is None:
        return
    panels = [("rss", "resident memory, MiB", MIB), ("recv", "receive pool chunks, MiB", MIB),
              ("registered", "registered memory, MiB", MIB), ("fds", "file descriptors", 1),
              ("out", "outgoing connections", 1), ("cpu", "CPU, % of a core", 0.01)]
    figure, axes = plt.subplots(2, 3, figsize=(15, 8.5))
    styles = {"tcp": "-", "ofi": "--"}
    colours = {"evm": "tab:red", "ru": "tab:blue", "bu": "tab:green"}
    for a, (key, label, scale) in zip(axes.flat, panels):
        for t in transports:
            for role in ROLES:
                points = [(c, results[(t, c)].get(f"{role}.{key}.median")) for c in sizes
                          if (t, c) in results and "na" not in results[(t, c)]]
                points = [(x, y / scale) for x, y in points if y is not None]
                if points:
                    a.plot([x for x, _ in points], [y for _, y in points], styles.get(t, "-"), marker="o",
                           color=colours[role], label=f"{ROLE_NAME[role]} {TRANSPORTS[t][3]}")
        a.set_xscale("log", base=2)
        a.set_xticks(sizes)
        a.set_xticklabels([str(c) for c in sizes])
        a.xaxis.set_minor_locator(ticker.NullLocator())
        a.set_xlabel("contexts C (1 EvM + N RUs + N BUs)")
        a.set_ylabel(f"{label} (median per context)")
        a.grid(True, alpha=0.3)
        a.set_ylim(bottom=0)
    axes.flat[0].legend(fontsize=8)
    figure.suptitle(title, fontsize=10)
    figure.tight_layout()
    path = os.path.join(out, "evb_scale.png")
    figure.savefig(path, dpi=110)
    plt.close(figure)
    print(f"wrote {path}")


# ---------------------------------------------------------------- main

def parse_list(text, kind):
    try:
        return [kind(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a comma-separated list") from None


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build", default="build/release", help="the daqx build tree, Release (build/release)")
    parser.add_argument("--out", default="build/bench/evb-scale",
                        help="folder for CSV, plot, partitions, logs (build/bench/evb-scale)")
    parser.add_argument("--sizes", type=lambda t: parse_list(t, int),
                        help="contexts C per partition, odd, >= 3: 1 EvM + (C-1)/2 RUs + (C-1)/2 BUs "
                             f"({','.join(map(str, DEFAULT_SIZES))})")
    parser.add_argument("--transports", default="tcp,ofi", type=lambda t: parse_list(t, str),
                        help="from tcp (pttcp), ofi (ptofi, provider tcp) (tcp,ofi)")
    parser.add_argument("--seconds", type=float, default=20.0,
                        help="s from the last enable to the sample of every context, not counting the wait for "
                             "every unit to be alive at the EvM after the warm-up (20)")
    parser.add_argument("--warmup", type=float,
                        help="s from the last enable to the start of the events/s window, which waits then for "
                             "every unit to be alive at the EvM (a quarter of --seconds, at most 5: the largest partitions "
                             "take seconds to reach their rate)")
    parser.add_argument("--trigger-rate", type=float, default=TRIGGER_RATE,
                        help=f"the EvM's triggerRate, events/s: low enough for the largest partition to keep up on "
                             f"this machine, else its BUs hold the events in flight ({TRIGGER_RATE:g})")
    parser.add_argument("--repeat", type=int, default=1,
                        help="runs per point, the transports taking turns; each figure's median is reported (1)")
    parser.add_argument("--quick", action="store_true", help=f"sizes {','.join(map(str, QUICK_SIZES))} only")
    parser.add_argument("--ready-timeout", type=float,
                        help="s for every executive of a partition to be ready (120 + 2 s per context)")
    parser.add_argument("--connect-timeout", type=float, default=180.0,
                        help="s for every context's outgoing connections to be up before enable (180)")
    parser.add_argument("--min-free-mib", type=int, default=2048,
                        help="a partition is stopped when MemAvailable falls below this (2048 MiB)")
    args = parser.parse_args()

    sizes = args.sizes or (QUICK_SIZES if args.quick else DEFAULT_SIZES)
    for c in sizes:
        if c < 3 or c % 2 == 0:
            parser.error(f"--sizes: {c} is not 1 EvM + N RUs + N BUs (an odd number >= 3)")
    sizes = sorted(set(sizes))
    transports = args.transports
    for t in transports:
        if t not in TRANSPORTS:
            parser.error(f"--transports: '{t}' is none of {', '.join(TRANSPORTS)}")
    if args.repeat < 1:
        parser.error("--repeat must be at least 1")
    if args.trigger_rate < 0:
        parser.error("--trigger-rate must be 0 (as fast as the BUs ask) or more")
    args.warmup = args.warmup if args.warmup is not None else min(5.0, args.seconds / 4)

    build = os.path.abspath(args.build)
    out = os.path.abspath(args.out)
    log_dir = os.path.join(out, "logs")
    os.makedirs(log_dir, exist_ok=True)

    # A SIGTERM to the driver unwinds like Ctrl-C, through the finally that stops every process.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))

    start_load = load_average()
    conditions = machine_conditions()
    print("== Event-builder scale on loopback (127.0.0.1): per-context cost of 1 EvM + N RUs + N BUs, "
          f"over {', '.join(TRANSPORTS[t][3] for t in transports)}")
    print(conditions_line(start_load, at_start=True))
    print(limits_line())
    print(f"one executive per context, every process shares these {conditions['usable_cpus']} CPUs (nothing pinned); "
          f"C = {', '.join(map(str, sizes))}; events/s over {args.seconds - args.warmup:g} s from "
          f"{args.warmup:g} s after the last enable and every unit alive at the EvM; "
          f"{'median of ' + str(args.repeat) + ' runs' if args.repeat > 1 else 'one run'} per point")

    processes = Processes(log_dir)
    setup = Setup(args, processes, build, out)
    missing = setup.missing([EVB])
    if missing:
        print(f"cannot run: {missing} (build with: ninja -C {build} daqx-executive daqx_evb daqx_pttcp daqx_ptofi)")
        return 2
    results, tries = {}, {}
    started = time.monotonic()
    progress = Progress(args.repeat * len(sizes) * len(transports))
    try:
        for c in sizes:
            for n_try in range(args.repeat):
                for t in transports:
                    r = attempt(f"{TRANSPORTS[t][3]} C={c} #{n_try + 1}", lambda: run_point(setup, t, c), progress,
                                point_summary, width=28)
                    tries.setdefault((t, c), []).append(r)
            for t in transports:
                results[(t, c)] = median_of(tries[(t, c)])
    except KeyboardInterrupt:
        print("\ninterrupted: stopping every executive")
        return 130
    finally:
        terminate_all(processes, list(processes.running), 15)
        processes.stop_all()

    repeats = f"median of {args.repeat} runs" if args.repeat > 1 else "one run"
    grown = []
    for t in transports:
        label = TRANSPORTS[t][3]
        print()
        print(f"== {label}: the partition; {repeats}; {conditions_line(start_load)}")
        partition_table(results, t, sizes)
        for role in ROLES:
            count = "1 context" if role == "evm" else "N contexts"
            print()
            print(f"== {label}, {ROLE_NAME[role]} ({count}): per context, median and max over the role's contexts")
            role_table(results, t, sizes, role, MEMORY_FIGURES)
            role_table(results, t, sizes, role, CONNECTION_FIGURES)
        print()
        print(f"== {label}: growth per context from the smallest to the largest partition")
        grown += ratio_table(results, t, sizes)
    print()
    print_notes(f"Partition: C contexts = 1 evb::EvM (tid {EVM_TID}) + N evb::RU (tid {RU_FIRST_TID}+i) + N evb::BU "
                f"(tid {BU_FIRST_TID}+j), one daqx-executive each, control and data on 127.0.0.1 (ports below the "
                f"ephemeral range); EvM triggerRate {args.trigger_rate:g}/s, RU fragmentSize {FRAGMENT_SIZE} B, "
                f"fragmentSpread 0, every other application parameter at its default except the unit timeouts "
                f"(EvM buTimeout and ruTimeout, RU and BU evmTimeout {UNIT_TIMEOUT} s: units on a loaded machine answer "
                f"late); every transport parameter at its default (ptofi provider=tcp). Order: start all, wait for "
                f"'ready' in every log, configure BUs, RUs, EvM; POST /api/connect on every context; enable BUs, "
                f"RUs, EvM. Per context after --seconds of running: RSS = VmRSS; recv pool = bytes of the chunks the "
                f"transport's receive pool (pt/tcp/recv, pt/ofi/recv) has allocated (heap allocator: not necessarily resident, compare RSS); registered = registered_bytes; "
                f"recv bufs held / budget = receive_buffers_held / receive_budget (ptofi only); conns = entries of "
                f"/api/transports 'connections' (outgoing true/false), plan = its 'plan' object; fds = entries of "
                f"/proc/PID/fd; CPU = the process's CPU over the events/s window. ev/s: the EvM's events_completed "
                f"over the window; ev/req: its events_per_request gauge. cores ours/other: CPU of the partition's "
                f"executives / of everything else over the window.")
    builds = sorted({r["build"] for r in results.values() if r.get("build")})
    if len(builds) > 1:
        print(f"  ! the points ran on different builds of {build} (newest file of each: {', '.join(builds)}): "
              f"another build went into the tree during the run")
    elif builds:
        print(f"  build: {build}, newest executive/module file {builds[0]}")
    failed = []
    for (t, c), r in sorted(results.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        if "na" in r:
            failed.append(f"{TRANSPORTS[t][3]} C={c}: {r['na']}")
            print(f"  n/a {TRANSPORTS[t][3]} C={c}: {r['na']}")
        elif r.get("note"):
            print(f"  note {TRANSPORTS[t][3]} C={c}: {r['note']}")
    if grown:
        print("figures that grew more than 2x per context (connection counts are expected to grow with N):")
        for t, small, large, g in grown:
            print(f"  {TRANSPORTS[t][3]} C={small} -> C={large}: {g}")
    write_csvs(out, results, transports, sizes)
    plot(out, results, transports, sizes,
         f"event-builder scale on loopback, {conditions['usable_cpus']} CPUs shared, triggerRate {args.trigger_rate:g}/s; "
         f"{repeats}")
    with open(os.path.join(out, "evb_scale_machine.txt"), "w") as f:
        f.write(conditions_line(start_load) + "\n" + limits_line() + "\n" + " ".join(sys.argv) + "\n")
    print(f"{time.monotonic() - started:.0f} s in all; logs in {log_dir}")
    if failed:
        print(f"FAILED: {len(failed)} partition(s) did not build events or could not be measured:")
        for line in failed:
            print(f"  {line}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
