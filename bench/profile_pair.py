#!/usr/bin/env python3
"""Where a transport's time goes: one nton::Sender -> nton::Receiver pair in two executives over one transport,
profiled with `perf record -g` on both executives while it runs, with each thread's CPU and context switches per
frame read from /proc and the transports' counters. The profiles behind the "where the time goes" paragraphs of
docs/benchmarks-tcp.md, docs/benchmarks-evb.md and docs/benchmarks-rdma.md. A benchmark tool, never a test.

Usage: python3 bench/profile_pair.py --out DIR --transport tcp|shm|ofi|ibv --size BYTES [--batch N]
          [--properties '<mode>throughput</mode>'] [--cores 0/1|none] [--seconds 4] [--host 127.0.0.1]
          [--build build/release]
Writes DIR/rates.txt (rate while recording; per thread: cores, us per frame, voluntary and involuntary context
switches per frame), DIR/top.txt (hottest symbols by thread), DIR/threads.txt, DIR/transports.json (counters,
e.g. messages_sent against frames_sent), DIR/perf.data, the partition and one log per executive.
"""

import argparse
import json
import os
import subprocess
import sys
import time

sys.dont_write_bytecode = True  # importing the package would leave __pycache__ in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
from daqx.bench import NTON, BenchError, Executive, Processes, checked_xml, free_ports  # noqa: E402  (the repository's package)
from daqx.partition import (  # noqa: E402
    Application, Context, Endpoint, Partition, PartitionError, ThreadRule, properties_from_xml)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODULES = {"tcp": "libdaqx_pttcp.so", "shm": "libdaqx_ptshm.so", "ofi": "libdaqx_ptofi.so", "ibv": "libdaqx_ptibv.so"}


def partition(transport, host, ports, size, properties, cores, executive=None, batch=0):
    """properties: the endpoints' parameters as XML text; batch > 1: the pair sends and handles batches of that
    many frames (nton's batch parameters)."""
    sender, sender_data, receiver, receiver_data = ports
    urls = [f"http://127.0.0.1:{sender}", f"http://127.0.0.1:{receiver}"]
    sending = {"frameSize": size, "duration": 0, "window": 4096, "pattern": "false", "receivers": 21}
    receiving = {}
    if batch > 1:
        sending["batch"] = batch
        receiving["batch"] = "true"
    model = Partition("profile")
    if transport == "none":  # both in one executive: frames handed over without a transport
        model.contexts.append(Context(urls[0], modules=[NTON], applications=[
            Application("nton::Receiver", 21, 0, None, receiving), Application("nton::Sender", 11, 0, None, sending)]))
        return urls[:1], checked_xml(model, executive)
    applications = [Application("nton::Sender", 11, 0, "data", sending),
                    Application("nton::Receiver", 21, 1, "data", receiving)]
    if cores:
        model.policy = [ThreadRule("*", c, u) for c, u in zip(cores, urls)]
    for url, port, application in zip(urls, (sender_data, receiver_data), applications):
        model.contexts.append(Context(url, Endpoint(transport, host, port, "data", properties_from_xml(properties)),
                                      [MODULES[transport], NTON], [application]))
    return urls, checked_xml(model, executive)


def threads(pid):
    """(tid, name) -> (CPU ticks, voluntary, involuntary context switches) for every thread of pid."""
    result = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            stat = open(f"/proc/{pid}/task/{tid}/stat").read()
            status = open(f"/proc/{pid}/task/{tid}/status").read()
        except OSError:
            continue  # the thread ended meanwhile
        name = stat[stat.index("(") + 1:stat.rindex(")")]
        fields = stat[stat.rindex(")") + 2:].split()
        voluntary = int(status.split("voluntary_ctxt_switches:")[1].split()[0])
        involuntary = int(status.split("nonvoluntary_ctxt_switches:")[1].split()[0])
        result[(tid, name)] = (int(fields[11]) + int(fields[12]), voluntary, involuntary)
    return result


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True, help="folder for the profile and its tables")
    parser.add_argument("--transport", choices=sorted(MODULES) + ["none"], default="tcp",
                        help="the pair's transport; none: both in one executive, no transport")
    parser.add_argument("--size", type=int, default=64, help="frameSize in bytes (its nton header included)")
    parser.add_argument("--batch", type=int, default=0, help="frames per batch (nton's batch parameters); 0: none")
    parser.add_argument("--properties", default="", help="the endpoints' properties as XML, e.g. <mode>throughput</mode>")
    parser.add_argument("--cores", default="none", help="SENDER/RECEIVER CPUs, e.g. 0/1; none: not pinned")
    parser.add_argument("--seconds", type=float, default=4.0, help="how long perf records")
    parser.add_argument("--host", default="127.0.0.1", help="the data endpoints' address")
    parser.add_argument("--build", default=os.path.join(ROOT, "build", "release"))
    args = parser.parse_args()

    os.makedirs(args.out, exist_ok=True)
    cores = None if args.cores == "none" else args.cores.split("/")
    binary = os.path.join(args.build, "executive", "daqx-executive")
    try:
        urls, xml = partition(args.transport, args.host, free_ports(4), args.size, args.properties, cores, binary,
                              args.batch)
    except (PartitionError, BenchError) as error:
        parser.error(str(error))
    config = os.path.join(args.out, "partition.xml")
    with open(config, "w") as f:
        f.write(xml)
    env = dict(os.environ, DAQX_MODULE_PATH=os.path.join(args.build, "modules"))
    pin = {"sender": {int(cores[0])}, "receiver": {int(cores[1])}} if cores else None
    processes = Processes(args.out, pin)
    try:
        executives = [Executive(processes, binary, env, config, url, f"executive-{i}", side)
                      for i, (url, side) in enumerate(zip(urls, ("sender", "receiver")))]
        receiving_executive = executives[-1]
        for e in executives:
            e.wait_ready()
        for command in ("configure", "enable"):
            for e in reversed(executives):  # the receiver first
                e.transition(command)
        time.sleep(1)

        def received():
            metrics = receiving_executive.metrics(21)
            return metrics["bytes_received"], metrics["frames_received"]

        pids = [e.process.pid for e in executives]
        before, cpu_before, start = received(), [threads(pid) for pid in pids], time.monotonic()
        with open(os.path.join(args.out, "perf.err"), "w") as err:
            subprocess.run(["perf", "record", "-F", "1999", "-g", "-p", ",".join(str(pid) for pid in pids),
                            "-o", os.path.join(args.out, "perf.data"), "--", "sleep", str(args.seconds)], stderr=err,
                           stdout=err, check=False)
        after, cpu_after, seconds = received(), [threads(pid) for pid in pids], time.monotonic() - start
        frames = max(1, after[1] - before[1])
        lines = [f"{(after[0] - before[0]) / seconds / 1e6:.1f} MB/s, {frames / seconds:.0f} frames/s over "
                 f"{seconds:.2f} s (perf recording)"]
        for side, first, last in zip(("sender", "receiver"), cpu_before, cpu_after):
            for key, (ticks, voluntary, involuntary) in sorted(last.items()):
                if key not in first:
                    continue
                d = [ticks - first[key][0], voluntary - first[key][1], involuntary - first[key][2]]
                if d[0] or d[1] > 10:
                    lines.append(f"{side:8s} {key[1]:16s} {d[0] / 100 / seconds:.2f} cores, "
                                 f"{d[0] * 1e4 / frames:.3f} us/frame, context switches per frame: "
                                 f"voluntary {d[1] / frames:.4f}, involuntary {d[2] / frames:.4f}")
        with open(os.path.join(args.out, "rates.txt"), "w") as f:
            f.write("\n".join(lines) + "\n")
        with open(os.path.join(args.out, "transports.json"), "w") as f:
            json.dump([e.transports() for e in executives], f)
    except BenchError as error:
        sys.exit(f"profile_pair: {error}")
    finally:
        processes.stop_all()
    data = os.path.join(args.out, "perf.data")
    for name, sort in (("top.txt", "comm,dso,sym"), ("threads.txt", "pid,comm")):
        report = subprocess.run(["perf", "report", "-i", data, "--no-children", "--sort", sort, "--stdio", "-g", "none"],
                                capture_output=True, text=True, check=False).stdout
        with open(os.path.join(args.out, name), "w") as f:
            f.write("\n".join(line for line in report.splitlines() if "%" in line and not line.startswith("#")))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
