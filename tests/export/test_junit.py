"""JUnit XML: the shape CI systems read (the common JUnit XSD), one case per episode."""

from __future__ import annotations

import io
import os
import re
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from toolproof.export import export_run
from toolproof.scoring import CheckResult

from .runs import record, varied_records, write_run

# The common JUnit XSD (Jenkins' junit-10.xsd, which GitLab and the GitHub reporters read):
# which children and attributes each element may have, and the required attributes.
CHILDREN = {
    "testsuites": {"testsuite"},
    "testsuite": {"properties", "testcase", "system-out", "system-err"},
    "properties": {"property"},
    "property": set(),
    "testcase": {"skipped", "error", "failure", "system-out", "system-err"},
    "skipped": set(),
    "error": set(),
    "failure": set(),
}
ATTRIBUTES = {
    "testsuites": {"name", "tests", "failures", "errors", "skipped", "time", "disabled"},
    "testsuite": {
        "name",
        "tests",
        "failures",
        "errors",
        "skipped",
        "time",
        "timestamp",
        "hostname",
        "id",
        "package",
        "disabled",
        "file",
        "log",
        "url",
        "version",
        "group",
    },
    "properties": set(),
    "property": {"name", "value"},
    "testcase": {"name", "classname", "time", "assertions", "status", "file", "line", "group"},
    "skipped": {"message"},
    "error": {"message", "type"},
    "failure": {"message", "type"},
}
REQUIRED = {
    "testsuite": {"name", "tests"},
    "property": {"name", "value"},
    "testcase": {"name", "classname"},
}
NUMBERS = {"tests", "failures", "errors", "skipped"}


def validate(root: ET.Element) -> None:
    """Assert the document has the common JUnit XSD's shape and consistent counts."""
    assert root.tag == "testsuites"

    def walk(element: ET.Element) -> None:
        assert set(element.attrib) <= ATTRIBUTES[element.tag], element.tag
        assert REQUIRED.get(element.tag, set()) <= set(element.attrib), element.tag
        for name in NUMBERS & set(element.attrib):
            assert int(element.attrib[name]) >= 0
        if "time" in element.attrib:
            assert float(element.attrib["time"]) >= 0
        for child in element:
            assert child.tag in CHILDREN[element.tag], f"{child.tag} in {element.tag}"
            walk(child)
        if element.tag == "testcase":
            assert len(list(element)) <= 1  # one outcome at most
        if element.tag == "testsuite":
            cases = element.findall("testcase")
            assert int(element.attrib["tests"]) == len(cases)
            for tag, attribute in (("failure", "failures"), ("error", "errors")):
                assert int(element.attrib[attribute]) == sum(
                    1 for c in cases if c.find(tag) is not None
                )
            assert int(element.attrib["skipped"]) == sum(
                1 for c in cases if c.find("skipped") is not None
            )

    walk(root)


def _junit(run: Path) -> ET.Element:
    buffer = io.BytesIO()
    export_run(run, "junit", buffer)
    return ET.fromstring(buffer.getvalue())


def test_each_episode_is_a_case_and_outcomes_map_to_the_schema(varied_run: Path) -> None:
    root = _junit(varied_run)
    validate(root)
    (suite,) = root.findall("testsuite")
    assert suite.attrib["name"] == "demo"
    assert (root.attrib["tests"], root.attrib["failures"]) == ("6", "2")
    assert (root.attrib["errors"], root.attrib["skipped"]) == ("1", "1")
    props = {p.attrib["name"]: p.attrib["value"] for p in suite.iter("property")}
    assert props["agent"] == "openai:gpt-4o-mini"
    cases = {c.attrib["name"]: c for c in suite.findall("testcase")}
    assert cases["alpha#0"].attrib["classname"] == "demo.normal"
    assert list(cases["alpha#0"]) == []  # passed
    failure = cases["alpha#1"].find("failure")
    assert failure is not None and failure.attrib["type"] == "wrong_value"
    assert "stock_updated" in (failure.text or "")
    skipped = cases["beta#0"].find("skipped")  # infra error: out of the denominator
    assert skipped is not None and "HTTP 503" in skipped.attrib["message"]
    error = cases["gamma#0"].find("error")  # the task's own check is broken
    assert error is not None and error.attrib["type"] == "task_error"
    agent_error = cases["eps#0"].find("failure")  # the agent's error is a failure
    assert agent_error is not None and agent_error.attrib["type"] == "agent_error"
    assert "not JSON" in (agent_error.text or "")


def test_text_xml_cannot_hold_is_replaced_not_fatal(varied_run: Path) -> None:
    root = _junit(varied_run)
    failure = root.find(".//testcase[@name='alpha#1']/failure")
    assert failure is not None
    assert '\ufffd\ufffd\ufffd[31m <tag> & "quotes" \ufffd end' in (failure.text or "")


EXAMPLES = int(os.environ.get("TOOLPROOF_FUZZ_EXAMPLES", "25"))


@settings(max_examples=EXAMPLES, derandomize=True, deadline=None)
@given(
    detail=st.text(st.characters(exclude_categories=("Cs",)), max_size=60),
    error=st.text(st.characters(exclude_categories=("Cs",)), max_size=60),
    name=st.text(st.characters(exclude_categories=("Cs",)), min_size=1, max_size=20),
)
def test_any_agent_text_gives_a_well_formed_report(detail: str, error: str, name: str) -> None:
    with tempfile.TemporaryDirectory() as folder:
        check = CheckResult(name=name, kind="state", passed=False, score=0.0, detail=detail)
        records = [
            record("t", 0, passed=False, checks=[check], answer=detail, error=error),
            *varied_records()[:1],
        ]
        run = write_run(Path(folder) / "run", records)
        root = _junit(run)  # parses: nothing the agent wrote breaks the document
        validate(root)
        failure = root.find(".//testcase[@name='t#0']/failure")
        assert failure is not None
        shown = re.sub("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]", "\ufffd", name)
        shown = shown.replace("\r\n", "\n").replace("\r", "\n")  # as XML parsers read it
        assert shown in (failure.text or "")
