"""What the benchmark drivers in bench/ share (tcp_comparison.py, shm_comparison.py, evb_efficiency.py,
ofi_comparison.py, ibv_comparison.py, poll_time.py, profile_pair.py): sizes and ports, the processes a driver starts and
their CPU time, daqx executives driven over HTTP with the nton test application over one transport, the
ZeroMQ programs and ucx_perftest, the median of repeated points, progress through the points, tables and CSV.
Not a program.
"""

import csv
import json
import os
import platform
import signal
import socket
import subprocess
import textwrap
import time
import urllib.error
import urllib.request

from .partition import Application, Context, Endpoint, Partition, PartitionError

PTTCP = "libdaqx_pttcp.so"
NTON = "libdaqx_nton.so"
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")

# UCX over its tcp transport on the loopback device: ucx_perftest (Debian's ucx-utils) as server and client.
UCX_ENV = {"UCX_TLS": "tcp", "UCX_NET_DEVICES": "lo"}



class BenchError(Exception):
    """One measurement could not be made; its cells say n/a and the run goes on."""


# ---------------------------------------------------------------- sizes, ports, machine

def parse_size(text):
    units = {"K": 1024, "M": 1024 * 1024}
    text = text.strip().upper().removesuffix("IB").removesuffix("B")
    if text and text[-1] in units:
        return int(text[:-1]) * units[text[-1]]
    return int(text)


def size_name(size):
    for unit, scale in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size >= scale and size % scale == 0:
            return f"{size // scale} {unit}"
    return f"{size} B"


def free_ports(count):
    """Ports the kernel picked as free on 127.0.0.1, all held open until every one is chosen so none repeats."""
    sockets = []
    try:
        for _ in range(count):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind(("127.0.0.1", 0))
            sockets.append(s)
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def listening(port):
    """True once something listens on 127.0.0.1:port. Read from /proc so that no probe connection is spent
    (iperf3 -s -1 would take a probe for its one client)."""
    wanted_address = f"0100007F:{port:04X}"
    wanted_any = f"00000000:{port:04X}"
    with open("/proc/net/tcp") as table:
        for line in table.readlines()[1:]:
            fields = line.split()
            if fields[3] == "0A" and fields[1] in (wanted_address, wanted_any):
                return True
    return False


def machine_conditions():
    with open("/proc/loadavg") as f:
        load = " ".join(f.read().split()[:3])
    model = "unknown"
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    return {
        "nproc": os.cpu_count(),
        "usable_cpus": len(os.sched_getaffinity(0)),
        "load_average": load,
        "kernel": platform.release(),
        "cpu": model,
    }


def load_average():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


# ---------------------------------------------------------------- processes

def cpu_seconds(pid):
    """utime + stime of a whole process (every thread, a zombie's too), from /proc/<pid>/stat."""
    with open(f"/proc/{pid}/stat") as f:
        text = f.read()
    fields = text[text.rindex(")") + 2:].split()  # the command name may hold spaces and parentheses
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def machine_busy():
    """(now, CPU seconds the whole machine has spent busy): with our processes' CPU time it tells how much
    else ran during a point, since other work on these few cores moves every number."""
    with open("/proc/stat") as f:
        fields = [int(v) for v in f.readline().split()[1:]]
    idle = fields[3] + fields[4]  # idle + iowait
    return time.monotonic(), (sum(fields[:8]) - idle) / CLOCK_TICKS  # user .. steal; guest is inside user


def other_cores(before, after, our_cpu):
    """Cores' worth of CPU used by processes other than the point's own, over the point."""
    wall = after[0] - before[0]
    return max(0.0, (after[1] - before[1] - our_cpu) / wall) if wall > 0 else None


class Processes:
    """Every process the driver starts, so that all of them end, whatever happens (stop_all in finally)."""

    def __init__(self, log_dir, pin=None):
        self.log_dir = log_dir
        self.pin = pin or {}  # side ("sender" / "receiver") -> the CPUs its processes may run on
        self.running = []
        self.serial = 0

    def start(self, name, args, side, env=None):
        self.serial += 1
        path = os.path.join(self.log_dir, f"{self.serial:03d}-{name}.log")
        log = open(path, "w")
        cores = self.pin.get(side)
        # Set in the child before exec, so every thread the program makes inherits it.
        pin = (lambda: os.sched_setaffinity(0, cores)) if cores else None
        process = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                   env=env, close_fds=True, preexec_fn=pin)
        log.close()
        process.log_path = path
        process.name = name
        self.running.append(process)
        return process

    def exit_cpu(self, process, timeout):
        """Waits (bounded) until the process has exited, reads its CPU time while it is a zombie (the
        /proc entry is gone once reaped), then reaps it. Returns (exit code, CPU seconds)."""
        deadline = time.monotonic() + timeout
        while True:
            if process.returncode is not None:  # reaped already (by a poll): its CPU time is gone with it
                self.running.remove(process)
                raise BenchError(f"{process.name} exited ({process.returncode}) early: {tail(process.log_path)}")
            if os.waitid(os.P_PID, process.pid, os.WEXITED | os.WNOWAIT | os.WNOHANG) is not None:
                break
            if time.monotonic() > deadline:
                self.stop(process)
                raise BenchError(f"{process.name} did not finish within {timeout:.0f} s: {tail(process.log_path)}")
            time.sleep(0.02)
        cpu = cpu_seconds(process.pid)
        code = process.wait()
        self.running.remove(process)
        return code, cpu

    def stop(self, process, grace=10.0):
        """SIGTERM, then SIGKILL after the grace period."""
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=grace)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        if process in self.running:
            self.running.remove(process)
        return process.returncode

    def stop_all(self):
        for process in list(self.running):
            self.stop(process, grace=5.0)


def tail(path, lines=8):
    try:
        with open(path, errors="replace") as f:
            return " | ".join(line.rstrip() for line in f.readlines()[-lines:])
    except OSError:
        return "(no log)"


def wait_until(predicate, timeout, what, process=None):
    deadline = time.monotonic() + timeout
    while not predicate():
        if process is not None and process.poll() is not None:
            raise BenchError(f"{process.name} exited ({process.returncode}) before {what}: {tail(process.log_path)}")
        if time.monotonic() > deadline:
            raise BenchError(f"no {what} within {timeout:.0f} s")
        time.sleep(0.02)


def read_json_line(path):
    """The last line of a log that parses as a JSON object (our programs print one)."""
    with open(path, errors="replace") as f:
        for line in reversed(f.readlines()):
            line = line.strip()
            if line.startswith("{"):
                return json.loads(line)
    raise BenchError(f"no JSON result in {path}: {tail(path)}")


# ---------------------------------------------------------------- results

def throughput_result(size, byte_count, seconds, cpu_sender, cpu_receiver, other, note=""):
    gigabytes = byte_count / 1e9
    return {
        "gbps": byte_count * 8 / seconds / 1e9,
        "msgs_per_s": byte_count / size / seconds,
        "bytes": byte_count,
        "seconds": seconds,
        "cpu_sender_s": cpu_sender,
        "cpu_receiver_s": cpu_receiver,
        "cpu_sender_s_per_gb": cpu_sender / gigabytes if gigabytes > 0 else None,
        "cpu_receiver_s_per_gb": cpu_receiver / gigabytes if gigabytes > 0 else None,
        "other_cores": other,
        "note": note,
    }


def unavailable(reason):
    return {"na": reason}


# ---------------------------------------------------------------- iperf3, ZeroMQ, plain TCP

class Baselines:
    """iperf3, the ZeroMQ programs and the plain TCP ping-pong: each point a fresh server and client."""

    def __init__(self, processes, programs, duration, ucx_env=None, zmq_ipc_dir=None):
        self.processes = processes
        self.programs = programs  # name -> path or None
        self.duration = duration
        # UCX's transports for ucx_perftest: tcp on lo unless given (UCX_TLS=sm etc. for shared memory).
        self.ucx_env = UCX_ENV if ucx_env is None else ucx_env
        # The ZeroMQ programs over tcp://127.0.0.1:port, or over ipc:// sockets in this folder when given.
        self.zmq_ipc_dir = zmq_ipc_dir
        self.serial = 0
        # ucx_perftest's -E: poll (its default, what UCX users run), or sleep when both sides share one CPU,
        # where two polling processes would measure the scheduler's time slice instead of UCX.
        self.ucx_wait = "poll"

    def iperf3(self, size):
        if self.programs["iperf3"] is None:
            return unavailable("iperf3 not installed")
        (port,) = free_ports(1)
        server = self.processes.start(f"iperf3-server-{size}",
                                      [self.programs["iperf3"], "-s", "-B", "127.0.0.1", "-p", str(port), "-1"],
                                      "receiver")
        wait_until(lambda: listening(port), 10, "iperf3 server listening", server)
        server_cpu0 = cpu_seconds(server.pid)
        busy0 = machine_busy()
        client = self.processes.start(f"iperf3-client-{size}",
                                      [self.programs["iperf3"], "-c", "127.0.0.1", "-B", "127.0.0.1", "-p", str(port),
                                       "-l", str(size), "-t", str(self.duration), "-J"], "sender")
        code, client_cpu = self.processes.exit_cpu(client, self.duration + 30)
        _, server_cpu = self.processes.exit_cpu(server, 15)
        other = other_cores(busy0, machine_busy(), client_cpu + server_cpu - server_cpu0)
        try:
            with open(client.log_path) as f:
                report = json.load(f)
        except ValueError:
            raise BenchError(f"iperf3 client wrote no JSON report ({code}): {tail(client.log_path)}") from None
        if code != 0 or "error" in report:
            raise BenchError(f"iperf3 failed: {report.get('error', code)}")
        received = report["end"]["sum_received"]
        return throughput_result(size, received["bytes"], received["seconds"], client_cpu, server_cpu - server_cpu0,
                                 other)

    def _zmq_endpoint(self):
        """The ZeroMQ programs' endpoint options, and a predicate that tells when the binding side is there."""
        if self.zmq_ipc_dir is None:
            (port,) = free_ports(1)
            return ["--port", str(port)], lambda: listening(port)
        self.serial += 1
        path = os.path.join(self.zmq_ipc_dir, f"zmq-{os.getpid()}-{self.serial}.sock")
        if os.path.exists(path):
            os.unlink(path)
        return ["--endpoint", f"ipc://{path}"], lambda: os.path.exists(path)

    def zmq(self, size):
        program = self.programs["zmq-throughput"]
        if program is None:
            return unavailable("daqx-bench-zmq-throughput not built (libzmq3-dev missing)")
        endpoint, bound = self._zmq_endpoint()
        timeout = self.duration + 20
        pull = self.processes.start(f"zmq-pull-{size}", [program, "pull", *endpoint, "--timeout", str(timeout)],
                                    "receiver")
        wait_until(bound, 10, "ZeroMQ pull listening", pull)
        pull_cpu0 = cpu_seconds(pull.pid)
        busy0 = machine_busy()
        push = self.processes.start(f"zmq-push-{size}", [program, "push", *endpoint, "--size", str(size),
                                                         "--duration", str(self.duration), "--timeout", str(timeout)],
                                    "sender")
        push_code, push_cpu = self.processes.exit_cpu(push, timeout + 10)
        pull_code, pull_cpu = self.processes.exit_cpu(pull, 15)
        other = other_cores(busy0, machine_busy(), push_cpu + pull_cpu - pull_cpu0)
        if push_code != 0 or pull_code != 0:
            raise BenchError(f"zmq push/pull failed ({push_code}/{pull_code}): {tail(push.log_path)} {tail(pull.log_path)}")
        result = read_json_line(pull.log_path)
        return throughput_result(size, result["bytes"], result["seconds"], push_cpu, pull_cpu - pull_cpu0, other)

    def _ucx_perftest(self, test, size, iterations, warmup, timeout, rank=None):
        """One ucx_perftest run (server and client); returns the client's Final numbers and both CPUs. rank:
        the percentile its first latency column gives (-R; 50 unless given)."""
        program = self.programs["ucx_perftest"]
        if program is None:
            raise BenchError("ucx_perftest not installed (Debian's ucx-utils)")
        (port,) = free_ports(1)
        env = dict(os.environ, **self.ucx_env)
        server = self.processes.start(f"ucx-server-{test}-{size}", [program, "-p", str(port)], "receiver", env=env)
        wait_until(lambda: listening(port), 10, "ucx_perftest server listening", server)
        server_cpu0 = cpu_seconds(server.pid)
        busy0 = machine_busy()
        client = self.processes.start(f"ucx-client-{test}-{size}",
                                      [program, "127.0.0.1", "-p", str(port), "-t", test, "-s", str(size), "-n",
                                       str(iterations), "-w", str(warmup), "-f", "-E", self.ucx_wait]
                                      + (["-R", str(rank)] if rank is not None else []), "sender", env=env)
        try:
            code, client_cpu = self.processes.exit_cpu(client, timeout)
            _, server_cpu = self.processes.exit_cpu(server, 15)
        except BenchError:
            self.processes.stop(server, grace=2.0)  # a server left spinning would load every later point
            raise
        other = other_cores(busy0, machine_busy(), client_cpu + server_cpu - server_cpu0)
        final = None
        with open(client.log_path, errors="replace") as f:
            for line in f:  # with -f the one line of numbers after the header
                fields = line.replace("Final:", "").split()
                try:
                    numbers = [float(v) for v in fields]
                except ValueError:
                    continue
                if len(numbers) >= 8:
                    final = numbers
        if code != 0 or final is None or len(final) < 7:
            raise BenchError(f"ucx_perftest {test} failed ({code}): {tail(client.log_path)}")
        # iterations, overhead 50%ile / average / overall (us), bandwidth average / overall (MB/s), msg/s ...
        return final, client_cpu, server_cpu - server_cpu0, other

    def ucx(self, size, iterations=None):
        # Enough iterations for about the point's duration at a few GB/s (the test runs a count, not a time),
        # unless the caller knows better (shm_comparison.py calibrates with a short run).
        if iterations is None:
            iterations = int(min(5_000_000, max(2000, self.duration * 2e9 / size)))
        final, client_cpu, server_cpu, other = self._ucx_perftest("tag_bw", size, iterations, iterations // 20,
                                                                   self.duration * 20 + 60)
        seconds = final[0] * final[3] * 1e-6  # iterations x overall time per message
        return throughput_result(size, final[0] * size, seconds, client_cpu, server_cpu, other,
                                 note=f"ucx_perftest tag_bw, UCX_TLS={self.ucx_env.get('UCX_TLS')}")

    def round_trips(self, kind, size, count, warmup):
        if kind == "ucx":
            # ucx_perftest reports half a round trip (one-way latency): its percentile and average, doubled.
            final, _, _, other = self._ucx_perftest("tag_lat", size, count, warmup, 60 + count * 0.005)
            return {"median_us": 2 * final[1], "p99_us": None, "min_us": None, "max_us": None, "samples": final[0],
                    "other_cores": other}
        program = self.programs["tcp-pingpong" if kind == "tcp" else "zmq-pingpong"]
        if program is None:
            return unavailable("program not built")
        server_role, client_role = ("server", "client") if kind == "tcp" else ("rep", "req")
        if kind == "tcp":
            (port,) = free_ports(1)
            endpoint, bound = ["--port", str(port)], lambda: listening(port)
        else:
            endpoint, bound = self._zmq_endpoint()
        timeout = 30 + count * 0.005
        server_args = [program, server_role, *endpoint, "--timeout", str(timeout)]
        if kind == "tcp":
            server_args += ["--size", str(size)]
        server = self.processes.start(f"{kind}-{server_role}-{size}", server_args, "receiver")
        wait_until(bound, 10, f"{kind} {server_role} listening", server)
        server_cpu0 = cpu_seconds(server.pid)
        busy0 = machine_busy()
        client = self.processes.start(f"{kind}-{client_role}-{size}",
                                      [program, client_role, *endpoint, "--size", str(size), "--count",
                                       str(count), "--warmup", str(warmup), "--timeout", str(timeout)], "sender")
        code, client_cpu = self.processes.exit_cpu(client, timeout + 10)
        _, server_cpu = self.processes.exit_cpu(server, 15)
        other = other_cores(busy0, machine_busy(), client_cpu + server_cpu - server_cpu0)
        if code != 0:
            raise BenchError(f"{kind} ping-pong failed ({code}): {tail(client.log_path)}")
        result = read_json_line(client.log_path)
        return {"median_us": result["rtt_median_us"], "p99_us": result["rtt_p99_us"], "min_us": result["rtt_min_us"],
                "max_us": result["rtt_max_us"], "samples": result["samples"], "other_cores": other}


# ---------------------------------------------------------------- daqx

class Executive:
    """One daqx-executive process playing one context, driven through its HTTP JSON API."""

    def __init__(self, processes, binary, env, config, url, name, side):
        self.url = url
        self.process = processes.start(name, [binary, "--config", config, "--context", url], side, env=env)

    def wait_ready(self, timeout=20):
        def ready():
            with open(self.process.log_path, errors="replace") as f:
                return " ready " in f.read()
        wait_until(ready, timeout, f"'ready' from the executive of {self.url}", self.process)

    def request(self, path, body=None, timeout=30):
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.url + path, data=data, method="GET" if body is None else "POST",
                                         headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=timeout) as answer:
                return json.loads(answer.read())
        except urllib.error.HTTPError as e:
            text = e.read().decode(errors="replace")
            raise BenchError(f"{self.url}{path}: HTTP {e.code}: {text}") from None
        except (urllib.error.URLError, OSError) as e:
            raise BenchError(f"{self.url}{path}: {e}: {tail(self.process.log_path)}") from None

    def transition(self, command):
        answer = self.request("/api/transition", {"command": command})
        if not answer.get("ok", False):
            raise BenchError(f"{self.url} refused {command}: {answer}")

    def metrics(self, tid):
        application = self.request(f"/api/applications/{tid}")
        if application.get("state") == "Failed":
            raise BenchError(f"application {tid} failed: {application.get('reason')}")
        return {m["name"]: m["value"] for m in application.get("metrics", [])}

    def transports(self):
        return self.request("/api/transports")

    def cpu(self):
        return cpu_seconds(self.process.pid)


def bring_up(first, second):
    """Configure both, then enable both, the receiving side first each time (it must be ready before
    frames come). One executive playing both roles (--self-check) gets each command once."""
    executives = [first] if first is second else [first, second]
    for command in ("configure", "enable"):
        for e in executives:
            e.transition(command)


def checked_xml(partition, executive=None):
    """The partition's XML once it is checked against the listing of executive (default: params.find_executive());
    what the executive would refuse is a BenchError, like any other point that cannot be measured."""
    try:
        partition.check_against_executive(executive)
    except PartitionError as error:
        raise BenchError(f"partition {partition.name}: {error}") from None
    return partition.xml()


def two_context_partition(name, ports, endpoint_properties, first_app, second_app, modules, protocol="tcp",
                          transport_module=PTTCP, policy=(), executive=None):
    """A partition of two contexts on 127.0.0.1, each with one application (class, tid, properties);
    with the transport module among the modules, an endpoint of that protocol on network 'data' each.
    policy: the partition's <Policy> rules (ThreadRule), if any."""
    context_ports, endpoint_ports = ports[:2], ports[2:]
    transport = transport_module in modules
    partition = Partition(name, comment=["Generated by python/daqx/bench.py."], policy=list(policy))
    for index, (cls, tid, properties) in enumerate((first_app, second_app)):
        endpoint = Endpoint(protocol, "127.0.0.1", endpoint_ports[index], "data", endpoint_properties) \
            if transport else None
        partition.contexts.append(Context(
            f"http://127.0.0.1:{context_ports[index]}", endpoint, list(modules),
            [Application(cls, tid, index, "data" if transport else None, properties)]))
    return checked_xml(partition, executive)


def one_context_partition(name, port, applications, executive=None):
    """Every application in one executive, frames handed over directly: used to check the driving code
    without a transport (--self-check)."""
    instances = {}
    context = Context(f"http://127.0.0.1:{port}", modules=[NTON])
    for cls, tid, properties in applications:
        instance = instances[cls] = instances.get(cls, -1) + 1  # class + instance is unique in a partition
        context.applications.append(Application(cls, tid, instance, None, properties))
    return checked_xml(Partition(name, [context], comment=["Generated by python/daqx/bench.py."]), executive)


class Daqx:
    SENDER, RECEIVER, PING, PONG = 11, 21, 12, 22
    WARM_SECONDS = 0.5  # the first half second (connection, slow start, pools warming) is not measured
    # The sender goes on this long after the window: an HTTP sample can take a while on a loaded machine.
    TAIL_SECONDS = 2.0

    def __init__(self, processes, build, out, duration, window, ack_every, pack_size, transport=PTTCP,
                 protocol="tcp", properties=None):
        """transport, protocol: the module and the Endpoint protocol of the pair's data network (pttcp's "tcp"
        unless given); properties: more Endpoint properties, beside the mode (and pttcp's packSize)."""
        self.processes = processes
        self.transport = transport
        self.protocol = protocol
        self.properties = dict(properties or {})
        self.policy = []  # <Policy> rules for its partitions (shm_comparison.py: the pools in shared memory)
        self.binary = os.path.join(build, "executive", "daqx-executive")
        self.modules = os.path.join(build, "modules")
        self.config_dir = os.path.join(out, "partitions")
        os.makedirs(self.config_dir, exist_ok=True)
        self.duration = duration
        self.window = window
        self.ack_every = ack_every
        self.rtt_mode = "latency"  # transport mode of the ping-pong partitions
        self.prefix = ""  # of its partitions' and logs' names: "base-" for the --base-build tree
        self.pack_size = pack_size
        self.env = dict(os.environ, DAQX_MODULE_PATH=self.modules)
        self.missing = None
        for needed in (self.binary, os.path.join(self.modules, NTON)):
            if not os.path.exists(needed):
                self.missing = f"{os.path.basename(needed)} not built"
        if self.missing is None and not os.path.exists(os.path.join(self.modules, transport)):
            self.missing = f"{transport} not built in {self.modules}"

    def endpoint_properties(self, mode):
        properties = {"mode": mode}
        if mode == "throughput" and self.pack_size:
            properties["packSize"] = self.pack_size
        properties.update(self.properties)
        return properties

    def start(self, name, text, urls):
        path = os.path.join(self.config_dir, f"{name}.xml")
        with open(path, "w") as f:
            f.write(text)
        # The first context plays the sending side (Sender, ping), the second the receiving one.
        executives = [Executive(self.processes, self.binary, self.env, path, url, f"{name}-{i}",
                                ("sender", "receiver")[i])
                      for i, url in enumerate(urls)]
        for e in executives:
            e.wait_ready()
        return executives

    def shut(self, executives):
        """Stop and halt (receivers last), then SIGTERM; a clean exit is expected but not required here."""
        for e in reversed(executives):
            for command in ("stop", "halt"):
                try:
                    e.transition(command)
                except BenchError:
                    pass  # the executive's own shutdown halts whatever is left
        for e in executives:
            self.processes.stop(e.process, grace=15)

    def stream_parameters(self, size, pattern, batch):
        """The Sender's and the Receiver's parameters of a stream; batch > 1: the Sender sends batches of that many
        frames (send_batch) and the Receiver takes them in batches (bind_batch)."""
        sender = {"frameSize": size, "duration": self.duration + self.WARM_SECONDS + self.TAIL_SECONDS,
                  "window": self.window, "pattern": "true" if pattern else "false", "receivers": self.RECEIVER}
        receiver = {}
        if self.ack_every:
            sender["ackEvery"] = self.ack_every
        if batch > 1:
            sender["batch"] = batch
            receiver["batch"] = "true"
        return sender, receiver

    def throughput(self, mode, size, pattern=False, batch=0):
        if self.missing:
            return unavailable(self.missing)
        ports = free_ports(4)
        sender, receiver = self.stream_parameters(size, pattern, batch)
        text = two_context_partition(f"bench-{self.protocol}", ports, self.endpoint_properties(mode),
                                     ("nton::Sender", self.SENDER, sender), ("nton::Receiver", self.RECEIVER, receiver),
                                     [self.transport, NTON], self.protocol, self.transport, self.policy,
                                     self.binary)
        urls = [f"http://127.0.0.1:{p}" for p in ports[:2]]
        name = f"{self.prefix}throughput-{mode}{'-pattern' if pattern else ''}{f'-batch{batch}' if batch > 1 else ''}"
        executives = self.start(f"{name}-{size}", text, urls)
        try:
            return self.measure_stream(executives[0], executives[1], size)
        finally:
            self.shut(executives)

    def measure_stream(self, sender, receiver, size):
        """Receiver first, then sender (configure and enable); the rate is taken over a steady window of
        `duration` seconds that starts WARM_SECONDS after enable and ends before the sender stops."""
        asked = time.monotonic()
        bring_up(receiver, sender)
        enabled = time.monotonic()

        def sample():
            before = time.monotonic()
            metrics = receiver.metrics(self.RECEIVER)
            after = time.monotonic()
            return {"t": (before + after) / 2, "bytes": metrics["bytes_received"],
                    "cpu_sender": sender.cpu(), "cpu_receiver": 0.0 if receiver is sender else receiver.cpu(),
                    "busy": machine_busy()}

        time.sleep(max(0.0, enabled + self.WARM_SECONDS - time.monotonic()))
        first = sample()
        time.sleep(max(0.0, first["t"] + self.duration - time.monotonic()))
        second = sample()
        sending = sender.metrics(self.SENDER)
        if sending.get("done") == 1:
            raise BenchError(
                f"the sender stopped before the end of the measuring window (configure+enable took "
                f"{enabled - asked:.2f} s, samples at {first['t'] - enabled:.2f} and {second['t'] - enabled:.2f} s "
                f"after enable; sender run_seconds {sending.get('run_seconds')}, send_errors "
                f"{sending.get('send_errors')}, frames_sent {sending.get('frames_sent')})")
        wait_until(lambda: sender.metrics(self.SENDER).get("done") == 1, self.duration + 30, "end of the sender's run")
        sent = sender.metrics(self.SENDER)
        received = receiver.metrics(self.RECEIVER)
        notes = []
        for name in ("send_errors",):
            if sent.get(name):
                notes.append(f"sender {name}={sent[name]:.0f}")
        for name in ("pattern_errors", "sequence_errors", "malformed_frames", "send_errors"):
            if received.get(name):
                notes.append(f"receiver {name}={received[name]:.0f}")
        if sent.get("frames_sent") != received.get("frames_received"):
            notes.append(f"frames sent {sent.get('frames_sent'):.0f} != received {received.get('frames_received'):.0f}")
        result = throughput_result(size, second["bytes"] - first["bytes"], second["t"] - first["t"],
                                   second["cpu_sender"] - first["cpu_sender"],
                                   second["cpu_receiver"] - first["cpu_receiver"],
                                   other_cores(first["busy"], second["busy"],
                                               second["cpu_sender"] + second["cpu_receiver"] - first["cpu_sender"]
                                               - first["cpu_receiver"]),
                                   "; ".join(notes))
        run_seconds = sent.get("run_seconds") or 0
        result["run_mean_gbps"] = received["bytes_received"] * 8 / run_seconds / 1e9 if run_seconds else None
        result["would_blocks"] = sent.get("sends_deferred")
        result["pool_exhausted"] = sent.get("pool_exhausted")
        # ptshm counts the frames it had to copy (from a pool not in shared memory): 0 is zero copy, proven.
        copied = [m["value"] for t in sender.transports() for m in t.get("metrics", [])
                  if m.get("name") == "frames_copied" and not m.get("labels")]  # the transport-wide one
        result["frames_copied"] = sum(copied) if copied else None
        if copied and sum(copied):
            result["note"] = "; ".join(filter(None, [result["note"], f"frames_copied={sum(copied):.0f}"]))
        return result

    def round_trips(self, size, count, warmup):
        if self.missing:
            return unavailable(self.missing)
        ports = free_ports(4)
        ping = {"role": "ping", "peer": self.PONG, "frameSize": size, "count": count, "warmup": warmup}
        text = two_context_partition(f"bench-{self.protocol}-pingpong", ports,
                                     self.endpoint_properties(self.rtt_mode), ("nton::PingPong", self.PING, ping),
                                     ("nton::PingPong", self.PONG, {"role": "pong"}), [self.transport, NTON],
                                     self.protocol, self.transport, self.policy, self.binary)
        urls = [f"http://127.0.0.1:{p}" for p in ports[:2]]
        executives = self.start(f"{self.prefix}pingpong-{size}", text, urls)
        try:
            return self.measure_round_trips(executives[0], executives[1], count)
        finally:
            self.shut(executives)

    def measure_round_trips(self, ping, pong, count):
        executives = [ping] if ping is pong else [ping, pong]
        cpu0, busy0 = sum(e.cpu() for e in executives), machine_busy()
        bring_up(pong, ping)
        # All samples in, not just `done`: a previous run's `done` may still show until enable has reached the
        # dispatch thread (the self-check reuses its executive).
        def finished():
            m = ping.metrics(self.PING)
            return m.get("done") == 1 and m.get("samples", 0) >= count
        wait_until(finished, 30 + count * 0.005, "end of the ping's run")
        other = other_cores(busy0, machine_busy(), sum(e.cpu() for e in executives) - cpu0)
        m = ping.metrics(self.PING)
        return {"median_us": m["rtt_median_us"], "p99_us": m["rtt_p99_us"], "min_us": m["rtt_min_us"],
                "max_us": m["rtt_max_us"], "samples": m["samples"], "other_cores": other}

    def local_stream(self, size, batch=0):
        """nton::Sender -> nton::Receiver in ONE executive, frames handed over without a transport: the
        application side's own rate on this machine, beside which a transport's rate can be read."""
        for needed in (self.binary, os.path.join(self.modules, NTON)):
            if not os.path.exists(needed):
                return unavailable(f"{os.path.basename(needed)} not built")
        (port,) = free_ports(1)
        sender, receiver = self.stream_parameters(size, False, batch)
        text = one_context_partition("bench-local", port, [("nton::Receiver", self.RECEIVER, receiver),
                                                          ("nton::Sender", self.SENDER, sender)], self.binary)
        name = f"{self.prefix}local{f'-batch{batch}' if batch > 1 else ''}-{size}"
        (executive,) = self.start(name, text, [f"http://127.0.0.1:{port}"])
        try:
            return self.measure_stream(executive, executive, size)
        finally:
            self.shut([executive])

    def self_check(self, out):
        """Drives the nton applications in ONE executive (no transport) through the same code paths, so the
        HTTP driving can be checked before libdaqx_pttcp.so exists. Prints what it measured."""
        (port,) = free_ports(1)
        url = f"http://127.0.0.1:{port}"
        text = one_context_partition("bench-self-check", port, [
            ("nton::Receiver", self.RECEIVER, {}),
            ("nton::Sender", self.SENDER, {"frameSize": 65536, "duration": self.duration + 1, "window": self.window,
                                           "pattern": "false", "receivers": self.RECEIVER}),
            ("nton::PingPong", self.PONG, {"role": "pong"}),
            ("nton::PingPong", self.PING, {"role": "ping", "peer": self.PONG, "frameSize": 64, "count": 10000})],
            self.binary)
        (executive,) = self.start("self-check", text, [url])
        try:
            stream = self.measure_stream(executive, executive, 65536)
            executive.transition("stop")  # context-wide commands: the whole executive goes round again
            executive.transition("halt")
            trips = self.measure_round_trips(executive, executive, 10000)
        finally:
            self.shut([executive])
        print(f"self-check (one executive, no transport): 64 KiB frames {stream['gbps']:.2f} Gb/s "
              f"({stream['msgs_per_s']:.0f} frames/s), CPU {stream['cpu_sender_s']:.2f} s over "
              f"{stream['seconds']:.2f} s; 64 B ping-pong median {trips['median_us']:.2f} us, "
              f"p99 {trips['p99_us']:.2f} us")


# ---------------------------------------------------------------- tables, CSV, plot

def cell(value, digits=2):
    if value is None:
        return "n/a"
    if value >= 1e6:
        return f"{value / 1e6:.2f}M"
    if value >= 1e4:
        return f"{value / 1e3:.1f}k"
    return f"{value:.{digits}f}"


def ratio(a, b):
    if a is None or b is None or not b:
        return None
    return a / b


def get(results, system, size, key):
    r = results.get((system, size))
    if r is None or "na" in r:
        return None
    return r.get(key)


def print_table(groups, rows):
    """groups: [(title, [column headers])]; each title is centred over its columns, so a wide table stays
    readable (sizes as rows, one group per quantity)."""
    headers = [h for _, columns in groups for h in columns]
    widths = [max(len(h), *(len(str(r[i])) for r in rows)) for i, h in enumerate(headers)]
    titles, index = [], 0
    for title, columns in groups:
        span = sum(widths[index:index + len(columns)]) + 2 * (len(columns) - 1)
        titles.append(title.center(span))
        index += len(columns)
    print(" | ".join(titles))
    print(" | ".join(_join(h, widths, groups, i) for i, h in enumerate(_split(headers, groups))))
    print("-" * len(" | ".join(titles)))
    for r in rows:
        print(" | ".join(_join(c, widths, groups, i) for i, c in enumerate(_split(r, groups))))


def _split(cells, groups):
    parts, index = [], 0
    for _, columns in groups:
        parts.append(cells[index:index + len(columns)])
        index += len(columns)
    return parts


def _join(cells, widths, groups, group):
    first = sum(len(columns) for _, columns in groups[:group])
    return "  ".join(str(c).rjust(widths[first + i]) for i, c in enumerate(cells))


def other_load_cell(results, systems, size):
    loads = [get(results, s, size, "other_cores") for s in systems]
    loads = [v for v in loads if v is not None]
    return f"{max(loads):.2f}" if loads else "n/a"


def print_notes(text):
    print(textwrap.fill(text, width=118, initial_indent="notes: ", subsequent_indent="       "))


def print_failures(results):
    for (system, size), r in sorted(results.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        if "na" in r:
            print(f"  n/a {system} {size_name(size)}: {r['na']}")
        elif r.get("note"):
            print(f"  note {system} {size_name(size)}: {r['note']}")


def pyplot(missing=None):
    """matplotlib's pyplot and ticker, drawing into files; (None, None) when matplotlib is missing, said on
    standard output as "no <missing>" when missing names what is then not drawn."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        import matplotlib.ticker
        return plt, matplotlib.ticker
    except ImportError:
        if missing:
            print(f"matplotlib is missing (Debian: python3-matplotlib, run with /usr/bin/python3): no {missing}")
        return None, None


def write_csv(path, results, fields):
    with open(path, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["size_bytes", "system"] + fields + ["note"])
        for (system, size), r in sorted(results.items(), key=lambda kv: (kv[0][1], kv[0][0])):
            values = ["" if r.get(k) is None else (f"{r[k]:.6g}" if isinstance(r[k], float) else r[k]) for k in fields]
            writer.writerow([size, system] + values + [r.get("na", r.get("note", ""))])


# ---------------------------------------------------------------- points

def clock(seconds):
    """12:05 (minutes:seconds), 1:02:05 past an hour."""
    seconds = int(round(seconds))
    hours, rest = divmod(seconds, 3600)
    return f"{hours}:{rest // 60:02d}:{rest % 60:02d}" if hours else f"{rest // 60}:{rest % 60:02d}"


class Progress:
    """How far a driver is through its points, at the start of each point's line: the point's number of the
    total, the time since the first began and, once one is done, an estimate of the time left (the mean time of
    the points done so far times the points left):  [ 7/40 2:31 elapsed, about 11:52 left]"""

    def __init__(self, total):
        self.total = max(1, total)
        self.done = 0
        self.started = time.monotonic()

    def next_point(self):
        """The prefix for the point about to run, which it counts."""
        elapsed = time.monotonic() - self.started
        width = len(str(self.total))
        text = f"[{min(self.done + 1, self.total):>{width}}/{self.total} {clock(elapsed)} elapsed"
        if self.done:
            text += f", about {clock(elapsed / self.done * max(0, self.total - self.done))} left"
        self.done += 1
        # One width for every line, so that what follows the prefix stays in its columns.
        return (text + "]").ljust(len(f"[{self.total}/{self.total} 00:00 elapsed, about 00:00 left]"))


def point_prefix(progress):
    """What a point's line starts with: the progress through the run when there is one."""
    return progress.next_point() + " " if progress is not None else ""


class BuildTree:
    """A daqx build tree as a driver runs it: its executive, its module folder, and the environment that points
    the executive at that folder."""

    def __init__(self, build):
        self.build = build
        self.binary = os.path.join(build, "executive", "daqx-executive")
        self.modules = os.path.join(build, "modules")
        self.env = dict(os.environ, DAQX_MODULE_PATH=self.modules)

    def missing(self, modules):
        """Why it cannot run these modules ("libdaqx_evb.so not built in ..."), or None."""
        for path in [self.binary] + [os.path.join(self.modules, m) for m in modules]:
            if not os.path.exists(path):
                return f"{os.path.basename(path)} not built in {os.path.dirname(path)}"
        return None


def attempt(what, run, progress=None, summary=lambda r: "", width=40):
    """Runs one point (run() returns its result) and prints one line for it: the summary of the result, or n/a
    and why. A point that fails loses only itself: its result is {"na": reason}."""
    print(f"  {point_prefix(progress)}{what:>{width}} ...", end="", flush=True)
    started = time.monotonic()
    try:
        r = run()
    except BenchError as e:
        r = {"na": str(e)}
    except (OSError, ValueError, KeyError, TypeError, ZeroDivisionError) as e:  # this point only is lost
        r = {"na": f"{type(e).__name__}: {e}"}
    took = time.monotonic() - started
    if "na" in r:
        print(f" n/a ({took:.0f} s): {r['na']}")
    else:
        print(f" {summary(r)} ({took:.0f} s){'  ! ' + r['note'] if r.get('note') else ''}")
    return r


def conditions_line(start_load, at_start=False):
    """The machine as a benchmark's header gives it: CPUs, load at the start (and now), kernel, CPU model."""
    c = machine_conditions()
    # The end value counts the benchmark's own runnable threads too; 'other' in the tables is the outside load.
    end = "" if at_start else f", at end {load_average()} (ours included)"
    return (f"machine: nproc {c['nproc']} (usable {c['usable_cpus']}), load average at start {start_load}{end}; "
            f"kernel {c['kernel']}; cpu {c['cpu']}")


def attempt_point(what, size, attempt, run, progress=None):
    print(f"  {point_prefix(progress)}{what:>34} {size_name(size):>8} #{attempt + 1} ...", end="", flush=True)
    try:
        r = run()
    except BenchError as e:
        r = unavailable(str(e))
    except (OSError, ValueError, KeyError, TypeError) as e:  # an unexpected answer: this point only is lost
        r = unavailable(f"{type(e).__name__}: {e}")
    if "na" in r:
        print(f" n/a: {r['na']}")
    elif "gbps" in r:
        print(f" {r['gbps']:.2f} Gb/s, {r['msgs_per_s']:.0f} msg/s, other load {r['other_cores']:.2f} cores")
    else:
        p99 = "n/a" if r["p99_us"] is None else f"{r['p99_us']:.1f} us"
        print(f" median {r['median_us']:.1f} us, p99 {p99}, other load {r['other_cores']:.2f} cores")
    return r


def median_run(tries, key, unit=1):
    """The run whose `key` is the median of the successful repeats (the lower middle one for an even count),
    with every repeat's value (in units of `unit`) kept for the CSV."""
    good = sorted((r for r in tries if "na" not in r), key=lambda r: r[key])
    if not good:
        return tries[-1]
    chosen = dict(good[(len(good) - 1) // 2])
    chosen["repeats"] = " ".join("n/a" if "na" in r else f"{r[key] / unit:.4g}" for r in tries)
    failed = [r["na"] for r in tries if "na" in r]
    if failed:
        chosen["note"] = "; ".join(filter(None, [chosen.get("note"), f"{len(failed)} repeat(s) failed: {failed[0]}"]))
    return chosen


def other_load_summary(results):
    loads = [(r["other_cores"], system, size) for (system, size), r in results.items()
             if "na" not in r and r.get("other_cores") is not None]
    if not loads:
        return
    loads.sort()
    worst = loads[-1]
    print(f"other processes' CPU during the points (cores): median {loads[len(loads) // 2][0]:.2f}, "
          f"max {worst[0]:.2f} ({worst[1]} {size_name(worst[2])})"
          + ("  <- the machine was not quiet: compare within a row, not across runs" if worst[0] > 0.25 else ""))


def parse_pin(text):
    """"0/1" or "0-1/0,1": a CPU list for each side."""
    def cpus(part):
        result = set()
        for item in part.split(","):
            low, _, high = item.partition("-")
            result.update(range(int(low), int(high or low) + 1))
        return result
    sender, _, receiver = text.partition("/")
    return {"sender": cpus(sender), "receiver": cpus(receiver or sender)}


def find_programs(build):
    def built(name):
        path = os.path.join(build, "bench", "tcp", name)
        return path if os.access(path, os.X_OK) else None

    iperf3 = None
    for directory in os.environ.get("PATH", "").split(os.pathsep) + ["/usr/bin"]:
        candidate = os.path.join(directory, "iperf3")
        if os.access(candidate, os.X_OK):
            iperf3 = candidate
            break
    ucx = "/usr/bin/ucx_perftest" if os.access("/usr/bin/ucx_perftest", os.X_OK) else None
    return {"iperf3": iperf3, "ucx_perftest": ucx, "zmq-throughput": built("daqx-bench-zmq-throughput"),
            "zmq-pingpong": built("daqx-bench-zmq-pingpong"), "tcp-pingpong": built("daqx-bench-tcp-pingpong")}


def round_trip_counts(size, quick):
    """Enough round trips for a stable p99 (>= 2000, so the p99 is the 20th worst or later), bounded in time."""
    count = 20000 if size <= 4096 else 10000 if size <= 65536 else 2000
    warmup = 1000 if size <= 65536 else 200
    if quick:
        count, warmup = max(2000, count // 4), max(100, warmup // 4)
    return count, warmup
