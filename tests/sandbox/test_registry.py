"""The backend registry and the public exports."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence

import pytest

import toolproof.sandbox as sandbox_pkg
from toolproof.sandbox import (
    ExecResult,
    ResourceLimits,
    Sandbox,
    SandboxError,
    _registry,
    available_backends,
    default_backend,
    get_backend,
    sandbox,
)


@pytest.fixture
def clean_registry() -> Iterator[None]:
    saved = dict(_registry._REGISTRY)
    yield
    _registry._REGISTRY.clear()
    _registry._REGISTRY.update(saved)


def test_exports_are_pinned_and_sorted() -> None:
    expected = [
        "SANDBOX_GID",
        "SANDBOX_UID",
        "ExecResult",
        "ResourceLimits",
        "Sandbox",
        "SandboxError",
        "SpawnerLost",
        "available_backends",
        "default_backend",
        "get_backend",
        "reachable_tmp",
        "sandbox",
        "sandbox_owner",
    ]
    assert sandbox_pkg.__all__ == expected


def test_builtin_backends_are_registered() -> None:
    for name in ("bwrap", "docker", "podman", "process"):
        assert get_backend(name).name == name
    assert get_backend("process").isolated is False
    assert get_backend("bwrap").isolated is True


def test_unknown_name_lists_valid_names() -> None:
    with pytest.raises(SandboxError) as info:
        get_backend("firecracker")
    assert "'firecracker'" in str(info.value)
    assert "bwrap, docker, podman, process" in str(info.value)


@pytest.mark.usefixtures("clean_registry")
def test_register_and_duplicate_raises() -> None:
    @sandbox("fake")
    class Fake(Sandbox):
        isolated = False

        def exec(
            self,
            command: str | Sequence[str],
            *,
            stdin: str | None = None,
            cwd: str = "/workspace",
            env: Mapping[str, str] | None = None,
            limits: ResourceLimits | None = None,
        ) -> ExecResult:
            return ExecResult(0, "", "", 0.0, None)

    assert get_backend("fake") is Fake and Fake.name == "fake"
    assert "fake" in available_backends()
    with pytest.raises(SandboxError, match=r"'fake' is already registered by .*Fake"):
        sandbox("fake")(Fake)


def test_decorator_rejects_bad_use() -> None:
    with pytest.raises(SandboxError, match="non-empty string"):
        sandbox("")
    with pytest.raises(SandboxError, match="must decorate a Sandbox subclass"):
        sandbox("nope")(int)  # type: ignore[type-var]


def test_process_is_always_available() -> None:
    assert "process" in available_backends()


def test_default_backend_prefers_bwrap() -> None:
    if get_backend("bwrap").available():
        assert default_backend() == "bwrap"
    else:
        with pytest.raises(SandboxError, match="--run-commands-on-host"):
            default_backend()


def test_without_bwrap_there_is_no_silent_fallback(monkeypatch: pytest.MonkeyPatch) -> None:
    """Invariant 9: where bwrap cannot run, nothing runs on the host unless the run says so."""
    bwrap = get_backend("bwrap")
    monkeypatch.setattr(bwrap, "unavailable_reason", classmethod(lambda cls: "no bwrap here"))
    with pytest.raises(SandboxError) as refused:
        default_backend()
    message = str(refused.value)
    assert "no bwrap here" in message and "--run-commands-on-host" in message
    assert "podman" in message  # the isolated way out is named too


def test_with_the_option_it_falls_back_loudly(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    bwrap = get_backend("bwrap")
    monkeypatch.setattr(bwrap, "unavailable_reason", classmethod(lambda cls: "no bwrap here"))
    with pytest.warns(RuntimeWarning, match=r"no bwrap here.*NOT isolated.*Install bubblewrap"):
        assert default_backend(commands_on_host=True) == "process"
    assert "NOT isolated" in caplog.text
