#!/usr/bin/env bash
# Set up everything the tests need on a fresh Debian/Ubuntu machine, then run every check.
# The README's test command and CI (.ci/run) both run exactly this script.
set -euo pipefail
cd "$(dirname "$0")/.."

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
if command -v apt-get >/dev/null 2>&1; then
  # bubblewrap: the default sandbox; chromium: browser tests of the viewer and report;
  # podman + runc: the container sandbox backend.
  $SUDO apt-get update -qq
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
    bubblewrap chromium podman runc >/dev/null
fi

if [ ! -x .venv/bin/python ]; then python3 -m venv .venv; fi
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q -e '.[dev]'

echo "== ruff";          .venv/bin/ruff check src tests
echo "== ruff format";   .venv/bin/ruff format --check src tests
echo "== mypy --strict"; .venv/bin/mypy
echo "== import layers"; .venv/bin/lint-imports
echo "== pytest";        .venv/bin/pytest -q -p no:cacheprovider "$@"
