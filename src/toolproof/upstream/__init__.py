"""Established benchmarks run inside toolproof, built from their installed packages.

::

    spec.providers  "bfcl" / "bfcl:CATEGORY"  ──import on use──▶  upstream.bfcl.build_suite
    upstream.bfcl            BFCL entries  ──▶  Task (inline tools, custom check, solution)
    upstream._bfcl_upstream  the installed bfcl-eval: version, data files, ast_checker
    upstream._bfcl_answers   possible answers ──▶ the oracle's concrete calls
    upstream._bfcl_check     ``bfcl.ast``: first-turn calls ──▶ bfcl_eval's verdict
    upstream.bfcl_metrics    per-category accuracies and BFCL's overall figure

    spec.providers  "agentdojo[:SUITE][@ATTACK]"  ──▶  upstream.agentdojo.build_suite
    upstream.agentdojo            user tasks (x injection tasks) ──▶ Task (tools, checks, solution)
    upstream._agentdojo_upstream  the installed agentdojo: version, suites, attacks, stand-ins
    upstream._agentdojo_envs      default and attacked environments, placed as AgentDojo does
    upstream._agentdojo_tools     one tool per AgentDojo function, on the environment record
    upstream._agentdojo_check     agentdojo.utility / .security / .attack: AgentDojo's verdicts
    upstream.agentdojo_metrics    utility, utility under attack, targeted ASR per suite and attack

Nothing here is imported by the base install; no upstream data or code is
copied into toolproof, everything is read from the installed package.
"""
