"""The SQLite toolkit: read-only queries, writes synced back into the records, query_result."""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any

import pytest

from toolproof.spec import WorldSpec
from toolproof.tools import ToolContext, ToolCrash, ToolGateway, load_builtin, registry
from toolproof.tools.toolkits import sqldb
from toolproof.trajectory import ToolCall, ToolResult
from toolproof.worlds import World

TOOLS = ["sql_query", "sql_execute", "sql_schema"]
SCHEMA = (
    "CREATE TABLE staff (id INTEGER PRIMARY KEY, name TEXT NOT NULL, salary REAL,"
    " active INTEGER, boss INTEGER REFERENCES staff(id));"
    " CREATE TABLE tags (owner INTEGER, tag TEXT, PRIMARY KEY (owner, tag));"
)


def records() -> dict[str, Any]:
    return {
        "sql": {
            "schema": SCHEMA,
            "tables": {
                "staff": {
                    "1": {"name": "Ada", "salary": 5200, "active": True, "boss": None},
                    "2": {"name": "Alan", "salary": 4800, "active": False, "boss": 1},
                },
                "tags": {"1": {"owner": 1, "tag": "math"}, "2": {"owner": 2, "tag": "ai"}},
            },
        },
        "other": {"untouched": True},
    }


@pytest.fixture
def world() -> World:
    return World(WorldSpec(records=records()))


async def call(world: World, tool: str, /, **arguments: Any) -> ToolResult:
    load_builtin()
    gateway = ToolGateway([registry()[n] for n in TOOLS], ToolContext(world=world))
    return await gateway.call(ToolCall(id="c", name=tool, arguments=arguments))


async def ok(world: World, tool: str, /, **arguments: Any) -> Any:
    result = await call(world, tool, **arguments)
    assert not result.is_error, result.content
    return json.loads(result.content)


async def error(world: World, tool: str, /, **arguments: Any) -> str:
    result = await call(world, tool, **arguments)
    assert result.is_error, result.content
    return result.content


async def test_query_returns_rows(world: World) -> None:
    rows = await ok(
        world, "sql_query", query="SELECT id, name FROM staff WHERE salary > ?", params=[5000]
    )
    assert rows == {
        "columns": ["id", "name"],
        "rows": [[1, "Ada"]],
        "row_count": 1,
        "truncated": False,
    }
    many = await ok(
        world,
        "sql_query",
        query="WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL "
        "SELECT x + 1 FROM n WHERE x < 250) SELECT x FROM n",
    )
    assert many["row_count"] == sqldb.MAX_ROWS and many["truncated"] is True


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("DELETE FROM staff", "sql_query only reads"),
        ("UPDATE staff SET salary = 0", "sql_query only reads"),
        ("PRAGMA table_info(staff)", "not authorized"),
        ("ATTACH DATABASE 'x.db' AS x", "not authorized"),
        ("SELECT 1; SELECT 2", "one statement at a time"),
        ("SELEKT 1", "syntax error"),
        ("  ", "the statement is empty"),
        (
            "WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n)"
            " SELECT count(*) FROM n",
            "ran too long",
        ),
    ],
)
async def test_query_refuses_writes_and_bad_sql(world: World, query: str, message: str) -> None:
    before = json.dumps(world.records, sort_keys=True)
    assert message in await error(world, "sql_query", query=query)
    assert json.dumps(world.records, sort_keys=True) == before


async def test_execute_syncs_only_what_changed(world: World) -> None:
    done = await ok(
        world, "sql_execute", statement="UPDATE staff SET salary = salary + 100 WHERE id = 2"
    )
    assert done["rows_affected"] == 1
    staff = world.records["sql"]["tables"]["staff"]
    # the changed cell is SQLite's value; unchanged cells keep the author's spelling (False, 1)
    assert staff["2"] == {"name": "Alan", "salary": 4900.0, "active": False, "boss": 1}
    assert staff["1"]["active"] is True and staff["1"]["salary"] == 5200
    assert world.records["sql"]["schema"] == SCHEMA  # no DDL, no rewrite
    await ok(
        world,
        "sql_execute",
        statement="INSERT INTO staff (name, salary) VALUES (?, ?)",
        params=["Grace", 6000],
    )
    assert world.records["sql"]["tables"]["staff"]["3"] == {
        "name": "Grace",
        "salary": 6000.0,
        "active": None,
        "boss": None,
    }
    await ok(world, "sql_execute", statement="DELETE FROM tags WHERE tag = 'ai'")
    assert world.records["sql"]["tables"]["tags"] == {"1": {"owner": 1, "tag": "math"}}
    assert world.records["other"] == {"untouched": True}


async def test_execute_rewrites_the_schema_after_ddl(world: World) -> None:
    await ok(
        world, "sql_execute", statement="CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)"
    )
    schema = world.records["sql"]["schema"]
    assert "CREATE TABLE notes" in schema and "CREATE TABLE staff" in schema
    assert "notes" not in world.records["sql"]["tables"]  # empty new tables stay out
    await ok(world, "sql_execute", statement="INSERT INTO notes (body) VALUES ('hi')")
    assert world.records["sql"]["tables"]["notes"] == {"1": {"body": "hi"}}
    await ok(world, "sql_execute", statement="DROP TABLE tags")
    assert "tags" not in world.records["sql"]["tables"]


async def test_execute_errors_change_nothing(world: World) -> None:
    before = json.dumps(world.records, sort_keys=True)
    assert "NOT NULL constraint failed" in await error(
        world, "sql_execute", statement="INSERT INTO staff (salary) VALUES (1)"
    )
    assert "FOREIGN KEY constraint failed" in await error(
        world, "sql_execute", statement="UPDATE staff SET boss = 99 WHERE id = 2"
    )
    assert "not available" in await error(world, "sql_execute", statement="BEGIN")
    assert "not available" in await error(
        world, "sql_execute", statement="PRAGMA foreign_keys = OFF"
    )
    assert json.dumps(world.records, sort_keys=True) == before


async def test_the_database_follows_the_records(world: World) -> None:
    assert (await ok(world, "sql_query", query="SELECT COUNT(*) FROM staff"))["rows"] == [[2]]
    # something else changes the records (a restore, an inline tool): the cache is rebuilt
    world.records["sql"]["tables"]["staff"]["7"] = {"name": "Kay", "salary": 1.0}
    assert (await ok(world, "sql_query", query="SELECT name FROM staff WHERE id = 7"))["rows"] == [
        ["Kay"]
    ]
    world.restore(World(WorldSpec(records=records())).snapshot())
    assert (await ok(world, "sql_query", query="SELECT COUNT(*) FROM staff"))["rows"] == [[2]]
    world.close()
    assert "sqldb" not in world.extras


async def test_schema_describes_tables(world: World) -> None:
    tables = await ok(world, "sql_schema")
    assert [t["table"] for t in tables] == ["staff", "tags"]
    assert tables[0]["rows"] == 2 and tables[0]["columns"][0] == {
        "name": "id",
        "type": "INTEGER",
        "primary_key": True,
        "not_null": False,
    }
    assert len(await ok(world, "sql_schema", table="tags")) == 1
    assert "no table 'nope'; tables: staff, tags" in await error(world, "sql_schema", table="nope")


async def test_missing_or_broken_database() -> None:
    empty = World(WorldSpec(records={}))
    assert "this task has no database" in await error(empty, "sql_query", query="SELECT 1")
    broken = World(
        WorldSpec(
            records={
                "sql": {"schema": SCHEMA, "tables": {"staff": {"1": {"id": 1, "name": "Ada"}}}}
            }
        )
    )
    with pytest.raises(ToolCrash, match="repeats the key"):  # a task bug, not the agent's
        await call(broken, "sql_query", query="SELECT 1")


def test_query_result_check(world: World) -> None:
    ctx = SimpleNamespace(final=world.snapshot())
    assert sqldb.query_result(ctx, "SELECT salary FROM staff WHERE id = 1", 5200.0)[0]
    assert sqldb.query_result(
        ctx, "SELECT id, name FROM staff ORDER BY id", [[1, "Ada"], [2, "Alan"]]
    )[0]
    passed, detail = sqldb.query_result(ctx, "SELECT COUNT(*) FROM staff", 3)
    assert not passed and "returned 2, expected 3" in detail
    passed, detail = sqldb.query_result(ctx, "DELETE FROM staff", 0)
    assert not passed and "only reads" in detail
    assert sqldb.query_result(
        SimpleNamespace(final=World(WorldSpec()).snapshot()), "SELECT 1", 1
    ) == (False, "the final state has no database")
