"""The parameters daqx-executive declares (`--list-params --json`), loaded once per executive, and the checks of a
parameter's name, type and bounds against them."""

import difflib
import json
import math
import os
import re
import shutil
import subprocess

# A repository's own Release build, where scripts look first when no executive is named.
REPOSITORY = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILT_EXECUTIVE = os.path.join(REPOSITORY, "build", "release", "executive", "daqx-executive")

UNSIGNED = re.compile(r"\+?[0-9]+")
INTEGER = re.compile(r"[-+]?[0-9]+")
BOOLEANS = ("true", "false", "1", "0", "yes", "no", "on", "off")

_listings = {}  # executive path -> ParameterCatalog: the listing loads modules, so it is run once per process


class ParameterError(ValueError):
    """A parameter the executive would refuse: unknown name, wrong type, out of bounds."""


def find_executive():
    """The executive to validate against: $DAQX_EXECUTIVE, this repository's Release build, or the one on PATH;
    None when there is none (the caller then writes its partition unchecked)."""
    given = os.environ.get("DAQX_EXECUTIVE")
    if given:
        return given
    if os.access(BUILT_EXECUTIVE, os.X_OK):
        return BUILT_EXECUTIVE
    return shutil.which("daqx-executive")


class ParameterCatalog:
    """Every application's and transport's parameters, as the executive lists them."""

    def __init__(self, listing):
        self.common = {p["name"]: p for p in listing.get("applicationParameters", [])}
        self.applications = {}
        self.transports = {}
        for module in listing.get("modules", []):
            for application in module.get("applications", []):
                self.applications[application["class"]] = {p["name"]: p for p in application["parameters"]}
            for transport in module.get("transports", []):
                self.transports[transport["protocol"]] = {p["name"]: p for p in transport["parameters"]}

    @classmethod
    def load(cls, executive):
        if executive not in _listings:
            try:
                answer = subprocess.run([executive, "--list-params", "--json"], capture_output=True, text=True,
                                        timeout=60, check=False)
            except OSError as error:
                raise ParameterError(f"cannot run {executive}: {error.strerror}") from None
            if answer.returncode != 0:
                raise ParameterError(f"{executive} --list-params --json failed: {answer.stderr.strip()}")
            _listings[executive] = cls(json.loads(answer.stdout))
        return _listings[executive]

    def check_application(self, cls, name, value):
        if cls not in self.applications:
            raise ParameterError(f"no module declares application class {cls}{suggestion(cls, self.applications)}")
        declared = dict(self.common, **self.applications[cls])
        check(f"application {cls}", declared, name, value)

    def check_endpoint(self, protocol, name, value):
        if protocol not in self.transports:
            raise ParameterError(f"no module declares transport protocol '{protocol}'"
                                 f"{suggestion(protocol, self.transports)}")
        check(f"transport {protocol}", self.transports[protocol], name, value)


def suggestion(name, known):
    close = difflib.get_close_matches(name, list(known), n=1)
    return f"; did you mean {close[0]}?" if close else ""


def check(owner, declared, name, value):
    if name not in declared:
        raise ParameterError(f"{owner} has no parameter '{name}'{suggestion(name, declared)}")
    check_value(f"{owner}: parameter {name}", declared[name], str(value))


def check_value(what, parameter, text):
    kind = parameter["type"]
    if kind == "unsigned" or kind == "int":
        if not (UNSIGNED if kind == "unsigned" else INTEGER).fullmatch(text):
            raise ParameterError(f"{what} is {'an unsigned integer' if kind == 'unsigned' else 'an integer'}, "
                                 f"not '{text}'")
        number = int(text)
    elif kind == "double":
        try:
            number = float(text)
        except ValueError:
            number = math.nan
        if not math.isfinite(number):
            raise ParameterError(f"{what} is a finite number, not '{text}'")
    elif kind == "bool":
        if text.lower() not in BOOLEANS:
            raise ParameterError(f"{what} is true or false, not '{text}'")
        return
    else:
        # string, list and applications: only a declared set of values is checked here.
        allowed = parameter.get("allowed") or []
        if allowed and text not in allowed:
            raise ParameterError(f"{what} is one of {', '.join(allowed)}, not '{text}'")
        return
    low, high = parameter.get("min"), parameter.get("max")
    if (low is not None and number < low) or (high is not None and number > high):
        bounds = f"{'-inf' if low is None else low} to {'inf' if high is None else high}"
        raise ParameterError(f"{what} = {text} is out of bounds ({bounds})")
