"""Names of suites built from installed packages: what claims a name, and what does not."""

from __future__ import annotations

from pathlib import Path

import pytest

from toolproof.spec import SpecError, load_suite, providers
from toolproof.spec.providers import SuiteProvider, provided_suite, split_name
from toolproof_helpers import make_task, write_suite


@pytest.mark.parametrize(
    ("name", "parts"),
    [
        ("bfcl", ("bfcl", None)),
        ("bfcl:simple_python", ("bfcl", "simple_python")),
        ("bfcl:../../etc/passwd", None),
        ("bfcl:simple python", None),
        ("BFCL", None),
        ("bfcl:", None),
        ("nosuch:thing", None),
        ("core", None),
        ("bfcl:a:b", None),
    ],
)
def test_only_registered_well_formed_names_are_claimed(
    name: str, parts: tuple[str, str | None] | None
) -> None:
    assert split_name(name) == parts


def test_a_hostile_name_falls_through_to_the_ordinary_error() -> None:
    with pytest.raises(SpecError, match=r"bfcl:\.\./\.\./etc: no such file or directory"):
        load_suite("bfcl:../../etc")


def test_a_directory_of_that_name_wins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    write_suite(tmp_path / "bfcl", [make_task(id="local")])
    assert [t.id for t in load_suite("bfcl").tasks] == ["local"]


def test_a_missing_builder_module_names_the_install_command(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(
        providers.PROVIDERS,
        "ghost",
        SuiteProvider("toolproof_no_such_module:build", "ghost-bench", "pip install ghost-bench"),
    )
    with pytest.raises(SpecError, match="needs ghost-bench: pip install ghost-bench"):
        provided_suite("ghost:part")


@pytest.mark.parametrize(
    ("name", "parts"),
    [
        ("agentdojo", ("agentdojo", None, None)),
        (
            "agentdojo:banking@important_instructions",
            ("agentdojo", "banking", "important_instructions"),
        ),
        ("agentdojo@tool_knowledge", ("agentdojo", None, "tool_knowledge")),
        ("agentdojo:banking@../../x", None),
        ("agentdojo:banking@a b", None),
        ("agentdojo:banking@", None),
        ("agentdojo@a@b", None),
    ],
)
def test_a_variant_is_claimed_only_when_well_formed(
    name: str, parts: tuple[str, str | None, str | None] | None
) -> None:
    assert providers.split_variant(name) == parts


def test_a_variant_goes_only_to_a_provider_that_takes_one() -> None:
    with pytest.raises(SpecError, match=r"bfcl takes no @variant; drop '@x'"):
        provided_suite("bfcl:simple_python@x")
    assert providers.with_variant("agentdojo:banking", "x") == "agentdojo:banking@x"
    assert providers.with_variant("agentdojo@y", "x") == "agentdojo@x"
    for name in ("bfcl", "core"):
        with pytest.raises(SpecError, match="takes no @variant"):
            providers.with_variant(name, "x")
