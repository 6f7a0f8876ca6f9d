"""`python -m toolproof.testing`: serve a YAML script until Ctrl-C.

The script format is documented in the `toolproof.testing` package docstring.
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading
from collections.abc import Sequence

from toolproof.testing._server import ModelServer
from toolproof.testing._yaml import ScriptFileError, load_script


def main(argv: Sequence[str] | None = None, *, stop: threading.Event | None = None) -> int:
    """Run the scripted model server from the command line.

    Args:
        argv: The arguments (default: `sys.argv[1:]`).
        stop: Set it to stop serving; tests use it instead of Ctrl-C.

    Returns:
        The exit status: 0 after Ctrl-C or `stop`, 2 for a bad script.
    """
    parser = argparse.ArgumentParser(
        prog="python -m toolproof.testing",
        description="Serve a scripted model over the OpenAI and Anthropic wire protocols.",
    )
    parser.add_argument("--script", required=True, help="YAML file of replies")
    parser.add_argument("--host", default="127.0.0.1", help="interface (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8000, help="port; 0 picks a free one")
    parser.add_argument("--quiet", action="store_true", help="do not log each request")
    args = parser.parse_args(argv)
    try:
        policy = load_script(args.script)
    except (OSError, ScriptFileError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if not args.quiet:
        logging.basicConfig(level=logging.INFO, format="%(message)s")
    if stop is None:
        stop = threading.Event()
        if threading.current_thread() is threading.main_thread():
            # Ctrl-C (and SIGTERM) stop the server even when SIGINT was ignored by whoever
            # started it (a background job), where Python installs no KeyboardInterrupt.
            event = stop
            for number in (signal.SIGINT, signal.SIGTERM):
                signal.signal(number, lambda *_: event.set())
    with ModelServer(policy, host=args.host, port=args.port, access_log=not args.quiet) as server:
        print(
            f"toolproof scripted model on {server.url}\n"
            f"  OpenAI:    base_url={server.base_url}\n"
            f"  Anthropic: base_url={server.anthropic_base_url}\n"
            "Ctrl-C to stop.",
            flush=True,
        )
        try:
            while not stop.wait(0.2):
                pass
        except KeyboardInterrupt:
            pass
    print(f"served {server.calls} requests", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
