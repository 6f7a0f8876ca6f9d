#!/bin/sh
# The project's lint gate (CI runs exactly this): ruff with the settings in pyproject.toml.
set -e
cd "$(dirname "$0")/.."
exec ruff check "$@" .
