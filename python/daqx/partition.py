"""The partition object model: a partition's contexts, endpoints, modules, applications with their parameters and
its thread policy, checked against what the executive declares (params.py) and written as partition XML
(docs/configuration.md)."""

import re
import xml.etree.ElementTree as ElementTree
from dataclasses import dataclass, field
from xml.sax.saxutils import escape, quoteattr

from .params import ParameterCatalog, ParameterError, find_executive

XML_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]*")


class PartitionError(ValueError):
    """A partition the executive would refuse, said in the terms of the partition."""


@dataclass
class Property:
    """One parameter: <name type="...">value</name>; type is written only when given."""
    name: str
    value: object
    type: str = None

    def xml(self):
        type_attribute = "" if self.type is None else f" type={quoteattr(self.type)}"
        return f"<{self.name}{type_attribute}>{escape(text_of(self.value))}</{self.name}>"


def text_of(value):
    """Python values as the partition writes them: booleans in lower case."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def properties_of(values):
    """A list of Property from a dict {name: value}, a list of (name, value[, type]) or of Property."""
    if values is None:
        return []
    if isinstance(values, dict):
        values = values.items()
    result = [v if isinstance(v, Property) else Property(*v) for v in values]
    for p in result:
        if not XML_NAME.fullmatch(p.name):
            raise PartitionError(f"'{p.name}' cannot be a parameter name (an XML element name)")
    return result


def properties_from_xml(text):
    """Parameters given as XML on a command line (<mode>throughput</mode><packSize>65536</packSize>) as a list
    of Property."""
    try:
        parsed = ElementTree.fromstring(f"<Properties>{text}</Properties>")
    except ElementTree.ParseError as error:
        raise PartitionError(f"'{text}' is not a list of XML elements: {error}") from None
    return [Property(e.tag, e.text or "", e.get("type")) for e in parsed]


@dataclass
class Endpoint:
    protocol: str
    hostname: str
    port: int
    network: str = "data"
    properties: list = field(default_factory=list)

    def __post_init__(self):
        self.properties = properties_of(self.properties)


@dataclass
class Application:
    cls: str
    id: int
    instance: int
    network: str = None   # None: the application uses no transport
    properties: list = field(default_factory=list)

    def __post_init__(self):
        self.properties = properties_of(self.properties)


@dataclass
class Context:
    url: str
    endpoint: Endpoint = None
    modules: list = field(default_factory=list)        # module paths, loaded in this order
    applications: list = field(default_factory=list)


@dataclass
class ThreadRule:
    """<Policy>'s <Thread>: the threads whose names match pattern, in context, run on cores (a CPU list)."""
    pattern: str
    cores: str
    context: str

    def xml(self):
        return (f"<Thread pattern={quoteattr(self.pattern)} cores={quoteattr(str(self.cores))} "
                f"context={quoteattr(self.context)}/>")


@dataclass
class PoolRule:
    """<Policy>'s <Pool>: the memory pools whose names match pattern come from allocator."""
    pattern: str
    allocator: str

    def xml(self):
        return f"<Pool pattern={quoteattr(self.pattern)} allocator={quoteattr(self.allocator)}/>"


@dataclass
class Partition:
    name: str
    contexts: list = field(default_factory=list)  # in enable order
    policy: list = field(default_factory=list)    # ThreadRule and PoolRule; no <Policy> when empty
    comment: list = field(default_factory=list)   # lines of the header comment

    def check(self, catalog=None):
        """Raises PartitionError for what the executive would refuse: an unknown parameter, a value of the wrong
        type or out of bounds, two applications with one id. Parameters are checked against catalog (a
        ParameterCatalog) when one is given."""
        ids = {}
        for context in self.contexts:
            for application in context.applications:
                if application.id in ids:
                    raise PartitionError(f"id {application.id} is given to {ids[application.id]} and to "
                                         f"{application.cls} {application.instance}")
                ids[application.id] = f"{application.cls} {application.instance}"
        for line in self.comment:
            if "--" in line:
                raise PartitionError(f"an XML comment cannot hold '--': {line!r}")
        if catalog is None:
            return
        try:
            for context in self.contexts:
                if context.endpoint is not None:
                    for p in context.endpoint.properties:
                        catalog.check_endpoint(context.endpoint.protocol, p.name, text_of(p.value))
                for application in context.applications:
                    for p in application.properties:
                        catalog.check_application(application.cls, p.name, text_of(p.value))
        except ParameterError as error:
            raise PartitionError(str(error)) from None

    def check_against_executive(self, executive=None):
        """check() against the listing of executive (default: params.find_executive()); without any executive,
        only what needs no listing is checked. Returns whether the parameters were checked."""
        executive = executive or find_executive()
        try:
            catalog = ParameterCatalog.load(executive) if executive else None
        except ParameterError as error:
            raise PartitionError(str(error)) from None
        self.check(catalog)
        return catalog is not None

    def xml(self):
        out = []
        if self.comment:
            out = [("<!-- " if k == 0 else "     ") + line for k, line in enumerate(self.comment)]
            out[-1] += " -->"
        out.append(f"<Partition name={quoteattr(self.name)}>")
        if self.policy:
            out.append("  <Policy>")
            out += [f"    {rule.xml()}" for rule in self.policy]
            out.append("  </Policy>")
        for context in self.contexts:
            out += context_xml(context)
        out.append("</Partition>")
        return "\n".join(out) + "\n"


def context_xml(context):
    out = [f"  <Context url={quoteattr(context.url)}>"]
    e = context.endpoint
    if e is not None:
        start = (f"    <Endpoint protocol={quoteattr(e.protocol)} hostname={quoteattr(e.hostname)} "
                 f"port={quoteattr(str(e.port))} network={quoteattr(e.network)}")
        if e.properties:
            # An endpoint's few parameters fit on one line.
            out += [start + ">", f"      <Properties>{''.join(p.xml() for p in e.properties)}</Properties>",
                    "    </Endpoint>"]
        else:
            out.append(start + "/>")
    out += [f"    <Module path={quoteattr(path)}/>" for path in context.modules]
    for a in context.applications:
        network = "" if a.network is None else f" network={quoteattr(a.network)}"
        start = f"    <Application class={quoteattr(a.cls)} id=\"{a.id}\" instance=\"{a.instance}\"{network}"
        if a.properties:
            out += [start + ">", "      <Properties>"] + [f"        {p.xml()}" for p in a.properties]
            out += ["      </Properties>", "    </Application>"]
        else:
            out.append(start + "/>")
    out.append("  </Context>")
    return out
