"""The public surface of `toolproof.testing`, and what importing it costs."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import toolproof.testing


def test_all_is_sorted_and_complete() -> None:
    exported = toolproof.testing.__all__
    assert exported == sorted(exported)
    public = {name for name in vars(toolproof.testing) if not name.startswith("_")}
    assert public == set(exported)


def test_importing_loads_no_server_sdk_or_yaml() -> None:
    code = (
        "import json, sys, toolproof.testing; "
        "print(json.dumps(sorted(m for m in sys.modules "
        "if m.split('.')[0] in {'uvicorn', 'yaml', 'openai', 'anthropic'})))"
    )
    result = subprocess.run(
        [sys.executable, "-W", "error", "-c", code], capture_output=True, text=True, check=True
    )
    assert json.loads(result.stdout) == []


def test_it_imports_no_other_toolproof_package() -> None:
    """It sits outside the layer stack, so every package's tests can use it."""
    package = Path(toolproof.testing.__file__).parent
    pattern = re.compile(r"^\s*(?:from|import)\s+toolproof\.(?!testing\b)(\w+)", re.MULTILINE)
    offenders = {
        f"{path.name}: toolproof.{match}"
        for path in package.glob("*.py")
        for match in pattern.findall(path.read_text(encoding="utf-8"))
    }
    assert not offenders
