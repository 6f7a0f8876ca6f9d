"""JUnit XML: one test case per episode, for CI systems that read test reports.

The shape is the common one CI systems (Jenkins, GitLab, GitHub Actions reporters) read::

    <testsuites name tests failures errors skipped time>
      <testsuite name=SUITE tests failures errors skipped time timestamp>
        <properties><property name value/>...</properties>
        <testcase classname=SUITE.CATEGORY name=TASK#EPOCH time>
          (nothing: passed)
          <failure message type>the checks that failed</failure>    the agent failed
          <error message type>the broken check</error>              a broken task check
          <skipped message/>                                        an infra error
        </testcase>

An infra error is *skipped*: it is out of the score's denominator, as everywhere in
toolproof; a task whose own check is broken is an *error*; anything the agent did
(a wrong answer, an ``agent_error``, a step limit) is a *failure*. The counts are taken
before the first test case from ``run.db``'s rows, so the file is written in one pass.
Text the agent wrote is cleaned of what XML 1.0 cannot hold (control characters).
"""

from __future__ import annotations

import re
from typing import IO
from xml.sax.saxutils import escape, quoteattr

from toolproof.results import EpisodeRecord

from ._registry import exporter
from ._source import RunSource

_NOT_XML = re.compile("[^\u0009\u000a\u000d\u0020-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
"""Characters XML 1.0 cannot hold (control characters, lone surrogates, U+FFFE/U+FFFF)."""

DETAIL_CHARS = 2000
"""The most characters of one check's detail written in a failure's text."""


def xml_text(value: object) -> str:
    """Text safe to put in XML content: disallowed characters become U+FFFD."""
    return escape(_NOT_XML.sub("\ufffd", str(value)))


def xml_attr(value: object) -> str:
    """A quoted XML attribute value, disallowed characters replaced."""
    return quoteattr(_NOT_XML.sub("\ufffd", str(value)))


@exporter("junit", ".xml", "JUnit XML, one test case per episode (for CI).")
def write_junit(source: RunSource, out: IO[bytes]) -> int:
    """Write the run as JUnit XML (UTF-8)."""
    tally = source.tally()
    task_errors = source.reader.count(
        where="termination != 'infra_error' AND json_extract(record, '$.score.task_error') = 1"
    )
    failures = tally.failed - task_errors
    suite = source.suite_name
    counts = (
        f"tests={xml_attr(tally.episodes)} failures={xml_attr(failures)} "
        f"errors={xml_attr(task_errors)} skipped={xml_attr(tally.infra_errors)} "
        f"time={xml_attr(f'{tally.duration_s:.3f}')}"
    )
    write = out.write
    write(b'<?xml version="1.0" encoding="UTF-8"?>\n')
    write(f"<testsuites name={xml_attr('toolproof ' + suite)} {counts}>\n".encode())
    started = str(source.meta.get("started_at") or "")
    stamp = f" timestamp={xml_attr(started)}" if started else ""
    write(f"  <testsuite name={xml_attr(suite)} {counts}{stamp}>\n".encode())
    write(b"    <properties>\n")
    for name, value in (
        ("agent", source.agent),
        ("model", source.model),
        ("suite.version", source.suite.get("version", "")),
        ("suite.digest", source.suite.get("digest", "")),
        ("run_dir", str(source.run_dir)),
    ):
        write(f"      <property name={xml_attr(name)} value={xml_attr(value)}/>\n".encode())
    write(b"    </properties>\n")
    count = 0
    for record in source.records():
        write(_case(record, suite).encode("utf-8"))
        count += 1
    write(b"  </testsuite>\n</testsuites>\n")
    return count


def _case(record: EpisodeRecord, suite: str) -> str:
    score = record.score
    head = (
        f"    <testcase classname={xml_attr(f'{suite}.{record.task.category}')} "
        f"name={xml_attr(record.key)} time={xml_attr(f'{record.trajectory.duration_s:.3f}')}"
    )
    if score.passed:
        return head + "/>\n"
    if record.infra_error:
        why = record.trajectory.error or "; ".join(record.infra_errors[-1:]) or "infra error"
        body = f"      <skipped message={xml_attr('infra_error: ' + why[:500])}/>\n"
    elif score.task_error:
        broken = [c for c in score.checks if c.task_error]
        text = "\n".join(f"{c.name}: {c.detail[:DETAIL_CHARS]}" for c in broken)
        message = "a check of the task is broken: " + ", ".join(c.name for c in broken)
        body = (
            f"      <error message={xml_attr(message)} type={xml_attr('task_error')}>"
            f"{xml_text(text)}</error>\n"
        )
    else:
        kind = score.failure_mode or score.termination.value
        message = f"{score.level.value} ({score.termination.value}"
        message += f", {score.failure_mode})" if score.failure_mode else ")"
        failed = [c for c in score.checks if not c.passed]
        lines = [f"{c.name} [{c.kind}]: {c.detail[:DETAIL_CHARS]}" for c in failed]
        if record.trajectory.error:
            lines.append(f"error: {record.trajectory.error[:DETAIL_CHARS]}")
        body = (
            f"      <failure message={xml_attr(message)} type={xml_attr(kind)}>"
            f"{xml_text(chr(10).join(lines))}</failure>\n"
        )
    return f"{head}>\n{body}    </testcase>\n"
