"""Every span name and ``leasehold.*`` attribute the code uses is in the one documented table.

The table is the docstring of ``leasehold.telemetry`` (ARCHITECTURE §8: attributes documented in one
place). This reads the sources of the services and shared libraries and collects the names given
to ``telemetry.span`` (and the helpers that wrap it) and the keyword attributes they pass.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from leasehold import telemetry

ROOT = Path(__file__).resolve().parents[3]
SOURCES = [
    *ROOT.joinpath("services").rglob("*.py"),
    *ROOT.joinpath("libs", "leasehold").rglob("*.py"),
]
# Calls that create spans or attributes; their keywords are leasehold.* attributes.
SPAN_CALLS = {"span", "intent_span", "validating", "_role_span", "_truncate_span", "attrs"}
NOT_ATTRIBUTES = {"parent", "links"}


def _used() -> tuple[set[str], set[str]]:
    names: set[str] = set()
    attributes: set[str] = set()
    for path in SOURCES:
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if called not in SPAN_CALLS:
                continue
            attributes |= {k.arg for k in node.keywords if k.arg and k.arg not in NOT_ATTRIBUTES}
            if called != "attrs":
                names |= {a.value for a in node.args if isinstance(a, ast.Constant)
                          and isinstance(a.value, str) and "." in a.value}  # fmt: skip
    return names, attributes


def test_every_span_and_attribute_is_documented():
    doc = telemetry.__doc__ or ""
    documented_attributes = set(re.findall(r"``leasehold\.(\w+)``", doc))
    documented_spans = set(re.findall(r"^``([a-z_]+\.[a-z_]+)``", doc, re.MULTILINE))
    names, attributes = _used()
    assert names, "no span found: the scan is broken"
    assert names - documented_spans == set()
    assert attributes - documented_attributes == set()
    assert documented_attributes - attributes == set(), "documented but never set"
