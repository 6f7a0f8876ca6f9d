"""Reports read from a run directory: console summary (and, later, HTML)."""

from .console import headline, print_summary

__all__ = ["headline", "print_summary"]
