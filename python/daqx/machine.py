"""The machine a benchmark runs on, as the drivers in bench/ read it: memory available, the kernel's limits on
threads, files and ports, the ephemeral port range, and ports to listen on below it. Not a program.
"""

import os
import resource
import socket

from .bench import BenchError, listening


def mem_available():
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    return None


def read_int(path):
    try:
        with open(path) as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def ephemeral_range():
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            low, high = (int(v) for v in f.read().split())
            return low, high
    except (OSError, ValueError):
        return 32768, 60999


def system_threads():
    count = 0
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                count += len(os.listdir(f"/proc/{entry}/task"))
            except OSError:
                pass
    return count


def limits_line():
    nofile = resource.getrlimit(resource.RLIMIT_NOFILE)
    nproc = resource.getrlimit(resource.RLIMIT_NPROC)
    low, high = ephemeral_range()

    def text(v):
        return "unlimited" if v == resource.RLIM_INFINITY else str(v)
    return (f"limits: open files soft {text(nofile[0])} hard {text(nofile[1])} (each executive raises its soft limit "
            f"to the hard one); processes soft {text(nproc[0])} hard {text(nproc[1])}, uid {os.getuid()}; "
            f"threads-max {read_int('/proc/sys/kernel/threads-max')}, pid_max {read_int('/proc/sys/kernel/pid_max')}, "
            f"threads now {system_threads()}; file-max {read_int('/proc/sys/fs/file-max')}; ephemeral ports "
            f"{low}-{high}; MemAvailable {mem_available() / 2**30:.1f} GiB")


class PortPicker:
    """Ports for control and data, below the kernel's ephemeral range. free_ports() hands out ephemeral ports; with
    thousands of connections opened while later executives are still starting, one connection's source port could
    take the port an executive not yet started is to listen on. A cursor moves on, so a partition does not reuse
    the ports of the one before (TIME_WAIT)."""

    FIRST = 10000

    def __init__(self):
        self.low, _ = ephemeral_range()
        self.cursor = self.FIRST + (os.getpid() * 7919) % max(1, self.low - self.FIRST)

    def take(self, count):
        ports = []
        tried = 0
        while len(ports) < count:
            tried += 1
            if tried > self.low - self.FIRST:
                raise BenchError(f"fewer than {count} free ports between {self.FIRST} and {self.low}")
            port = self.cursor
            self.cursor = self.cursor + 1 if self.cursor + 1 < self.low else self.FIRST
            if listening(port):
                continue
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            try:
                s.bind(("127.0.0.1", port))
                ports.append(port)
            except OSError:
                pass
            finally:
                s.close()
        return ports
