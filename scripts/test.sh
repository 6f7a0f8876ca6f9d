#!/usr/bin/env bash
# Set up everything the tests need on a fresh Debian/Ubuntu machine, then run every check.
# The README's test command and CI (.ci/run) both run exactly this script.
set -euo pipefail
cd "$(dirname "$0")/.."

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
if command -v apt-get >/dev/null 2>&1; then
  # bubblewrap: the default sandbox; podman + runc + catatonit: the container backend;
  # docker.io: a Docker daemon for the docker backend (started below);
  # chromium: browser tests of the viewer and the HTML report; git: repositories in
  # workspaces; build-essential: the C compiler and static C library that build the
  # sandbox's C spawner (sandbox/bwrap/_spawner.c; without it the Python one runs);
  # nodejs + npm only where missing: the lint suite's pinned ESLint.
  packages="bubblewrap podman runc catatonit docker.io chromium git build-essential"
  command -v npm >/dev/null 2>&1 || packages="$packages nodejs npm"
  # Another apt process (unattended-upgrades, a parallel job) may hold the lock: wait for it
  # (up to APT_LOCK_TIMEOUT seconds, default 300) instead of failing at once.
  # shellcheck source=scripts/apt-wait.sh
  . scripts/apt-wait.sh
  apt_get update -qq
  # shellcheck disable=SC2086  # the package list is meant to split into words
  apt_get install -y -qq --no-install-recommends $packages >/dev/null
fi

# A Docker daemon for the docker backend's tests, when none answers and we are root: flags
# that work inside a container (no bridge or iptables: containers get --network=none; vfs
# storage; cgroupfs), its own data and exec roots, stopped when this script ends. Where it
# cannot start, the docker tests skip and say why (tests/sandbox/test_container.py).
if command -v dockerd >/dev/null 2>&1 && [ "$(id -u)" -eq 0 ] && ! docker info >/dev/null 2>&1
then
  dockerd --iptables=false --ip6tables=false --bridge=none --storage-driver=vfs \
    --exec-opt native.cgroupdriver=cgroupfs --data-root /var/lib/toolproof-docker \
    --exec-root /run/toolproof-docker --pidfile /run/toolproof-docker.pid \
    >/tmp/toolproof-dockerd.log 2>&1 &
  dockerd_pid=$!
  trap 'kill "$dockerd_pid" 2>/dev/null || true' EXIT
  for _ in $(seq 60); do docker info >/dev/null 2>&1 && break; sleep 0.5; done
  docker info >/dev/null 2>&1 || { echo "dockerd did not answer; the docker tests skip:" >&2
    tail -5 /tmp/toolproof-dockerd.log >&2; }
fi

if [ ! -x .venv/bin/python ]; then python3 -m venv .venv; fi
.venv/bin/python -m pip install -q --upgrade pip
# [dev] pulls in every optional integration ([all]) plus the test and lint tools.
# scripts/constraints.txt: the versions the tests were written against (seconds to resolve).
.venv/bin/python -m pip install -q -e '.[dev]' -c scripts/constraints.txt
# BFCL's data and checkers without bfcl-eval's heavy dependency list (torch, provider SDKs): the
# checkers toolproof calls need only filelock and mpmath (BFCL's MathAPI backend) (docs/bfcl.md).
.venv/bin/python -m pip install -q --no-deps 'bfcl-eval==2026.3.23' filelock 'mpmath==1.3.0'
# AgentDojo's suites without its provider SDKs (cohere, google-genai: stood in for while its
# suites import, docs/agentdojo.md); --no-deps keeps every dev package at its version.
.venv/bin/python -m pip install -q --no-deps 'agentdojo==0.1.35' 'deepdiff==8.6.1' orderly-set \
  email-validator dnspython
# The lint suite's pinned ruff and ESLint, installed once into a reused cache (never at agent time).
.venv/bin/toolproof env setup lint

echo "== ruff";          .venv/bin/ruff check src tests
echo "== ruff format";   .venv/bin/ruff format --check src tests
echo "== mypy --strict"; .venv/bin/mypy
echo "== import layers"; .venv/bin/lint-imports
# Two worker processes (TOOLPROOF_TEST_WORKERS: another count; 0 runs in this process);
# loadfile keeps each test file on one worker, so the tests of a file share their module
# fixtures and never run beside each other. Arguments pass through: `bash scripts/test.sh
# tests/engine/test_runner.py -x`.
echo "== pytest";        .venv/bin/pytest -q -p no:cacheprovider \
  -n "${TOOLPROOF_TEST_WORKERS:-2}" --dist loadfile "$@"
