"""A package's public names loaded from their modules on first use (PEP 562), in one place.

Several packages (``toolproof``, ``spec``, ``engine``, ``metrics``, ``results``,
``report``, ``viewer``) import nothing heavy when they are imported: their
``__getattr__`` calls :func:`load_name` with the table of where each name lives, so a
command pays only for the modules it uses (a short start, issue 34).
"""

from __future__ import annotations

import importlib
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:  # not imported at run time: `toolproof --help` needs no typing module
    from collections.abc import Mapping
    from typing import Any

__all__ = ["load_name"]


def load_name(package: str, home_of: Mapping[str, str], name: str) -> Any:
    """``name`` from the module of ``package`` that ``home_of`` names, kept in the
    package's namespace so that the next lookup is an ordinary one.

    Raises:
        AttributeError: ``name`` is not one of the package's lazy names.
    """
    module = home_of.get(name)
    if module is None:
        raise AttributeError(f"module {package!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{package}.{module}"), name)
    setattr(sys.modules[package], name, value)
    return value
