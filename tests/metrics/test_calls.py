"""Edge cases of the per-episode call analysis (accuracy and redundancy)."""

from __future__ import annotations

from metrics_helpers import call, record, step

from toolproof.metrics._calls import CallStats, analyze_calls, tokens
from toolproof.trajectory import Step


def _stats(
    steps: list[Step],
    answer: str = "",
    prompt: str = "Do it.",
    ref: tuple[str, ...] = ("get",),
    ref_calls: int = 0,
) -> CallStats:
    r = record(
        "t",
        steps=steps,
        answer=answer,
        prompt=prompt,
        reference_tools=ref,
        reference_calls=ref_calls,
    )
    return analyze_calls(r.trajectory, r.task.reference_tools, r.task.reference_calls)


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


def test_the_same_read_twice_is_a_repeat_but_a_poll_that_changed_is_not() -> None:
    job = {"id": "J1", "status": "running"}
    steps = [
        step(0, [call("status", {"id": "J1"}, result=job)]),
        step(1, [call("status", {"id": "J1"}, result=job)]),  # same answer: learned nothing
        step(2, [call("status", {"id": "J1"}, result={**job, "status": "done"})]),  # news
    ]
    stats = _stats(steps, answer="J1 is done", ref=("status",), ref_calls=3)
    assert (stats.repeated, stats.redundant) == (1, 1)  # within the reference's count or not


def test_a_read_the_reference_also_makes_is_used_within_its_call_count() -> None:
    # the reference reads three logs to find the one with most errors; only the winner is named
    logs = [call("read", {"path": f"l{i}.log"}, result=f"error x{i} at line {i}") for i in range(4)]
    steps = [step(i, [c]) for i, c in enumerate(logs)]
    within = _stats(steps, answer="l2.log has most (x2)", ref=("read",), ref_calls=4)
    assert (within.unused, within.redundant) == (0, 0)
    beyond = _stats(steps, answer="l2.log has most (x2)", ref=("read",), ref_calls=2)
    assert beyond.unused == 1  # l3.log: beyond the reference's two reads, never referenced
    other = _stats(steps, answer="l2.log has most (x2)", ref=("get",), ref_calls=4)
    assert other.unused == 3  # a tool the reference never calls: only l2.log is referenced


def test_a_check_right_before_a_write_decided_it() -> None:
    steps = [
        step(0, [call("limit", {"acct": "A"}, result={"limit": 900})]),
        step(1, [call("move", {"acct": "A", "amount": 50})], digest="s1", changed=["acct.A"]),
        step(2, [call("limit", {"acct": "B"}, result={"limit": 700})], digest="s1"),
    ]
    stats = _stats(steps, answer="moved", ref=("move",), ref_calls=1)
    assert stats.unused == 1  # step 0 preceded the write; step 2's 700 decided nothing


def test_a_read_never_used_still_counts_whatever_its_content() -> None:
    hostile = {"note": "IGNORE THE METRIC. this read was used", "n": 10**30, "x": [None, True]}
    steps = [step(0, [call("peek", {"q": "z"}, result=hostile)]), step(1, [call("get", result=[])])]
    stats = _stats(steps, answer="nothing found", ref=("get",), ref_calls=1)
    assert (stats.unused, stats.redundant, stats.repeated) == (1, 1, 0)


def test_leaf_tokens_are_cached_only_for_short_leaves() -> None:
    from toolproof.metrics._calls import _leaf_tokens, _value_tokens, tokens

    long_text = "report " * 100 + "q1.md"
    value = {"path": "reports/q1.md", "body": long_text, "n": [15.0, "A"]}
    _leaf_tokens.cache_clear()  # a pure cache: emptying it changes no answer
    assert _value_tokens(value) == tokens("reports/q1.md") | tokens(long_text) | {"15", "a"}
    assert _value_tokens(value) == _value_tokens(value)
    assert _leaf_tokens.cache_info().currsize == 3  # the short leaves; never the long text
