"""A plug-in written against the old path of the user simulators still loads (issue 35).

The simulated user moved from ``toolproof.tools.toolkits.user`` to ``toolproof.users``;
the old names resolve, with a DeprecationWarning naming the new path.
"""

from __future__ import annotations

import importlib

import pytest


def test_old_plugin_path_still_registers_a_simulator_with_a_warning() -> None:
    import toolproof.users as users

    with pytest.warns(DeprecationWarning, match=r"toolproof\.users\.user_simulator"):
        from toolproof.tools.toolkits.user import user_simulator
    assert user_simulator is users.user_simulator


def test_a_name_that_never_was_there_is_still_an_attribute_error() -> None:
    old = importlib.import_module("toolproof.tools.toolkits.user")
    with pytest.raises(AttributeError, match="no attribute 'nothing_here'"):
        old.nothing_here  # noqa: B018
