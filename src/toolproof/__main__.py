"""``python -m toolproof``: the same as the ``toolproof`` command."""

from toolproof.cli import main

main()
