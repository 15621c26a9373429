#!/usr/bin/env python3
"""Launch scale: what bringing up, driving and watching a partition costs as it grows. For each point it runs
`daqx-launch --drive` on a generated event builder (1 EvM + N RUs + N BUs over pttcp at a low trigger rate) and
reads, from the launcher's own lines and /proc:
  up        launch to every context answering on its control port
  enabled   launch to every context Enabled (the "configured and enabled" line)
  configure, enable, stop, halt   each transition over the whole partition, as the launcher reports it
  round     one dashboard round: the launcher's live page asked for /api/partition (median of 5)
  threads   the most threads the launcher had at any sample (every 0.1 s)
Points: C = 9, 33, 65, 129, 257 contexts on this machine (local engine), and 2, 4, 8, 16 hosts over ssh, each a
network namespace with its own sshd (the tests' harness, daqx-test-ssh-hosts), one EvM + N RUs + N BUs with N the
number of hosts, placed round-robin. A third kind of point: 64 contexts whose configure takes a second each (the
nton Receiver's configureDelay), configured as a partition. A benchmark, never a test.

Usage: python3 bench/launch_scale.py [--build BUILD] [--out DIR] [--sizes 9,33,65,129,257] [--hosts 2,4,8,16]
                                     [--slow-configures 64] [--repeat N] [--quick]
Goals it prints against (issue 35): 257 contexts Enabled within 10 s, stop + halt within 5 s, the launcher's
threads 32 or fewer at any C, 64 one-second configures within 3 s.
"""

import argparse
import csv
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import threading
import time
import urllib.request

sys.dont_write_bytecode = True  # importing the package would leave __pycache__ in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
from daqx.bench import (  # noqa: E402  (the repository's package, found from this file)
    BenchError, BuildTree, Progress, attempt, conditions_line, load_average, print_notes, print_table, pyplot, tail)
from daqx.machine import PortPicker, ephemeral_range, limits_line  # noqa: E402
from daqx.partition import Application, Context, Endpoint, Partition  # noqa: E402

REPOSITORY = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
GENERATOR = os.path.join(REPOSITORY, "apps", "evb", "tools", "evb_partition.py")
DEFAULT_SIZES = [9, 33, 65, 129, 257]
QUICK_SIZES = [9, 33, 65]
DEFAULT_HOSTS = [2, 4, 8, 16]
# A low rate and small fragments: this measures how many contexts, not how fast they build. Unit timeouts are
# generous: hundreds of executives on two busy cores answer heartbeats late.
EVB_OPTIONS = ["--trigger-rate", "200", "--fragment-size", "256", "--bu-timeout", "60", "--ru-timeout", "60",
               "--evm-timeout", "60"]
# How long the run stays enabled before the launcher is asked to end it (SIGTERM: stop, summary, halt, exit).
ENABLED_SECONDS = 3.0
GOALS = {"enabled_257": 10.0, "stop_halt": 5.0, "threads": 32, "slow_configures": 3.0}

TRANSITION = re.compile(r"daqx-launch: (configure|enable|stop|halt)\b.*?(\d+)/(\d+) contexts? .*?in ([0-9.]+) s")
UP = re.compile(r"daqx-launch: (\d+) contexts of partition .* up through")
DASHBOARD = re.compile(r"daqx-launch: dashboard: (http://\S+)/partition")
FIGURES = [("up", "up s"), ("enabled", "enabled s"), ("configure", "configure s"), ("enable", "enable s"),
           ("stop", "stop s"), ("halt", "halt s"), ("stop_halt", "stop+halt s"), ("round", "round ms"),
           ("threads", "threads")]


class Launcher:
    """daqx-launch --drive, its stdout read line by line as it comes (each line with the time it came) and its
    thread count sampled, until it exits."""

    def __init__(self, args, log_path, env):
        self.log = open(log_path, "w")
        self.started = time.monotonic()
        self.process = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                        env=env, text=True, bufsize=1)
        self.lines = []  # (seconds since start, line)
        self.threads = 0
        self.lock = threading.Lock()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.sampler = threading.Thread(target=self._sample, daemon=True)
        self.reader.start()
        self.sampler.start()

    def _read(self):
        for line in self.process.stdout:
            with self.lock:
                self.lines.append((time.monotonic() - self.started, line.rstrip("\n")))
            self.log.write(line)
            self.log.flush()

    def _sample(self):
        while self.process.poll() is None:
            try:
                with open(f"/proc/{self.process.pid}/status") as f:
                    for line in f:
                        if line.startswith("Threads:"):
                            self.threads = max(self.threads, int(line.split()[1]))
            except OSError:
                pass
            time.sleep(0.1)

    def wait_for(self, pattern, timeout):
        """(time, match) of the first line matching `pattern`; BenchError when the launcher ends first or time
        runs out."""
        deadline = time.monotonic() + timeout
        while True:
            with self.lock:
                for when, line in self.lines:
                    found = pattern.search(line)
                    if found:
                        return when, found
            if self.process.poll() is not None and not self.reader.is_alive():
                raise BenchError(f"the launcher exited ({self.process.returncode}) before '{pattern.pattern}': "
                                 f"{tail(self.log.name, 6)}")
            if time.monotonic() > deadline:
                raise BenchError(f"no '{pattern.pattern}' within {timeout:.0f} s: {tail(self.log.name, 6)}")
            time.sleep(0.05)

    def transitions(self):
        """{command: seconds} from the launcher's per-transition lines ("configure: 129/129 contexts ... in 0.4 s");
        a transition that did not complete on every context raises BenchError."""
        result = {}
        with self.lock:
            for _, line in self.lines:
                found = TRANSITION.search(line)
                if found:
                    command, done, total, seconds = found.group(1), int(found.group(2)), int(found.group(3)), float(found.group(4))
                    if done != total:
                        raise BenchError(f"{command}: {done} of {total} contexts: {line}")
                    result[command] = seconds
        return result

    def end(self, timeout):
        """SIGTERM (the run ends: stop, summary, halt, every executive stopped); its exit code."""
        self.process.send_signal(signal.SIGTERM)
        try:
            code = self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise BenchError(f"the launcher did not end within {timeout:.0f} s: {tail(self.log.name, 6)}") from None
        self.reader.join(timeout=5)
        self.log.close()
        return code

    def kill(self):
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        self.log.close()


def dashboard_round(url, rounds=5):
    """Median milliseconds of GET /api/partition on the launcher's live page."""
    times = []
    for _ in range(rounds):
        started = time.monotonic()
        with urllib.request.urlopen(url + "/api/partition", timeout=30) as reply:
            json.loads(reply.read())
        times.append((time.monotonic() - started) * 1000)
    return statistics.median(times)


def drive(setup, partition_path, label, extra_args=(), ready_timeout=300):
    """One launcher run of a partition: launch, drive to Enabled, watch a few seconds, end; the figures."""
    logs = os.path.join(setup.out, "logs", label)
    os.makedirs(logs, exist_ok=True)
    args = [setup.launcher, "--config", partition_path, "--drive", "--log-dir", logs, "--dashboard", "127.0.0.1:0",
            "--ready-timeout", str(ready_timeout)] + list(extra_args)
    launcher = Launcher(args, os.path.join(logs, "launcher.log"), setup.tree.env)
    try:
        up, _ = launcher.wait_for(UP, ready_timeout + 30)
        _, dashboard = launcher.wait_for(DASHBOARD, 5)
        enabled, _ = launcher.wait_for(re.compile(r"daqx-launch: configured and enabled"), ready_timeout + 120)
        time.sleep(1.0)  # the live page has had its first round
        round_ms = dashboard_round(dashboard.group(1))
        time.sleep(max(0.0, ENABLED_SECONDS - 1.0))
        code = launcher.end(timeout=300)
    except BaseException:
        launcher.kill()
        raise
    if code != 0:
        raise BenchError(f"the launcher exited with {code}: {tail(launcher.log.name, 6)}")
    result = {"up": up, "enabled": enabled, "round": round_ms, "threads": launcher.threads}
    result.update(launcher.transitions())
    if "stop" in result and "halt" in result:
        result["stop_halt"] = result["stop"] + result["halt"]
    return result


class Setup:
    def __init__(self, args):
        self.tree = BuildTree(args.build)
        self.launcher = os.path.join(args.build, "executive", "daqx-launch")
        self.ssh_hosts = os.path.join(args.build, "tests", "daqx-test-ssh-hosts")
        self.out = args.out
        self.ports = PortPicker()
        self.ephemeral_low = ephemeral_range()[0]
        self.serial = 0
        self.env = dict(self.tree.env, DAQX_EXECUTIVE=self.tree.binary)

    def generate(self, name, rus, bus, hosts=None):
        """The generator's event builder, its ports (control and data, two per context) below the ephemeral
        range on each host."""
        self.serial += 1
        path = os.path.join(self.out, "partitions", f"{self.serial:02d}-{name}.xml")
        os.makedirs(os.path.dirname(path), exist_ok=True)
        args = [sys.executable, GENERATOR, "--rus", str(rus), "--bus", str(bus), "--name", name, "-o", path] + EVB_OPTIONS
        if hosts:
            args += ["--hosts", ",".join(hosts)]
        else:
            # Each point on ports of its own (the generator's step is 10 per context), below the ephemeral range:
            # a point does not meet the connections of the one before in TIME_WAIT.
            span = 10 * (1 + rus + bus) + 10
            slots = max(1, (self.ephemeral_low - 10000) // span)
            args += ["--base-port", str(10000 + (self.serial % slots) * span)]
        made = subprocess.run(args, capture_output=True, text=True, env=self.env, timeout=120)
        if made.returncode != 0:
            raise BenchError(f"the generator refused: {made.stderr.strip()[-400:]}")
        return path

    def slow_configures(self, count, delay):
        """`count` contexts of one nton Receiver each, whose configure takes `delay` seconds, and one Sender."""
        self.serial += 1
        ports = self.ports.take(2 * (count + 1))
        partition = Partition(f"slow-configure-{count}")
        for i in range(count + 1):
            sender = i == count
            endpoint = Endpoint("tcp", "127.0.0.1", ports[2 * i + 1])
            properties = {"frameCount": 1} if sender else {"configureDelay": delay}
            application = Application("nton::Sender" if sender else "nton::Receiver", 100 + i, i, network="data",
                                      properties=properties)
            partition.contexts.append(Context(f"http://127.0.0.1:{ports[2 * i]}", endpoint,
                                              ["libdaqx_nton.so", "libdaqx_pttcp.so"], [application]))
        path = os.path.join(self.out, "partitions", f"{self.serial:02d}-slow-{count}.xml")
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(partition.xml())
        return path


class SshHosts:
    """N namespace hosts with sshd (daqx-test-ssh-hosts), kept while the point runs."""

    def __init__(self, program, count):
        if not os.access(program, os.X_OK):
            raise BenchError(f"{program} not built")
        self.process = subprocess.Popen([program, str(count)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        stderr=subprocess.PIPE, text=True)
        line = self.process.stdout.readline()
        if not line:
            error = self.process.stderr.read()
            self.process.wait()
            raise BenchError(f"no namespace hosts: {error.strip()[-300:]}")
        found = json.loads(line)
        self.config = found["ssh_config"]
        self.addresses = found["addresses"]

    def close(self):
        self.process.stdin.close()  # its cue to remove the hosts
        try:
            self.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def local_point(setup, contexts):
    n = (contexts - 1) // 2
    if 2 * n + 1 != contexts:
        raise BenchError(f"C={contexts} is not 1 + 2N")
    path = setup.generate(f"launch-{contexts}", n, n)
    return drive(setup, path, f"local-{contexts}")


def ssh_point(setup, hosts):
    cluster = SshHosts(setup.ssh_hosts, hosts)
    try:
        path = setup.generate(f"launch-ssh-{hosts}", hosts, hosts, cluster.addresses)
        result = drive(setup, path, f"ssh-{hosts}", ["--engine", "ssh", "--ssh-config", cluster.config])
        result["contexts"] = 2 * hosts + 1
        return result
    finally:
        cluster.close()


def slow_point(setup, count):
    path = setup.slow_configures(count, 1.0)
    return drive(setup, path, f"slow-{count}")


def median_of(tries, key):
    good = sorted((t for t in tries if "na" not in t and key in t), key=lambda t: t[key])
    if not good:
        return tries[-1]
    chosen = dict(good[(len(good) - 1) // 2])
    chosen["repeats"] = " ".join("n/a" if "na" in t else f"{t.get(key, float('nan')):.3g}" for t in tries)
    return chosen


def cell(r, key):
    if r is None or "na" in r or r.get(key) is None:
        return "n/a"
    value = r[key]
    return f"{value:.0f}" if key == "threads" else f"{value:.1f}" if key == "round" else f"{value:.2f}"


def summary_of(r):
    return ", ".join(f"{label} {cell(r, key)}" for key, label in FIGURES if key in r)


def write_csv(path, rows):
    keys = [k for k, _ in FIGURES]
    with open(path, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["kind", "size", "contexts"] + keys + ["repeats", "note"])
        for kind, size, r in rows:
            writer.writerow([kind, size, r.get("contexts", size if kind != "slow" else size + 1)]
                            + ["" if "na" in r or r.get(k) is None else f"{r[k]:.6g}" for k in keys]
                            + [r.get("repeats", ""), r.get("na", "")])


def plot(out, local, ssh, title):
    plt, _ = pyplot("plot")
    if plt is None:
        return
    figure, axes = plt.subplots(1, 3, figsize=(15, 4.5))
    for ax, rows, xlabel in ((axes[0], local, "contexts (local engine)"), (axes[1], ssh, "hosts (ssh engine)")):
        for key, label in (("enabled", "launch to Enabled"), ("stop_halt", "stop + halt"), ("up", "launch to up")):
            points = [(size, r[key]) for size, r in rows if "na" not in r and r.get(key) is not None]
            if points:
                ax.plot([p[0] for p in points], [p[1] for p in points], marker="o", label=label)
        ax.set_xlabel(xlabel)
        ax.set_ylabel("seconds")
        ax.set_xscale("log", base=2)
        ax.grid(True, alpha=0.3)
        ax.legend()
    for rows, label in ((local, "local"), (ssh, "ssh")):
        points = [(r.get("contexts", size), r["threads"]) for size, r in rows if "na" not in r and r.get("threads")]
        if points:
            axes[2].plot([p[0] for p in points], [p[1] for p in points], marker="o", label=f"launcher threads ({label})")
    axes[2].axhline(GOALS["threads"], color="grey", linestyle="--", label="goal")
    axes[2].set_xlabel("contexts")
    axes[2].set_xscale("log", base=2)
    axes[2].grid(True, alpha=0.3)
    axes[2].legend()
    figure.suptitle(title, fontsize=9)
    figure.tight_layout()
    figure.savefig(os.path.join(out, "launch_scale.png"), dpi=110)
    print(f"plot: {os.path.join(out, 'launch_scale.png')}")


def parse_list(text):
    try:
        return [int(v) for v in text.split(",") if v]
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a comma-separated list of numbers") from None


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build", default="build/release", help="the daqx build tree, Release (build/release)")
    parser.add_argument("--out", default="build/bench/launch-scale", help="where CSV, plot and logs go")
    parser.add_argument("--sizes", type=parse_list, help="contexts on this machine (1 + 2N each); default "
                        + ",".join(map(str, DEFAULT_SIZES)))
    parser.add_argument("--hosts", type=parse_list, default=DEFAULT_HOSTS,
                        help="namespace hosts over ssh (default 2,4,8,16; empty: none)")
    parser.add_argument("--slow-configures", type=int, default=64,
                        help="contexts whose configure takes 1 s (default 64; 0: none)")
    parser.add_argument("--repeat", type=int, default=1, help="runs per point; the median is shown")
    parser.add_argument("--quick", action="store_true", help=f"sizes {','.join(map(str, QUICK_SIZES))}, hosts 2,4")
    args = parser.parse_args()
    sizes = args.sizes or (QUICK_SIZES if args.quick else DEFAULT_SIZES)
    hosts = [h for h in args.hosts if h > 0] if not args.quick else [2, 4]
    os.makedirs(args.out, exist_ok=True)
    setup = Setup(args)
    missing = setup.tree.missing(["libdaqx_evb.so", "libdaqx_pttcp.so", "libdaqx_nton.so"])
    if missing or not os.access(setup.launcher, os.X_OK):
        sys.exit(f"launch_scale: {missing or setup.launcher + ' not built'}")
    start_load = load_average()
    print("launch scale: daqx-launch --drive of generated event builders over pttcp (EvM + N RUs + N BUs, "
          "200 Hz, 256 B fragments)")
    print(conditions_line(start_load, at_start=True))
    print(limits_line())
    progress = Progress(args.repeat * (len(sizes) + len(hosts) + (1 if args.slow_configures else 0)))
    rows = []  # (kind, size, result)
    local, ssh = [], []
    for size in sizes:
        tries = [attempt(f"local, {size} contexts", lambda: local_point(setup, size), progress, summary_of)
                 for _ in range(args.repeat)]
        r = median_of(tries, "enabled")
        r["contexts"] = size
        rows.append(("local", size, r))
        local.append((size, r))
    for count in hosts:
        tries = [attempt(f"ssh, {count} hosts", lambda: ssh_point(setup, count), progress, summary_of)
                 for _ in range(args.repeat)]
        r = median_of(tries, "enabled")
        rows.append(("ssh", count, r))
        ssh.append((count, r))
    if args.slow_configures:
        tries = [attempt(f"{args.slow_configures} one-second configures",
                         lambda: slow_point(setup, args.slow_configures), progress, summary_of)
                 for _ in range(args.repeat)]
        r = median_of(tries, "configure")
        r["contexts"] = args.slow_configures + 1
        rows.append(("slow", args.slow_configures, r))

    print()
    print_table([("point", ["kind", "contexts"]), ("seconds, ms, threads", [label for _, label in FIGURES])],
                [[f"{kind} {size}", str(r.get("contexts", ""))] + [cell(r, key) for key, _ in FIGURES]
                 for kind, size, r in rows])
    for kind, size, r in rows:
        if "na" in r:
            print(f"  {kind} {size}: n/a: {r['na']}")
    print()
    largest = [r for kind, size, r in rows if kind == "local" and size == max(sizes) and "na" not in r]
    goals = []
    if largest:
        r = largest[0]
        goals.append(f"{max(sizes)} contexts Enabled in {r['enabled']:.1f} s (goal {GOALS['enabled_257']:.0f} s at 257)")
        if r.get("stop_halt") is not None:
            goals.append(f"stop + halt {r['stop_halt']:.2f} s (goal {GOALS['stop_halt']:.0f} s)")
    most_threads = max((r["threads"] for _, _, r in rows if "na" not in r and r.get("threads")), default=None)
    if most_threads is not None:
        goals.append(f"the launcher's threads at most {most_threads} (goal {GOALS['threads']})")
    slow = [r for kind, _, r in rows if kind == "slow" and "na" not in r and r.get("configure") is not None]
    if slow:
        goals.append(f"{args.slow_configures} one-second configures in {slow[0]['configure']:.2f} s "
                     f"(goal {GOALS['slow_configures']:.0f} s)")
    print_notes("goals: " + "; ".join(goals))
    write_csv(os.path.join(args.out, "launch_scale.csv"), rows)
    with open(os.path.join(args.out, "conditions.txt"), "w") as f:
        f.write(conditions_line(start_load) + "\n" + limits_line() + "\n" + " ".join(sys.argv) + "\n")
    print(f"csv: {os.path.join(args.out, 'launch_scale.csv')}")
    plot(args.out, local, ssh, conditions_line(start_load))


if __name__ == "__main__":
    main()
