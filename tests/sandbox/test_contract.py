"""Every backend that runs here keeps every promise of ``toolproof.sandbox._contract``."""

from __future__ import annotations

import importlib.util
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from toolproof.sandbox import Sandbox, get_backend
from toolproof.sandbox._contract import PROMISES, Promise, broken_promises

_BACKENDS = ["bwrap", "process", "podman", "docker"]


def _container_image(name: str) -> str:
    """The tiny local image ``test_container`` builds (containers never pull)."""
    path = Path(__file__).with_name("test_container.py")
    spec = importlib.util.spec_from_file_location("_contract_test_container", path)
    assert spec is not None and spec.loader is not None
    test_container = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(test_container)
    engine = test_container._engine(name)
    failure = test_container._build_image(engine)
    if failure is not None:
        pytest.skip(f"{name}: {failure}")
    image: str = test_container.IMAGE
    return image


@pytest.fixture(scope="module", params=_BACKENDS)
def backend(request: pytest.FixtureRequest) -> tuple[type[Sandbox], str | None]:
    """A backend that can run here, and the image it needs (containers only)."""
    cls = get_backend(request.param)
    reason = cls.unavailable_reason()
    if reason is not None:
        pytest.skip(f"{request.param} unusable here: {reason}")
    return cls, (_container_image(request.param) if cls.uses_image else None)


@pytest.fixture
def box(backend: tuple[type[Sandbox], str | None], workspace: Path) -> Iterator[Sandbox]:
    cls, image = backend
    with cls(workspace, image=image) as sandbox:
        yield sandbox


@pytest.mark.parametrize("promise", PROMISES, ids=[p.name for p in PROMISES])
def test_the_backend_keeps_the_promise(box: Sandbox, tmp_path: Path, promise: Promise) -> None:
    if promise.isolated_only and not box.isolated:
        pytest.skip(f"{box.name} is not isolated; it does not promise {promise.name}")
    with tempfile.TemporaryDirectory(dir=tmp_path) as scratch:
        assert promise.check(box, Path(scratch)) is None


def test_the_process_backend_is_held_to_the_shared_promises_only(
    workspace: Path, tmp_path: Path
) -> None:
    """It is not isolated: the isolated promises are not asked of it (and it breaks them)."""
    with get_backend("process")(workspace) as box:
        assert broken_promises(box, tmp_path) == {}
        exposed = next(p for p in PROMISES if p.name == "host_hidden")
        assert exposed.check(box, tmp_path) is not None  # the honest case: it can read it


def test_every_promise_is_documented() -> None:
    text = (Path(__file__).parents[2] / "docs" / "isolation.md").read_text()
    section = text.split("## What every backend promises", 1)[-1].split("\n## ", 1)[0]
    for promise in PROMISES:
        assert f"`{promise.name}`" in section, promise.name
