"""The forwarder inside a sandbox: loopback TCP listeners relaying to the bridge's Unix sockets.

Not imported by toolproof: the ``cmd:`` agent copies this file into the bridge directory and
runs it with the sandbox's own Python (standard library only, Python 3.8 or newer)::

    python3 -I forward.py SPEC_JSON -- COMMAND ARGV...

It listens on the sandbox's private loopback at the ports in ``SPEC_JSON`` (the host's port
numbers where it can, so URLs look the same inside as outside), sets the variables it names
to the inside URLs, runs the command with them (stdin, stdout and stderr are the command's),
relays each connection to its Unix socket, and exits with the command's exit status as soon
as the command exits. It writes nothing to stdout: that is the command's answer.
"""

from __future__ import annotations

import asyncio
import functools
import json
import os
import socket
import sys
from typing import Any

CHUNK = 64 * 1024


def _listen(host: str, port: int) -> socket.socket:
    """A listening socket on ``host``: ``port`` if it can be bound, else a free one."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError:  # e.g. a port below 1024: any free one will do, the URL says which
        sock.bind((host, 0))
    sock.listen(128)
    sock.setblocking(False)
    return sock


async def _pump(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
    try:
        while True:
            chunk = await source.read(CHUNK)
            if not chunk:
                break
            sink.write(chunk)
            await sink.drain()
        if sink.can_write_eof():
            sink.write_eof()
    except (OSError, RuntimeError):
        sink.transport.abort()


async def _relay(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, path: str) -> None:
    try:
        up_reader, up_writer = await asyncio.open_unix_connection(path, limit=CHUNK)
    except OSError:
        writer.transport.abort()
        return
    try:
        await asyncio.gather(_pump(reader, up_writer), _pump(up_reader, writer))
    finally:
        up_writer.transport.abort()
        writer.transport.abort()


async def _main(spec: dict[str, Any], argv: list[str]) -> int:
    ports: list[int] = []
    for entry in spec["listen"]:
        sock = _listen(entry["host"], entry["port"])
        path = entry["socket"]
        await asyncio.start_server(functools.partial(_relay, path=path), sock=sock, limit=CHUNK)
        ports.append(sock.getsockname()[1])
    env = dict(os.environ)
    for variable, (prefix, index, suffix) in spec["env"].items():
        env[variable] = f"{prefix}{ports[index]}{suffix}"
    proc = await asyncio.create_subprocess_exec(*argv, env=env)
    status = await proc.wait()
    return 128 - status if status < 0 else status


def main() -> None:
    """Parse ``SPEC_JSON -- ARGV...``, run, exit with the command's status."""
    args = sys.argv[1:]
    if len(args) < 3 or args[1] != "--":
        sys.stderr.write("usage: forward.py SPEC_JSON -- COMMAND ARGV...\n")
        sys.exit(2)
    try:
        code = asyncio.run(_main(json.loads(args[0]), args[2:]))
    except OSError as exc:  # e.g. the command's program is missing
        sys.stderr.write(f"toolproof forwarder: {exc}\n")
        code = 127
    sys.stdout.flush()
    os._exit(code)  # at once: the relays of connections left open die with the sandbox


if __name__ == "__main__":
    main()
