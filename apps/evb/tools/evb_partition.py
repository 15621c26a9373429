#!/usr/bin/env python3
"""Writes the partition XML of an event builder: one EvM, N RUs and M BUs, placed on one or several hosts.

Usage: apps/evb/tools/evb_partition.py [--rus N] [--bus M] [--hosts H1,H2,...] [--transport tcp|ofi|ibv]
                                       [application parameters ...] [--pin [--cores LIST]] [--list] [-o FILE]
See docs/evb-partitions.md for every option, the placement rules and why the contexts come in the order they do.
"""

import argparse
import os
import re
import shlex
import sys
from dataclasses import dataclass, field

sys.dont_write_bytecode = True  # importing the package would leave __pycache__ in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "python"))
from daqx.partition import (  # noqa: E402  (the repository's package, found from this file)
    Application, Context as PartitionContext, Endpoint, Partition, PartitionError, Property, ThreadRule)

# How the header names this tool: fixed, so that the output does not depend on how it was invoked.
TOOL = "apps/evb/tools/evb_partition.py"

EVB_MODULE = "libdaqx_evb.so"
TRANSPORT_MODULES = {"tcp": "libdaqx_pttcp.so", "ofi": "libdaqx_ptofi.so", "ibv": "libdaqx_ptibv.so"}
# Endpoint properties per transport: pttcp's throughput mode batches sends, which is what bulk event data wants.
TRANSPORT_PROPERTIES = {"tcp": [("mode", None, "throughput")], "ofi": [], "ibv": []}

# Application ids: the EvM 10; RU i 100+i; BU j B+j and (with --output consumer) consumer j C+j, where B and C are
# the first multiples of ID_BLOCK past the kind before them, at least 200 and 300: up to 100 RUs and 100 BUs the
# ids are 100.., 200.., 300.., and any N x M stays free of collisions.
EVM_ID = 10
RU_FIRST_ID = 100
ID_BLOCK = 100
PORT_STEP = 10                       # between the contexts of one host
MAX_PORT = 65535
# The default base port, lowered when a host's contexts would not fit below Linux's default ephemeral range (where
# the partition's own outgoing connections take their source ports, so a context starting later could find its
# port taken), but not below the unprivileged ports.
DEFAULT_BASE_PORT = 20000
LINUX_EPHEMERAL_PORTS = (32768, 60999)
LOWEST_UNPRIVILEGED_PORT = 1024
EPHEMERAL_RANGE_FILE = "/proc/sys/net/ipv4/ip_local_port_range"
MAX_UNSIGNED = (1 << 64) - 1
MAX_CPU = 1023

# Units in enable order: builders first (ready for data), readout next, the EvM last (it starts the flow). A BU's
# consumer comes just before its BU, which looks the consumer up when it is configured.
KIND_RANK = {"consumer": 0, "bu": 0, "ru": 1, "evm": 2}
CLASS_OF = {"evm": "evb::EvM", "ru": "evb::RU", "bu": "evb::BU", "consumer": "evb::Consumer"}


def first_ids(rus, bus):
    """The first application id of each kind for N RUs and M BUs (see ID_BLOCK)."""
    def next_block(after, at_least):
        return max(at_least, -(-after // ID_BLOCK) * ID_BLOCK)
    bu = next_block(RU_FIRST_ID + rus, 2 * ID_BLOCK)
    return {"evm": EVM_ID, "ru": RU_FIRST_ID, "bu": bu, "consumer": next_block(bu + bus, 3 * ID_BLOCK)}


# ---------------------------------------------------------------- application parameters

@dataclass(frozen=True)
class Parameter:
    option: str    # command-line option, without the leading "--"
    name: str      # parameter name in the partition
    type: str      # partition type: unsigned, double, string or bool
    kinds: tuple   # the units that get it: "evm", "ru", "bu"
    group: str     # where --help lists it
    help: str
    choices: tuple = ()


PARAMETERS = [
    Parameter("events-per-request", "eventsPerRequest", "unsigned", ("evm",), "EvM",
              "events per BU resource slot (a batch)"),
    Parameter("trigger-rate", "triggerRate", "double", ("evm",), "EvM",
              "events per second the trigger gives; 0: as fast as the BUs ask"),
    Parameter("max-events", "maxEvents", "unsigned", ("evm",), "EvM", "events to assign in a run; 0: no limit"),
    Parameter("ru-failure", "ruFailurePolicy", "string", ("evm",), "EvM",
              "when an RU is down: fail the run, or let the BUs build incomplete events", ("fail", "incomplete")),
    Parameter("bu-timeout", "buTimeout", "double", ("evm",), "EvM",
              "seconds a BU may be silent before it is dropped"),
    Parameter("ru-timeout", "ruTimeout", "double", ("evm",), "EvM",
              "seconds an RU may be silent before it is declared down"),
    Parameter("drain-timeout", "drainTimeout", "double", ("evm",), "EvM",
              "seconds a stop waits for the BUs to report the assigned events built (keep it below the launcher's "
              "60 s wait for a transition)"),
    # blockSize goes to the EvM too: it sends the trigger fragment the way an RU sends its fragments.
    Parameter("sources", "sources", "unsigned", ("ru",), "RU", "fragment sources per RU"),
    Parameter("fragment-size", "fragmentSize", "unsigned", ("ru",), "RU", "mean fragment size per source, bytes"),
    Parameter("fragment-spread", "fragmentSpread", "unsigned", ("ru",), "RU", "spread of the fragment size, bytes"),
    Parameter("block-size", "blockSize", "unsigned", ("evm", "ru"), "RU",
              "bytes per fragment block sent to a BU (set on the RUs and the EvM)"),
    Parameter("blocks-per-send", "blocksPerSend", "unsigned", ("evm", "ru"), "RU",
              "the most fragment blocks for one BU in one batch send (set on the RUs and the EvM)"),
    Parameter("pattern", "pattern", "bool", ("evm", "ru"), "RU",
              "fill fragments with a checkable pattern (set on the RUs and the EvM's trigger fragment)",
              ("true", "false")),
    Parameter("slots", "slots", "unsigned", ("bu",), "BU", "resource slots (batches in flight) per BU"),
    Parameter("output", "output", "string", ("bu",), "BU",
              "what a BU does with built events (consumer: an evb::Consumer is added before each BU)",
              ("discard", "file", "consumer")),
    Parameter("output-dir", "outputDirectory", "string", ("bu",), "BU", "where --output file writes"),
    Parameter("file-size", "fileSize", "unsigned", ("bu",), "BU", "bytes per output file"),
    Parameter("check-data", "checkData", "bool", ("bu",), "BU", "check every built event's fragments",
              ("true", "false")),
    Parameter("evm-timeout", "evmTimeout", "double", ("ru", "bu"), "RU and BU",
              "seconds without the EvM's heartbeat before an RU or BU gives up on it"),
]

UNSIGNED = re.compile(r"[0-9]+")
DECIMAL = re.compile(r"([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][-+]?[0-9]+)?")


def unsigned_value(text):
    if not UNSIGNED.fullmatch(text) or int(text) > MAX_UNSIGNED:
        raise argparse.ArgumentTypeError(f"'{text}' is not an unsigned integer (0 to {MAX_UNSIGNED})")
    return str(int(text))


def double_value(text):
    if not DECIMAL.fullmatch(text) or float(text) == float("inf"):
        raise argparse.ArgumentTypeError(f"'{text}' is not a finite non-negative number (e.g. 2.5, 1e-3)")
    return text


def string_value(text):
    if text == "" or any(ord(c) < 32 for c in text):
        raise argparse.ArgumentTypeError(f"{text!r} is empty or holds a control character")
    return text


VALUE_PARSER = {"unsigned": unsigned_value, "double": double_value, "string": string_value, "bool": string_value}


# ---------------------------------------------------------------- other arguments

def count_value(text):
    if not UNSIGNED.fullmatch(text) or int(text) < 1:
        raise argparse.ArgumentTypeError(f"'{text}' is not a count of at least 1")
    return int(text)


def port_value(text):
    if not UNSIGNED.fullmatch(text) or not 1 <= int(text) <= MAX_PORT:
        raise argparse.ArgumentTypeError(f"'{text}' is not a port number (1-{MAX_PORT})")
    return int(text)


def host_list(text):
    hosts = []
    for item in text.split(","):
        host = item.strip()
        if host.startswith("[") and host.endswith("]"):
            host = host[1:-1]  # an IPv6 address may come bracketed as in a URL
        if not host:
            raise argparse.ArgumentTypeError(f"'{text}' has an empty host")
        bad_ipv6 = ":" in host and not re.fullmatch(r"[0-9A-Fa-f:.]+", host)
        if bad_ipv6 or any(c.isspace() or c in "/[]@?#" for c in host):
            raise argparse.ArgumentTypeError(f"'{host}' is not a host name or address")
        if host.lower() in (h.lower() for h in hosts):
            raise argparse.ArgumentTypeError(f"host '{host}' is listed twice (each host gets one context)")
        hosts.append(host)
    return hosts


def cpu_list(text):
    """The partition's CPU list syntax: 0, 1-3, 0,2,4-5."""
    cores = []
    for item in text.split(","):
        match = re.fullmatch(r"([0-9]+)(?:-([0-9]+))?", item.strip())
        if not match:
            raise argparse.ArgumentTypeError(f"'{text}' is not a CPU list (e.g. 0, 1-3 or 0,2,4-5)")
        first = int(match.group(1))
        last = int(match.group(2)) if match.group(2) is not None else first
        if last < first or last > MAX_CPU:
            raise argparse.ArgumentTypeError(f"'{item.strip()}' is not a range of CPUs 0 to {MAX_CPU} going up")
        for core in range(first, last + 1):
            if core not in cores:
                cores.append(core)
    return cores


def cpu_text(cores):
    """0,1,2,5 -> 0-2,5"""
    parts = []
    start = previous = None
    for core in sorted(cores) + [None]:
        if previous is not None and core == previous + 1:
            previous = core
            continue
        if start is not None:
            parts.append(str(start) if start == previous else f"{start}-{previous}")
        start = previous = core
    return ",".join(parts)


def this_machine_cores():
    try:
        return sorted(os.sched_getaffinity(0))
    except AttributeError:
        return list(range(os.cpu_count() or 1))


def build_parser():
    parser = argparse.ArgumentParser(
        prog=TOOL, allow_abbrev=False,
        usage="%(prog)s [--rus N] [--bus M] [--hosts H1,H2,...] [--transport tcp|ofi|ibv] [--one-context]\n"
              "       [application parameters] [--pin [--cores LIST]] [--list] [-o FILE]",
        description="Print (or write with -o) the partition XML of an event builder: one EvM, N RUs and M BUs.",
        epilog="Application parameters are written only when given, so the applications' own defaults apply "
               "otherwise. Every long option may also be written with one hyphen (-rus 2), which is how the "
               "generated file's header records the command line: an XML comment cannot hold two hyphens in a "
               "row. See docs/evb-partitions.md.")
    topology = parser.add_argument_group("topology")
    topology.add_argument("--rus", type=count_value, default=2, metavar="N",
                          help="readout units (default 2)")
    topology.add_argument("--bus", type=count_value, default=2, metavar="M", help="builder units (default 2)")
    topology.add_argument("--hosts", type=host_list, default=["127.0.0.1"], metavar="H1,H2,...",
                          help="addresses the units run on (default 127.0.0.1). One host: each unit gets its own "
                               "context there. Several: EvM, RU0.., BU0.. go round-robin over them, one context "
                               "per host")
    topology.add_argument("--one-context", action="store_true",
                          help="every unit in one context on the first host: an in-process event builder "
                               "without transport (--transport and --network are then unused)")
    topology.add_argument("--transport", choices=list(TRANSPORT_MODULES), default="tcp", metavar="tcp|ofi|ibv",
                          help="the endpoints' protocol (default tcp): module " +
                               ", ".join(f"{m} for {t}" for t, m in TRANSPORT_MODULES.items()))
    topology.add_argument("--base-port", type=port_value, metavar="P",
                          help=f"the k-th context of a host listens for control on P+{PORT_STEP}k and its "
                               f"endpoint on P+{PORT_STEP}k+1 (default {DEFAULT_BASE_PORT}, lower if a host's "
                               f"contexts would otherwise reach Linux's ephemeral ports, "
                               f"{LINUX_EPHEMERAL_PORTS[0]}-{LINUX_EPHEMERAL_PORTS[1]})")
    topology.add_argument("--network", type=string_value, default="data",
                          help="the network name of endpoints and applications (default data)")
    topology.add_argument("--name", type=string_value, metavar="NAME",
                          help="the partition's name (default evb-NxM)")
    topology.add_argument("--comment", type=string_value, metavar="TEXT",
                          help="one more sentence for the header comment (must not contain '--')")

    groups = {}
    for p in PARAMETERS:
        if p.group not in groups:
            groups[p.group] = parser.add_argument_group(f"{p.group} parameters (written only when given)")
        groups[p.group].add_argument("--" + p.option, dest=p.name, metavar="|".join(p.choices) or p.type.upper(),
                                     type=VALUE_PARSER[p.type], choices=p.choices or None,
                                     help=f"{p.name} ({p.type}): {p.help}")

    policy = parser.add_argument_group("pinning")
    policy.add_argument("--pin", action="store_true",
                        help="add a <Policy> pinning threads round-robin over --cores, counting per host: a "
                             "context per core where a host runs several, else a core per unit and one for the "
                             "transport")
    policy.add_argument("--cores", type=cpu_list, metavar="LIST",
                        help="CPUs for --pin, e.g. 0-7 or 0,2,4-5 (default: the CPUs of this machine)")

    output = parser.add_argument_group("output")
    output.add_argument("--executive", metavar="PATH",
                        help="the daqx-executive whose --list-params the parameters are checked against (default: "
                             "$DAQX_EXECUTIVE, else build/release of this repository, else the one on PATH; "
                             "with none, the parameters are written unchecked)")
    output.add_argument("--list", action="store_true", help="print a table of the contexts instead of the XML")
    output.add_argument("-o", "--output-file", metavar="FILE", help="write to FILE instead of standard output")
    return parser


def long_option_names(parser):
    return {s[2:] for action in parser._actions for s in action.option_strings if s.startswith("--")}


def accept_single_hyphen(argv, names):
    """-rus 2 -> --rus 2, so that the command line recorded in a header comment can be run as it stands."""
    result = []
    for arg in argv:
        if arg.startswith("-") and not arg.startswith("--") and arg[1:].split("=", 1)[0] in names:
            arg = "-" + arg
        result.append(arg)
    return result


def validate(parser, args):
    if args.one_context and len(args.hosts) > 1:
        parser.error(f"--one-context puts every unit in one executive, but --hosts names {len(args.hosts)} hosts")
    if args.cores is not None and not args.pin:
        parser.error("--cores is for --pin")
    choose_ports(parser, args)
    if args.comment is not None and "--" in args.comment:
        parser.error("--comment: an XML comment cannot hold '--'")


# ---------------------------------------------------------------- ports

def port_span(args):
    """From the base port to the highest port a host's contexts use."""
    per_host = 1 + args.rus + args.bus if len(args.hosts) == 1 and not args.one_context else 1
    return PORT_STEP * (per_host - 1) + (0 if args.one_context else 1)


def this_machine_ephemeral_ports():
    """The source ports this machine gives outgoing connections (Linux's default where it does not say)."""
    try:
        with open(EPHEMERAL_RANGE_FILE, encoding="ascii") as f:
            low, high = (int(x) for x in f.read().split())
        return low, high
    except (OSError, ValueError):
        return LINUX_EPHEMERAL_PORTS


def choose_ports(parser, args):
    """Sets args.base_port: the default one, or the one given, checked against 65535 and the ephemeral ranges.
    The default depends on Linux's default range only, so that a command gives the same file on every machine;
    this machine's own range is checked to warn, as the partition may be meant for other hosts."""
    span = port_span(args)
    if args.base_port is None:
        below = LINUX_EPHEMERAL_PORTS[0] - 1 - span
        args.base_port = min(DEFAULT_BASE_PORT, below - below % PORT_STEP)
        if args.base_port < LOWEST_UNPRIVILEGED_PORT:
            parser.error(f"the {span + 1} ports of {1 + args.rus + args.bus} contexts on one host do not fit between "
                         f"{LOWEST_UNPRIVILEGED_PORT} and Linux's ephemeral ports ({LINUX_EPHEMERAL_PORTS[0]}-"
                         f"{LINUX_EPHEMERAL_PORTS[1]}): spread the units over several --hosts, or give --base-port "
                         f"(ports in the ephemeral range are then at risk)")
    highest = args.base_port + span
    if highest > MAX_PORT:
        parser.error(f"--base-port {args.base_port} leaves no room: the contexts need ports up to {highest}, "
                     f"above {MAX_PORT}")
    low, high = this_machine_ephemeral_ports()
    if args.base_port <= high and highest >= low:
        print(f"{TOOL}: warning: ports {args.base_port}-{highest} reach into this machine's ephemeral range "
              f"{low}-{high} ({EPHEMERAL_RANGE_FILE}): an outgoing connection may hold a port before its context "
              f"listens on it. Choose a --base-port below {low} or reserve the ports "
              f"(sysctl net.ipv4.ip_local_reserved_ports)", file=sys.stderr)


# ---------------------------------------------------------------- placement

@dataclass
class Unit:
    kind: str   # evm, ru, bu; consumer: not placed, it follows its BU
    index: int
    tid: int    # the application id

    @property
    def cls(self):
        return CLASS_OF[self.kind]

    @property
    def label(self):
        names = {"evm": "EvM", "ru": "RU", "bu": "BU", "consumer": "Consumer"}
        return names[self.kind] if self.kind == "evm" else f"{names[self.kind]}{self.index}"

    @property
    def thread_prefix(self):
        return thread_prefix(self.kind, self.index)

    @property
    def order(self):
        return KIND_RANK[self.kind], self.index, self.kind != "consumer"

    @property
    def consumer_name(self):
        """The name BU j and its consumer agree on (distinct, as one executive may hold several BUs)."""
        return f"bu{self.index}"


@dataclass
class Context:
    host: str
    port: int
    has_endpoint: bool
    units: list = field(default_factory=list)
    pins: list = field(default_factory=list)  # (pattern, core)

    @property
    def url(self):
        return f"http://{url_host(self.host)}:{self.port}"

    @property
    def endpoint_port(self):
        return self.port + 1

    @property
    def rank(self):
        return max(KIND_RANK[u.kind] for u in self.units)


def thread_prefix(kind, index):
    """An application's hierarchical name: class with :: as /, lower case, then the instance."""
    return f"{CLASS_OF[kind].replace('::', '/').lower()}/{index}"


def url_host(host):
    return f"[{host}]" if ":" in host else host


def place(args):
    """The contexts in partition (enable) order. Ports count per host in placement order: EvM, RU0.., BU0.."""
    first = first_ids(args.rus, args.bus)
    units = ([Unit("evm", 0, first["evm"])] + [Unit("ru", i, first["ru"] + i) for i in range(args.rus)] +
             [Unit("bu", j, first["bu"] + j) for j in range(args.bus)])
    endpoint = not args.one_context
    if args.one_context:
        contexts = [Context(args.hosts[0], args.base_port, False, units)]
    elif len(args.hosts) == 1:
        contexts = [Context(args.hosts[0], args.base_port + PORT_STEP * k, endpoint, [u])
                    for k, u in enumerate(units)]
    else:
        contexts = [Context(h, args.base_port, endpoint) for h in args.hosts]
        for k, unit in enumerate(units):
            contexts[k % len(contexts)].units.append(unit)
        unused = [c.host for c in contexts if not c.units]
        if unused:
            print(f"{TOOL}: note: {len(unused)} host(s) get no unit and no context: {', '.join(unused)}",
                  file=sys.stderr)
        contexts = [c for c in contexts if c.units]

    if args.pin:
        assign_cores(contexts, args.cores if args.cores is not None else this_machine_cores(),
                     args.output == "consumer")
    if args.output == "consumer":
        for c in contexts:
            c.units += [Unit("consumer", u.index, first["consumer"] + u.index) for u in c.units if u.kind == "bu"]

    # The launcher enables contexts in file order and stops them in reverse: BU-only contexts first, those with
    # an RU next, the EvM's last; sorted() is stable, so placement order holds among equals.
    for c in contexts:
        c.units.sort(key=lambda u: u.order)
    return sorted(contexts, key=lambda c: c.rank)


def assign_cores(contexts, cores, consumers):
    """Round-robin over the cores, one counter per host (cores are a host's own), in placement order. Where a host
    runs several executives, each context takes one core for all its threads, so that the contexts spread over
    the cores; where it runs one, each unit of it and its transport take a core each (a BU shares its core with
    its consumer, which it calls on its own thread)."""
    contexts_on = {}
    for c in contexts:
        contexts_on[c.host.lower()] = contexts_on.get(c.host.lower(), 0) + 1
    next_core = {}
    for c in contexts:
        transport = [["pt/*"]] if c.has_endpoint else []
        if contexts_on[c.host.lower()] > 1:
            groups = [["evb/*"] + (["pt/*"] if c.has_endpoint else [])]
        elif len(c.units) == 1:
            groups = [["evb/*"]] + transport
        else:
            groups = [[u.thread_prefix + "/*"] + ([thread_prefix("consumer", u.index) + "/*"]
                                                  if consumers and u.kind == "bu" else [])
                      for u in c.units] + transport
        for patterns in groups:
            k = next_core.get(c.host.lower(), 0)
            next_core[c.host.lower()] = k + 1
            c.pins.extend((pattern, cores[k % len(cores)]) for pattern in patterns)


# ---------------------------------------------------------------- output

def comment_token(arg):
    """One command-line word as the header comment can hold it and a shell can run it."""
    if arg.startswith("--") and len(arg) > 2:
        arg = arg[1:]
    if "--" not in arg:
        return shlex.quote(arg)
    # Only in a value: bash's $'...' with the hyphens escaped.
    escaped = arg.replace("\\", "\\\\").replace("'", "\\'").replace("-", "\\x2d")
    return f"$'{escaped}'"


FLAGS = ("--one-context", "--pin", "--list")


def command_lines(argv, width=104):
    """The command, wrapped with shell continuations; an option stays on one line with its value."""
    words = [TOOL]
    pending_value = False
    for arg in argv:
        if pending_value:
            words[-1] += " " + comment_token(arg)
            pending_value = False
        else:
            words.append(comment_token(arg))
            pending_value = arg.startswith("-") and "=" not in arg and arg not in FLAGS
    lines, line = [], ""
    for word in words:
        if line and len(line) + 1 + len(word) > width:
            lines.append(line + " \\")
            line = "  " + word
        else:
            line = f"{line} {word}" if line else word
    lines.append(line)
    return lines


def describe(args, contexts):
    units = f"EvM, {args.rus} RU{'s' if args.rus > 1 else ''} and {args.bus} BU{'s' if args.bus > 1 else ''}"
    if args.one_context:
        where = f"in one executive on {contexts[0].host} (handed over in process, no transport)"
    elif len(args.hosts) == 1:
        where = f"on {args.hosts[0]}, each unit in its own context, over {args.transport}"
    else:
        where = f"over {len(contexts)} hosts, one context per host, over {args.transport}"
    return f"Event builder: {units} {where}.".replace("--", "- -")


def header_lines(args, argv, contexts):
    header = [describe(args, contexts)]
    if args.comment:
        header.append(args.comment)
    header.append("Generated: rerun the command below from the repository's root rather than edit this file")
    header.append("(one hyphen per option here, as an XML comment cannot hold two in a row; the tool takes both):")
    header += ["  " + line for line in command_lines(argv)]
    if args.pin:
        cores = args.cores if args.cores is not None else this_machine_cores()
        header.append(f"Pinned round-robin over cores {cpu_text(cores)}.")
    return header


def build_partition(args, argv, contexts):
    """The placed contexts as a partition."""
    partition = Partition(args.name or f"evb-{args.rus}x{args.bus}", comment=header_lines(args, argv, contexts))
    if args.pin:
        partition.policy = [ThreadRule(pattern, core, c.url) for c in contexts for pattern, core in c.pins]
    for c in contexts:
        context = PartitionContext(c.url)
        if c.has_endpoint:
            context.endpoint = Endpoint(args.transport, c.host, c.endpoint_port, args.network,
                                        [Property(n, v, t) for n, t, v in TRANSPORT_PROPERTIES[args.transport]])
            context.modules.append(TRANSPORT_MODULES[args.transport])
        context.modules.append(EVB_MODULE)
        for u in c.units:
            # A consumer is handed events by its BU in the same executive: it needs no network.
            network = args.network if c.has_endpoint and u.kind != "consumer" else None
            props = [Property(p.name, getattr(args, p.name), p.type) for p in PARAMETERS
                     if u.kind in p.kinds and getattr(args, p.name) is not None]
            if args.output == "consumer" and u.kind in ("bu", "consumer"):
                props.append(Property("consumer" if u.kind == "bu" else "name", u.consumer_name, "string"))
            context.applications.append(Application(u.cls, u.tid, u.index, network, props))
        partition.contexts.append(context)
    return partition


def render_list(args, contexts):
    rows = [("#", "context", "endpoint", "units", "cores" if args.pin else "")]
    for k, c in enumerate(contexts, 1):
        endpoint = f"{args.transport} {url_host(c.host)}:{c.endpoint_port}" if c.has_endpoint else "-"
        units = ", ".join(f"{u.label} ({u.tid})" for u in c.units)
        pins = ", ".join(f"{p}:{core}" for p, core in c.pins)
        rows.append((str(k), c.url, endpoint, units, pins))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(r, widths)).rstrip() for r in rows]
    lines.append("Contexts are enabled in this order and stopped in reverse.")
    return "\n".join(lines) + "\n"


def main(argv):
    parser = build_parser()
    argv = accept_single_hyphen(argv, long_option_names(parser))
    args = parser.parse_args(argv)
    validate(parser, args)
    contexts = place(args)
    if args.list:
        text = render_list(args, contexts)
    else:
        partition = build_partition(args, argv, contexts)
        try:
            # Against what the executive declares, when there is one to ask (see --executive).
            partition.check_against_executive(args.executive)
        except PartitionError as error:
            parser.error(str(error))
        text = partition.xml()
    if args.output_file:
        try:
            with open(args.output_file, "w", encoding="utf-8") as f:
                f.write(text)
        except OSError as error:
            print(f"{TOOL}: error: cannot write {args.output_file}: {error.strerror}", file=sys.stderr)
            return 1
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
