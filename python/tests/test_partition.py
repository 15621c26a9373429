"""Specification of the partition model: what it accepts, what it refuses and why, and that what it writes is a
partition the executive accepts. Run by ctest with DAQX_EXECUTIVE naming the built executive."""

import os
import subprocess
import sys
import tempfile
import unittest
import xml.etree.ElementTree as ElementTree

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from daqx.params import ParameterCatalog  # noqa: E402
from daqx.partition import (  # noqa: E402
    Application, Context, Endpoint, Partition, PartitionError, Property, ThreadRule, properties_from_xml)

EXECUTIVE = os.environ.get("DAQX_EXECUTIVE")
EVB_PARTITION = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "apps", "evb", "tools",
                             "evb_partition.py")


def evb_1x1(evm_properties=None, name="evb-1x1"):
    """An EvM, an RU and a BU, each in its own context over tcp on 127.0.0.1."""
    partition = Partition(name, comment=["A 1x1 event builder for the tests."])
    for k, (cls, tid, props) in enumerate([("evb::BU", 200, {"slots": 4}), ("evb::RU", 100, {"fragmentSize": 2048}),
                                           ("evb::EvM", 10, evm_properties or {"eventsPerRequest": 8})]):
        url = f"http://127.0.0.1:{41000 + 10 * k}"
        partition.contexts.append(Context(
            url, Endpoint("tcp", "127.0.0.1", 41001 + 10 * k, "data", {"mode": "throughput"}),
            ["libdaqx_pttcp.so", "libdaqx_evb.so"], [Application(cls, tid, 0, "data", props)]))
    partition.policy.append(ThreadRule("evb/*", "0", "http://127.0.0.1:41000"))
    return partition


@unittest.skipUnless(EXECUTIVE, "DAQX_EXECUTIVE names no executive")
class AgainstTheExecutivesListing(unittest.TestCase):
    def setUp(self):
        self.catalog = ParameterCatalog.load(EXECUTIVE)

    def test_a_valid_event_builder_partition_passes(self):
        evb_1x1().check(self.catalog)

    def test_a_misspelt_parameter_is_refused_with_the_name_it_resembles(self):
        with self.assertRaises(PartitionError) as refused:
            evb_1x1({"eventsPerReqest": 8}).check(self.catalog)
        self.assertEqual(str(refused.exception), "application evb::EvM has no parameter 'eventsPerReqest'; "
                                                 "did you mean eventsPerRequest?")

    def test_an_unknown_endpoint_parameter_is_refused(self):
        partition = evb_1x1()
        partition.contexts[0].endpoint.properties.append(Property("moed", "latency"))
        with self.assertRaisesRegex(PartitionError, "transport tcp has no parameter 'moed'; did you mean mode?"):
            partition.check(self.catalog)

    def test_a_value_of_the_wrong_type_is_refused(self):
        with self.assertRaisesRegex(PartitionError, "eventsPerRequest is an unsigned integer, not 'many'"):
            evb_1x1({"eventsPerRequest": "many"}).check(self.catalog)

    def test_a_value_out_of_bounds_is_refused_with_the_bounds(self):
        with self.assertRaisesRegex(PartitionError, r"eventsPerRequest = 5000 is out of bounds \(0 to 4096\)"):
            evb_1x1({"eventsPerRequest": 5000}).check(self.catalog)

    def test_a_value_outside_the_allowed_ones_is_refused(self):
        with self.assertRaisesRegex(PartitionError, "ruFailurePolicy is one of fail, incomplete, not 'ignore'"):
            evb_1x1({"ruFailurePolicy": "ignore"}).check(self.catalog)

    def test_parameters_every_application_has_are_accepted(self):
        evb_1x1({"transportMode": "latency", "dispatch": "inline"}).check(self.catalog)

    def test_the_written_partition_is_accepted_by_the_executive(self):
        self.assertExecutiveAccepts(evb_1x1(name='quotes " and <angles> & ampersands').xml())

    def test_evb_partition_py_writes_a_partition_the_executive_accepts(self):
        written = subprocess.run([sys.executable, EVB_PARTITION, "--rus", "2", "--bus", "2", "--pin", "--cores",
                                  "0-1", "--output", "consumer", "--check-data", "true", "--executive", EXECUTIVE],
                                 capture_output=True, text=True, check=True)
        self.assertExecutiveAccepts(written.stdout)

    def test_evb_partition_py_refuses_a_value_the_executive_would_refuse(self):
        refused = subprocess.run([sys.executable, EVB_PARTITION, "--events-per-request", "5000", "--executive",
                                  EXECUTIVE], capture_output=True, text=True)
        self.assertEqual(refused.returncode, 2)
        self.assertIn("eventsPerRequest = 5000 is out of bounds", refused.stderr)

    def assertExecutiveAccepts(self, text):
        with tempfile.NamedTemporaryFile("w", suffix=".xml") as f:
            f.write(text)
            f.flush()
            checked = subprocess.run([EXECUTIVE, "--check", "--config", f.name], capture_output=True, text=True)
        self.assertEqual(checked.returncode, 0, checked.stdout + checked.stderr)


class Writing(unittest.TestCase):
    def test_names_and_values_are_escaped(self):
        partition = evb_1x1({"eventsPerRequest": 8}, name='a "b" <c> & d')
        partition.contexts[0].applications[0].properties.append(Property("outputDirectory", "/tmp/<&>", "string"))
        root = ElementTree.fromstring(partition.xml())
        self.assertEqual(root.get("name"), 'a "b" <c> & d')
        self.assertEqual(root.find("Context/Application/Properties/outputDirectory").text, "/tmp/<&>")

    def test_the_written_tree_holds_the_model(self):
        root = ElementTree.fromstring(evb_1x1().xml())
        self.assertEqual([c.get("url") for c in root.findall("Context")],
                         ["http://127.0.0.1:41000", "http://127.0.0.1:41010", "http://127.0.0.1:41020"])
        self.assertEqual(root.find("Policy/Thread").attrib,
                         {"pattern": "evb/*", "cores": "0", "context": "http://127.0.0.1:41000"})
        self.assertEqual(root.find("Context/Endpoint/Properties/mode").text, "throughput")
        self.assertEqual([m.get("path") for m in root.findall("Context/Module")][:2],
                         ["libdaqx_pttcp.so", "libdaqx_evb.so"])

    def test_booleans_are_written_in_lower_case(self):
        self.assertEqual(Property("checkData", True, "bool").xml(), '<checkData type="bool">true</checkData>')

    def test_a_parameter_name_that_is_no_xml_name_is_refused(self):
        with self.assertRaisesRegex(PartitionError, "'a b' cannot be a parameter name"):
            Application("evb::EvM", 10, 0, properties={"a b": 1})

    def test_parameters_given_as_xml_text_become_properties(self):
        self.assertEqual(properties_from_xml('<mode>throughput</mode><packSize type="unsigned">65536</packSize>'),
                         [Property("mode", "throughput"), Property("packSize", "65536", "unsigned")])

    def test_parameters_given_as_malformed_xml_text_are_refused(self):
        with self.assertRaisesRegex(PartitionError, "'<mode>throughput' is not a list of XML elements"):
            properties_from_xml("<mode>throughput")

    def test_two_applications_with_one_id_are_refused(self):
        partition = evb_1x1()
        partition.contexts[1].applications[0].id = 200
        with self.assertRaisesRegex(PartitionError, "id 200 is given to evb::BU 0 and to evb::RU 0"):
            partition.check()

    def test_a_comment_holding_two_hyphens_is_refused(self):
        partition = evb_1x1()
        partition.comment.append("run with --rus 2")
        with self.assertRaisesRegex(PartitionError, "an XML comment cannot hold '--'"):
            partition.check()


if __name__ == "__main__":
    unittest.main()
