"""Edge cases of the per-episode call analysis (accuracy and redundancy)."""

from __future__ import annotations

from metrics_helpers import call, record, step

from toolproof.metrics._calls import CallStats, analyze_calls, tokens
from toolproof.trajectory import Step


def _stats(
    steps: list[Step], answer: str = "", prompt: str = "Do it.", ref: tuple[str, ...] = ("get",)
) -> CallStats:
    r = record("t", steps=steps, answer=answer, prompt=prompt, reference_tools=ref)
    return analyze_calls(r.trajectory, r.task.reference_tools)


def test_tokens_normalise_numbers_case_and_paths() -> None:
    assert tokens("Stock 15.0 of A; total 1.50") == {"stock", "15", "of", "a", "total", "1.5"}
    assert "q1.md" in tokens("reports/q1.md") & tokens("/workspace/reports/q1.md")


def test_a_retry_after_an_error_is_not_a_repeat() -> None:
    steps = [
        step(0, [call("get", {"id": "A"}, result="HTTP 500", error_kind="fault")]),
        step(1, [call("get", {"id": "A"}, result={"stock": 7})]),
    ]
    stats = _stats(steps, answer="7 units")
    assert (stats.repeated, stats.unused, stats.errors) == (0, 0, 1)
    assert stats.error_kinds == {"fault": 1}


def test_identical_calls_in_a_step_that_changed_state_are_not_repeats() -> None:
    steps = [
        step(0, [call("put", {"id": "A"}), call("put", {"id": "A"})], digest="s1", changed=["x"])
    ]
    stats = _stats(steps)
    assert (stats.repeated, stats.unused, stats.redundant) == (0, 0, 0)


def test_first_step_that_changed_state_starts_an_unknown_state() -> None:
    # step 0 wrote, so the state before it is unknown; the read in step 1 is on a new state
    steps = [
        step(0, [call("get", {"id": "A"}, result={"n": 3})], digest="s1", changed=["x"]),
        step(1, [call("get", {"id": "A"}, result={"n": 3})], digest="s1"),
        step(2, [call("get", {"id": "A"}, result={"n": 3})], digest="s1"),
    ]
    stats = _stats(steps, answer="3")
    assert stats.repeated == 1  # only step 2 repeats step 1 on the same state


def test_values_from_the_prompt_or_own_arguments_do_not_count_as_use() -> None:
    steps = [
        step(0, [call("find", {"name": "Kettle"}, result={"name": "Kettle", "id": "K1"})]),
        step(1, [call("get", {"id": "K9"}, result={"id": "K9", "stock": 4})]),
    ]
    # "kettle" is in the prompt and the arguments, "K1" never reappears: step 0 is unused;
    # step 1's only informative value is 4, which the answer states
    stats = _stats(steps, answer="Kettle: 4", prompt="How many Kettle?")
    assert stats.unused == 1


def test_list_lengths_count_as_values_and_empty_results_are_not_unused() -> None:
    steps = [
        step(0, [call("list", result=["a.md", "b.md", "c.md"])]),
        step(1, [call("search", {"q": "zz"}, result=[])]),
    ]
    stats = _stats(steps, answer="There are 3 files; nothing matches zz.")
    assert stats.unused == 0


def test_reference_and_offered_tools() -> None:
    steps = [step(0, [call("get"), call("nope", result="x", error_kind="unknown_tool")])]
    stats = _stats(steps)
    assert (stats.calls, stats.to_reference, stats.to_offered, stats.valid_arguments) == (
        2,
        1,
        1,
        1,
    )
