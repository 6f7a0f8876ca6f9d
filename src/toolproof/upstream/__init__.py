"""Established benchmarks run inside toolproof, built from their installed packages.

::

    spec.providers  "bfcl" / "bfcl:CATEGORY"  ──import on use──▶  upstream.bfcl.build_suite
    upstream.bfcl            BFCL entries  ──▶  Task (inline tools, custom check, solution)
    upstream._bfcl_upstream  the installed bfcl-eval: version, data files, ast_checker
    upstream._bfcl_answers   possible answers ──▶ the oracle's concrete calls
    upstream._bfcl_check     ``bfcl.ast``: first-turn calls ──▶ bfcl_eval's verdict
    upstream.bfcl_metrics    per-category accuracies and BFCL's overall figure

Nothing here is imported by the base install; no upstream data or code is
copied into toolproof, everything is read from the installed package.
"""
