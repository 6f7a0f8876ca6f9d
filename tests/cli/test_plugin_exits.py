"""A plug-in that raises ``SystemExit`` as it loads is reported as broken; it does not decide
the exit status of the command that loaded it."""

from __future__ import annotations

from pathlib import Path

import pytest

from toolproof import _plugins


@pytest.mark.usefixtures("restore_registries")
@pytest.mark.parametrize("source", ["raise SystemExit(0)\n", "import sys\nsys.exit(5)\n"])
def test_a_plugin_that_exits_is_reported_broken(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, source: str
) -> None:
    site = tmp_path / "site"
    info = site / "toolproof_exiting_plugin-0.1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: toolproof-exiting-plugin\nVersion: 0.1.0\n"
    )
    (info / "entry_points.txt").write_text("[toolproof]\nexiting = toolproof_exiting_plugin\n")
    (site / "toolproof_exiting_plugin.py").write_text(source, encoding="utf-8")
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.delenv("TOOLPROOF_NO_PLUGINS", raising=False)
    _plugins.reset_plugins()
    try:
        loaded = _plugins.load_plugins()
    finally:
        _plugins.reset_plugins()
    assert (loaded.get("exiting") or "").startswith("SystemExit")
