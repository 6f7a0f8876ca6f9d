"""Records: canonical digests, dotted paths and leaf diffs of the in-memory JSON state."""

from __future__ import annotations

from toolproof.worlds import records


def test_digest_ignores_key_order_but_not_values() -> None:
    a = {"products": {"A": {"stock": 1, "name": "x"}, "B": {}}}
    b = {"products": {"B": {}, "A": {"name": "x", "stock": 1}}}
    assert records.digest(a) == records.digest(b)
    assert records.digest(a) != records.digest({"products": {"A": {"stock": 2, "name": "x"}}})
    assert records.canonical_json(b) == '{"products":{"A":{"name":"x","stock":1},"B":{}}}'


def test_paths_read_and_write_nested_values() -> None:
    data = {"products": {"A": {"stock": 3}}, "orders": [{"status": "pending"}]}
    assert records.parse_path("orders[0].status") == ["orders", 0, "status"]
    assert records.get_path(data, "products.A.stock") == 3
    assert records.get_path(data, "orders[0].status") == "pending"
    assert records.get_path(data, "orders[3].status") is records.MISSING
    assert records.get_path(data, "products.Z") is records.MISSING
    records.set_path(data, "products.B.stock", 5)
    records.set_path(data, "orders[0].status", "shipped")
    assert data["products"]["B"] == {"stock": 5}
    assert data["orders"][0]["status"] == "shipped"


def test_numeric_keys_of_mappings_are_reachable() -> None:
    assert records.get_path({"rooms": {"101": {"free": True}}}, "rooms.101.free") is True


def test_diff_lists_changed_added_and_removed_leaves() -> None:
    before = {"products": {"A": {"stock": 3, "name": "x"}, "B": {"stock": 1}}}
    after = {"products": {"A": {"stock": 4, "name": "x"}, "C": {"stock": 9}}}
    assert records.diff(before, after) == {
        "products.A.stock": [3, 4],
        "products.B.stock": [1, None],
        "products.C.stock": [None, 9],
    }
    assert records.diff(before, before) == {}


def test_an_empty_container_that_gets_filled_shows_only_the_new_leaves() -> None:
    before = {"orders": {}, "log": []}
    after = {"orders": {"O1": {"status": "pending"}}, "log": ["created"]}
    assert records.diff(before, after) == {
        "log[0]": [None, "created"],
        "orders.O1.status": [None, "pending"],
    }
    # ...and emptying it again shows the removed leaves.
    assert records.diff(after, before) == {
        "log[0]": ["created", None],
        "orders.O1.status": ["pending", None],
    }


def test_a_leaf_replaced_by_a_container_is_a_change() -> None:
    assert records.diff({"a": 1}, {"a": {"b": 2}}) == {"a": [1, None], "a.b": [None, 2]}
    assert records.diff({"a": {}}, {"a": 0}) == {"a": [{}, 0]}
