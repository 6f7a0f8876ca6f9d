"""``toolproof view``."""

from __future__ import annotations

from pathlib import Path

import click

_LOOPBACK = ("127.0.0.1", "localhost", "::1")


@click.command()
@click.argument(
    "runs_dir", required=False, default="runs", type=click.Path(path_type=Path, file_okay=False)
)
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    help="Interface to listen on. Anything but loopback shares your runs with the network.",
)
@click.option("--port", default=8765, show_default=True, type=click.IntRange(0, 65535))
def view(runs_dir: Path, host: str, port: int) -> None:
    """Browse the runs in RUNS_DIR (default: ./runs) in a local web viewer.

    RUNS_DIR may also be a single run directory.
    """
    if not runs_dir.is_dir():
        raise click.ClickException(
            f"{runs_dir} is not a directory; "
            "pass a folder of runs (e.g. runs/) or one run directory"
        )
    from toolproof.viewer import serve

    if host not in _LOOPBACK:
        click.secho(
            f"warning: listening on {host}: anyone who can reach port {port} can read these runs",
            fg="yellow",
            err=True,
        )
    click.echo(
        f"toolproof viewer on http://{'localhost' if host in _LOOPBACK else host}:{port}/ "
        f"({runs_dir.resolve()}); Ctrl+C to stop"
    )
    serve(runs_dir, host=host, port=port)
