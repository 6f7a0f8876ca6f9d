"""toolproof: an executable, reproducible benchmarking suite for tool-using AI agents."""

from ._version import __version__

__all__ = ["__version__"]
