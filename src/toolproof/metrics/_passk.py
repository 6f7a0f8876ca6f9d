"""pass@k and pass^k: how often k repeated attempts at a task pass at least once, or every time.

Unbiased estimators from n attempts with c passes (Chen et al. 2021; Yao et al.
2024), and their means over tasks. Re-exported by :mod:`toolproof.metrics.stats`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping


def _check_counts(successes: int, n: int, *, names: tuple[str, str]) -> None:
    s_name, n_name = names
    if n < 0:
        raise ValueError(f"{n_name} must be >= 0, got {n!r}")
    if not 0 <= successes <= n:
        raise ValueError(f"{s_name} must be between 0 and {n_name}={n}, got {successes!r}")


def _check_k(n: int, c: int, k: int) -> None:
    _check_counts(c, n, names=("c (correct attempts)", "n (attempts)"))
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k!r}")
    if k > n:
        raise ValueError(
            f"k={k} exceeds n={n} attempts: the unbiased estimator needs at least k "
            f"attempts per task; run >= {k} attempts or lower k"
        )


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k: probability that at least one of k attempts passes.

    From ``n`` attempts of which ``c`` passed::

        pass@k = 1 - C(n - c, k) / C(n, k)

    i.e. one minus the chance that ``k`` attempts drawn without replacement from
    the ``n`` are all failures. Computed with exact integer binomials
    (``math.comb``; ``C(m, k) = 0`` for ``m < k``), so there is no overflow or
    cancellation. ``pass_at_k(n, c, 1) == c / n``.

    References:
        Chen, M. et al. (2021). Evaluating Large Language Models Trained on Code,
        sec. 2.1. arXiv:2107.03374.

    Args:
        n: Attempts on the task, >= k.
        c: Passing attempts, ``0 <= c <= n``.
        k: Attempts allowed, ``1 <= k <= n``.

    Returns:
        The estimate in [0, 1].

    Raises:
        ValueError: If ``k > n``, ``k < 1`` or ``c`` is outside ``[0, n]``.
    """
    _check_k(n, c, k)
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def pass_hat_k(n: int, c: int, k: int) -> float:
    """Unbiased pass^k: probability that all of k i.i.d. attempts pass.

    From ``n`` attempts of which ``c`` passed::

        pass^k = C(c, k) / C(n, k)

    the chance that ``k`` attempts drawn without replacement from the ``n`` all
    pass; unbiased for ``p**k``. It measures consistency: it falls with ``k``
    where pass@k rises. ``pass_hat_k(n, c, 1) == c / n``.

    References:
        Yao, S. et al. (2024). tau-bench: A Benchmark for Tool-Agent-User
        Interaction in Real-World Domains. arXiv:2406.12045.

    Args:
        n: Attempts on the task, >= k.
        c: Passing attempts, ``0 <= c <= n``.
        k: Attempts that must all pass, ``1 <= k <= n``.

    Returns:
        The estimate in [0, 1].

    Raises:
        ValueError: If ``k > n``, ``k < 1`` or ``c`` is outside ``[0, n]``.
    """
    _check_k(n, c, k)
    return math.comb(c, k) / math.comb(n, k)


def _mean_over_tasks(
    table: Mapping[str, tuple[int, int]],
    k: int,
    estimator: Callable[[int, int, int], float],
    name: str,
) -> float:
    if not table:
        raise ValueError(f"{name} needs at least one task, got an empty table")
    total = 0.0
    for task, (n, c) in table.items():
        try:
            total += estimator(n, c, k)
        except ValueError as exc:
            raise ValueError(f"{name}: task {task!r} (n={n}, c={c}): {exc}") from None
    return total / len(table)


def mean_pass_at_k(table: Mapping[str, tuple[int, int]], k: int) -> float:
    """Benchmark pass@k: the unweighted mean of :func:`pass_at_k` over tasks.

    Args:
        table: ``task id -> (n attempts, c passing attempts)``; must be non-empty.
        k: Attempts allowed; every task needs ``n >= k``.

    Returns:
        ``sum(pass_at_k(n, c, k) for each task) / number of tasks``.

    Raises:
        ValueError: If the table is empty or a task's counts are invalid; the
            message names the task.
    """
    return _mean_over_tasks(table, k, pass_at_k, "mean_pass_at_k")


def mean_pass_hat_k(table: Mapping[str, tuple[int, int]], k: int) -> float:
    """Benchmark pass^k: the unweighted mean of :func:`pass_hat_k` over tasks.

    Args:
        table: ``task id -> (n attempts, c passing attempts)``; must be non-empty.
        k: Attempts that must all pass; every task needs ``n >= k``.

    Returns:
        ``sum(pass_hat_k(n, c, k) for each task) / number of tasks``.

    Raises:
        ValueError: If the table is empty or a task's counts are invalid; the
            message names the task.
    """
    return _mean_over_tasks(table, k, pass_hat_k, "mean_pass_hat_k")
