"""The check registry: below ``checks/`` (registration), loaded from above (no cycle)."""

from __future__ import annotations

import grimp

from toolproof.scoring import base, evaluators


def test_scoring_has_no_import_cycle() -> None:
    """No module of ``toolproof.scoring`` reaches itself through its imports (function-
    level imports included): the registry is in ``base``, the loading in ``registry``."""
    graph = grimp.build_graph("toolproof", include_external_packages=False)
    scoring = sorted(m for m in graph.modules if m.startswith("toolproof.scoring"))
    cycles = []
    for module in scoring:
        for imported in graph.find_modules_directly_imported_by(module):
            if not imported.startswith("toolproof.scoring"):
                continue
            back = graph.find_shortest_chain(importer=imported, imported=module)
            if back is not None:
                cycles.append((module, *back))
    assert cycles == []


def test_base_never_imports_the_checks() -> None:
    graph = grimp.build_graph("toolproof", include_external_packages=False)
    assert not graph.chain_exists(
        importer="toolproof.scoring.base", imported="toolproof.scoring.checks"
    )


def test_the_package_loads_every_built_in_kind() -> None:
    kinds = set(evaluators())
    assert {"answer", "state", "output", "process", "evidence", "custom", "judge"} <= kinds
    assert evaluators() is base.registered()
