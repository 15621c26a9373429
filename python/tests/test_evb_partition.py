"""Specification of the event-builder partition generator (apps/evb/tools/evb_partition.py): the ids and ports it
gives any N x M, and the port ranges it refuses or warns about. Run by ctest with DAQX_EXECUTIVE naming the built
executive (the 128x128 partition is then checked by it too)."""

import os
import subprocess
import sys
import tempfile
import unittest
import urllib.parse
import xml.etree.ElementTree as ElementTree

EXECUTIVE = os.environ.get("DAQX_EXECUTIVE")
EVB_PARTITION = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "apps", "evb", "tools",
                             "evb_partition.py")
LINUX_EPHEMERAL_PORTS = range(32768, 60999 + 1)


def generate(*options):
    """The generator's outcome for the options (checked against DAQX_EXECUTIVE's parameters when it is set)."""
    executive = ["--executive", EXECUTIVE] if EXECUTIVE else []
    return subprocess.run([sys.executable, EVB_PARTITION, *executive, *options], capture_output=True, text=True,
                          timeout=60)


def contexts_of(xml_text):
    """Per context: its control port, its endpoint's port, and (class, id) of each application."""
    contexts = []
    for context in ElementTree.fromstring(xml_text).iter("Context"):
        endpoint = context.find("Endpoint")
        contexts.append((urllib.parse.urlsplit(context.get("url")).port,
                         int(endpoint.get("port")) if endpoint is not None else None,
                         [(a.get("class"), int(a.get("id"))) for a in context.iter("Application")]))
    return contexts


class Ids(unittest.TestCase):
    def test_up_to_100_rus_and_bus_the_ids_are_evm_10_ru_100_bu_200_consumer_300(self):
        written = generate("--rus", "100", "--bus", "100", "--output", "consumer")
        self.assertEqual(written.returncode, 0, written.stderr)
        ids = {}
        for _, _, applications in contexts_of(written.stdout):
            for cls, tid in applications:
                ids.setdefault(cls, []).append(tid)
        self.assertEqual(sorted(ids["evb::EvM"]), [10])
        self.assertEqual(sorted(ids["evb::RU"]), list(range(100, 200)))
        self.assertEqual(sorted(ids["evb::BU"]), list(range(200, 300)))
        self.assertEqual(sorted(ids["evb::Consumer"]), list(range(300, 400)))

    def test_every_id_is_distinct_for_any_n_x_m(self):
        for rus, bus in [(1, 1), (101, 3), (128, 128), (3, 250), (499, 501)]:
            with self.subTest(rus=rus, bus=bus):
                written = generate("--rus", str(rus), "--bus", str(bus), "--output", "consumer")
                self.assertEqual(written.returncode, 0, written.stderr)
                ids = [tid for _, _, applications in contexts_of(written.stdout) for _, tid in applications]
                self.assertEqual(len(ids), 1 + rus + 2 * bus)
                self.assertEqual(len(set(ids)), len(ids))


class Ports(unittest.TestCase):
    def test_128x128_on_one_host_uses_distinct_ports_below_the_ephemeral_range(self):
        written = generate("--rus", "128", "--bus", "128")
        self.assertEqual(written.returncode, 0, written.stderr)
        contexts = contexts_of(written.stdout)
        self.assertEqual(len(contexts), 257)
        ports = [port for control, endpoint, _ in contexts for port in (control, endpoint)]
        self.assertEqual(len(set(ports)), 2 * 257)
        self.assertLess(max(ports), LINUX_EPHEMERAL_PORTS.start)
        self.assertGreaterEqual(min(ports), 1024)

    def test_the_default_base_port_is_lowered_when_a_host_holds_too_many_contexts_for_it(self):
        written = generate("--rus", "1000", "--bus", "1000")
        self.assertEqual(written.returncode, 0, written.stderr)
        ports = [port for control, endpoint, _ in contexts_of(written.stdout) for port in (control, endpoint)]
        self.assertEqual(len(set(ports)), 2 * 2001)
        self.assertLess(max(ports), LINUX_EPHEMERAL_PORTS.start)

    def test_contexts_that_cannot_fit_below_the_ephemeral_range_are_refused_unless_a_base_port_is_given(self):
        refused = generate("--rus", "2000", "--bus", "2000", "--list")
        self.assertEqual(refused.returncode, 2)
        self.assertIn("4001 contexts on one host", refused.stderr)
        self.assertIn("ephemeral ports (32768-60999)", refused.stderr)
        self.assertEqual(refused.stdout, "")

    def test_a_base_port_in_this_machines_ephemeral_range_is_written_with_a_warning(self):
        with open("/proc/sys/net/ipv4/ip_local_port_range", encoding="ascii") as f:
            low, high = (int(x) for x in f.read().split())
        written = generate("--rus", "1", "--bus", "1", "--base-port", str(low), "--list")
        self.assertEqual(written.returncode, 0, written.stderr)
        self.assertIn(f"warning: ports {low}-{low + 21} reach into this machine's ephemeral range {low}-{high}",
                      written.stderr)

    def test_a_base_port_that_puts_a_context_above_65535_is_refused(self):
        refused = generate("--rus", "2", "--bus", "2", "--base-port", "65500")
        self.assertEqual(refused.returncode, 2)
        self.assertIn("need ports up to 65541, above 65535", refused.stderr)


@unittest.skipUnless(EXECUTIVE, "DAQX_EXECUTIVE names no executive")
class AgainstTheExecutive(unittest.TestCase):
    def test_the_128x128_partition_is_accepted_by_the_executive(self):
        written = subprocess.run([sys.executable, EVB_PARTITION, "--rus", "128", "--bus", "128", "--executive",
                                  EXECUTIVE], capture_output=True, text=True, timeout=60, check=True)
        with tempfile.NamedTemporaryFile("w", suffix=".xml") as f:
            f.write(written.stdout)
            f.flush()
            checked = subprocess.run([EXECUTIVE, "--check", "--config", f.name], capture_output=True, text=True,
                                     timeout=60)
        self.assertEqual(checked.returncode, 0, checked.stdout + checked.stderr)


if __name__ == "__main__":
    unittest.main()
