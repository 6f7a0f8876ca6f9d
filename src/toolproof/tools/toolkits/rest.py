"""A REST-style web service, simulated deterministically over the records.

Record layout::

    api:       {COLLECTION: {ID: {field: value, ...}}}
    api_meta:  {per_page: 10, max_per_page: 50,
                collections: {COLLECTION: {required: [...], enums: {field: [...]},
                                           unique: [...], readonly: [...],
                                           refs: {field: OTHER_COLLECTION},
                                           versioned: false, id_prefix: "T-"}}}

Routes of ``http_request``::

    GET    /                       the index: collections, item counts and rules
    GET    /{c}?f=v&q=t&sort=-f&page=2&per_page=5
                                   list: field filters, text search, sort, pages
    POST   /{c}                    create -> 201; 422 invalid (missing required field, value
                                   outside an enum, a ref that is no id); 409 duplicate
    GET    /{c}/{id}               one item -> 200; 404
    PATCH  /{c}/{id}               change some fields -> 200
    PUT    /{c}/{id}               replace the fields -> 200
    DELETE /{c}/{id}               -> 204
    GET    /{c}/{id}/{list}        a list field of the item, e.g. comments
    POST   /{c}/{id}/{list}        append the body to that list -> 201

``id`` and ``version`` are read-only, and so are a collection's ``readonly``
fields once the item exists (PUT keeps them). An item with a ``version`` is protected by
optimistic locking: a change that sends another ``version`` than the current
one gets 409, and in a ``versioned`` collection a change without one gets
428; each change adds 1 to the version. Success returns ``{status, body}``;
every 4xx is a :class:`ToolError` whose message starts ``HTTP <code>``.

:func:`comments_added` is a custom check for tasks that add to list fields:
``{kind: custom, function: "toolproof.tools.toolkits.rest:comments_added", args: {...}}``.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from toolproof.trajectory import ToolKind

from ..base import ToolContext, ToolError, tool

_REASONS = {
    400: "Bad Request",
    404: "Not Found",
    405: "Method Not Allowed",
    409: "Conflict",
    422: "Unprocessable Entity",
    428: "Precondition Required",
}
_METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE")
_CONTROL = ("page", "per_page", "sort", "q")
_NUMBERED = re.compile(r"^(.*?)(\d+)$")
MAX_PER_PAGE = 50


def _http(code: int, message: str) -> ToolError:
    return ToolError(f"HTTP {code} {_REASONS[code]}: {message}")


def _api(ctx: ToolContext) -> dict[str, Any]:
    api = ctx.world.records.setdefault("api", {})
    assert isinstance(api, dict)
    return api


def _rules(ctx: ToolContext, collection: str) -> dict[str, Any]:
    meta = ctx.world.records.get("api_meta", {}) or {}
    rules = (meta.get("collections", {}) or {}).get(collection, {}) or {}
    assert isinstance(rules, dict)
    return rules


def _collection(ctx: ToolContext, name: str) -> dict[str, Any]:
    api = _api(ctx)
    if name not in api:
        raise _http(404, f"no route /{name}; collections: {', '.join(sorted(api)) or 'none'}")
    items = api[name]
    assert isinstance(items, dict)
    return items


def _item(ctx: ToolContext, collection: str, item_id: str) -> dict[str, Any]:
    items = _collection(ctx, collection)
    if item_id not in items:
        raise _http(404, f"no {collection} item {item_id!r}")
    item = items[item_id]
    assert isinstance(item, dict)
    return item


def _view(item_id: str, item: dict[str, Any]) -> dict[str, Any]:
    return {"id": item_id, **item}


def _id_order(item_id: str) -> tuple[str, int, str]:
    match = _NUMBERED.match(item_id)
    return (match.group(1), int(match.group(2)), "") if match else (item_id, 0, item_id)


def _sort_key(value: Any) -> tuple[bool, str, Any]:
    return value is None, type(value).__name__, 0 if value is None else value


def _new_id(ctx: ToolContext, collection: str, items: dict[str, Any]) -> str:
    numbered = [m for m in (_NUMBERED.match(i) for i in items) if m]
    prefix = _rules(ctx, collection).get("id_prefix")
    if numbered:
        top = max(numbered, key=lambda m: int(m.group(2)))
        prefix = top.group(1) if prefix is None else prefix
        number = int(top.group(2)) + 1
    else:
        number = len(items) + 1
    candidate = f"{prefix or ''}{number}"
    while candidate in items:
        number += 1
        candidate = f"{prefix or ''}{number}"
    return candidate


def _validate(
    ctx: ToolContext, collection: str, fields: dict[str, Any], *, full: bool, item_id: str | None
) -> None:
    rules = _rules(ctx, collection)
    problems = []
    if full:
        problems += [
            f"{name} is required"
            for name in rules.get("required", [])
            if fields.get(name) in (None, "")
        ]
    for name, allowed in (rules.get("enums", {}) or {}).items():
        if name in fields and fields[name] not in allowed:
            problems.append(
                f"{name} must be one of {', '.join(map(str, allowed))}, got {fields[name]!r}"
            )
    api = _api(ctx)
    for name, target in (rules.get("refs", {}) or {}).items():
        value = fields.get(name)
        if value is not None and str(value) not in (api.get(target) or {}):
            problems.append(f"{name} {value!r} is not an id in /{target}")
    if problems:
        raise _http(422, "; ".join(problems))
    for name in rules.get("unique", []):
        value = fields.get(name)
        if value is None:
            continue
        for other_id, other in _collection(ctx, collection).items():
            if other_id != item_id and str(other.get(name, "")).lower() == str(value).lower():
                raise _http(409, f"{collection} item {other_id} already has {name} {value!r}")


def _writable(
    ctx: ToolContext, collection: str, body: dict[str, Any], item: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The fields a request may write: never ``id``; ``readonly`` ones only when creating.

    Sending a read-only field with the value it already has is allowed (and ignored).
    """
    readonly = set(_rules(ctx, collection).get("readonly", [])) if item is not None else set()
    blocked = sorted(
        k for k in body if k == "id" or (k in readonly and body[k] != (item or {}).get(k))
    )
    if blocked:
        raise _http(422, f"read-only fields: {', '.join(blocked)}")
    return {k: v for k, v in body.items() if k != "version" and k not in readonly}


def _precondition(
    ctx: ToolContext, collection: str, item: dict[str, Any], body: dict[str, Any]
) -> None:
    if "version" in item:
        if "version" in body and body["version"] != item["version"]:
            raise _http(
                409,
                f"version conflict: the item is at version {item['version']}, you sent "
                f"{body['version']}; GET it again and reapply your change",
            )
        if "version" not in body and _rules(ctx, collection).get("versioned"):
            raise _http(428, 'send the item\'s current version in the body ("version": N)')


def _list(ctx: ToolContext, collection: str, query: dict[str, str]) -> dict[str, Any]:
    items = _collection(ctx, collection)
    meta = ctx.world.records.get("api_meta", {}) or {}
    try:
        page = int(query.get("page", 1))
        per_page = int(query.get("per_page", meta.get("per_page", 10)))
    except ValueError:
        raise _http(400, "page and per_page must be whole numbers") from None
    most = int(meta.get("max_per_page", MAX_PER_PAGE))
    if page < 1 or not 1 <= per_page <= most:
        raise _http(400, f"page must be at least 1 and per_page between 1 and {most}")
    known = {k for item in items.values() for k in item} | {"id"}
    filters = {k: v for k, v in query.items() if k not in _CONTROL}
    unknown = sorted(k for k in filters if k not in known)
    if unknown:
        raise _http(
            422, f"cannot filter on {', '.join(unknown)}; fields: {', '.join(sorted(known))}"
        )
    rows = [_view(i, item) for i, item in items.items()]
    for key, wanted in filters.items():
        rows = [r for r in rows if str(r.get(key, "")).lower() == wanted.lower()]
    if "q" in query:
        needle = query["q"].lower()
        rows = [
            r
            for r in rows
            if any(needle in str(v).lower() for v in r.values() if isinstance(v, str))
        ]
    rows.sort(key=lambda r: _id_order(str(r["id"])))
    sort = query.get("sort")
    if sort:
        field = sort.lstrip("-")
        if field not in known:
            raise _http(422, f"cannot sort on {field}; fields: {', '.join(sorted(known))}")
        rows.sort(key=lambda r: _sort_key(r.get(field)), reverse=sort.startswith("-"))
    total = len(rows)
    chunk = rows[(page - 1) * per_page : page * per_page]
    more = page * per_page < total
    return {
        "items": chunk,
        "page": page,
        "per_page": per_page,
        "total": total,
        "next_page": page + 1 if more else None,
    }


def _index(ctx: ToolContext) -> dict[str, Any]:
    return {
        "collections": {
            name: {"items": len(items), **_rules(ctx, name)}
            for name, items in sorted(_api(ctx).items())
        }
    }


def _item_route(
    ctx: ToolContext, method: str, collection: str, item_id: str, body: dict[str, Any]
) -> dict[str, Any]:
    items = _collection(ctx, collection)
    if method == "GET":
        return {"status": 200, "body": _view(item_id, _item(ctx, collection, item_id))}
    if method == "POST":
        raise _http(
            405, f"POST /{collection}/{item_id} is not a route; use PATCH or PUT to change it"
        )
    item = _item(ctx, collection, item_id)
    if method == "DELETE":
        del items[item_id]
        return {"status": 204, "body": None}
    _precondition(ctx, collection, item, body)
    fields = _writable(ctx, collection, body, item)
    if method == "PATCH":
        merged = {**item, **fields}
    else:
        kept = ["version", *_rules(ctx, collection).get("readonly", [])]
        merged = {**fields, **{k: item[k] for k in kept if k in item}}
    _validate(ctx, collection, merged, full=True, item_id=item_id)
    if "version" in item:
        merged["version"] = int(item["version"]) + 1
    item.clear()
    item.update(merged)
    return {"status": 200, "body": _view(item_id, item)}


def _sub_route(
    ctx: ToolContext, method: str, collection: str, item_id: str, field: str, body: dict[str, Any]
) -> dict[str, Any]:
    item = _item(ctx, collection, item_id)
    values = item.get(field)
    if not isinstance(values, list):
        raise _http(404, f"no route /{collection}/{item_id}/{field}")
    if method == "GET":
        return {"status": 200, "body": {"items": values, "total": len(values)}}
    if method != "POST":
        raise _http(405, f"{method} /{collection}/{item_id}/{field}: only GET and POST")
    if not body:
        raise _http(422, "the body must not be empty")
    values.append(dict(body))
    if "version" in item:
        item["version"] = int(item["version"]) + 1
    return {"status": 201, "body": {"items": values, "total": len(values)}}


def _request(
    ctx: ToolContext, method: str, path: str, body: dict[str, Any] | None
) -> dict[str, Any]:
    verb = method.strip().upper()
    if verb not in _METHODS:
        raise _http(405, f"method {method!r} is not supported; use {', '.join(_METHODS)}")
    parts = urlsplit(path.strip())
    if not parts.path.startswith("/"):
        raise _http(400, f"the path must start with '/', got {path!r}")
    segments = [s for s in parts.path.split("/") if s]
    query = dict(parse_qsl(parts.query))
    data = dict(body or {})
    if not segments:
        if verb != "GET":
            raise _http(405, "/ only answers GET")
        return {"status": 200, "body": _index(ctx)}
    if len(segments) == 1:
        collection = segments[0]
        if verb == "GET":
            return {"status": 200, "body": _list(ctx, collection, query)}
        if verb != "POST":
            raise _http(405, f"{verb} /{collection} is not a route; use GET or POST")
        items = _collection(ctx, collection)
        fields = _writable(ctx, collection, data)
        _validate(ctx, collection, fields, full=True, item_id=None)
        if _rules(ctx, collection).get("versioned"):
            fields["version"] = 1
        item_id = _new_id(ctx, collection, items)
        items[item_id] = fields
        return {"status": 201, "body": _view(item_id, fields)}
    if len(segments) == 2:
        return _item_route(ctx, verb, segments[0], segments[1], data)
    if len(segments) == 3:
        return _sub_route(ctx, verb, segments[0], segments[1], segments[2], data)
    raise _http(404, f"no route {parts.path}")


@tool(kind=ToolKind.WRITE)
def http_request(
    ctx: ToolContext, method: str, path: str, body: dict[str, Any] | None = None
) -> dict[str, Any]:
    """Send an HTTP request to the service's JSON API and return {status, body}.

    Routes: GET / (index), GET /{collection}?field=value&q=text&sort=-field&page=N&per_page=N,
    POST /{collection}, GET|PATCH|PUT|DELETE /{collection}/{id}, GET|POST
    /{collection}/{id}/{list}. Errors come back as "HTTP <code> <reason>: <why>".

    Args:
        method: GET, POST, PUT, PATCH or DELETE.
        path: The path with its query string, e.g. "/tickets?status=open&page=2".
        body: The JSON body for POST, PUT and PATCH.
    """
    return _request(ctx, method, path, body)


@tool(kind=ToolKind.READ)
def api_get_item(ctx: ToolContext, collection: str, item_id: str) -> dict[str, Any]:
    """Fetch one item of the service by collection and id (same as GET /{collection}/{id}).

    Args:
        collection: The collection, e.g. "tickets".
        item_id: The item's id, e.g. "T-7".
    """
    return _view(item_id, _item(ctx, collection, item_id))


@tool(kind=ToolKind.READ)
def api_list_items(
    ctx: ToolContext,
    collection: str,
    filters: dict[str, str] | None = None,
    page: int = 1,
    per_page: int | None = None,
) -> dict[str, Any]:
    """List a collection of the service, a page at a time (same as GET /{collection}).

    Args:
        collection: The collection, e.g. "tickets".
        filters: Field values items must have, e.g. {"status": "open"}.
        page: Which page, from 1.
        per_page: Items per page (the service's default when omitted).
    """
    query = {str(k): str(v) for k, v in (filters or {}).items()}
    query["page"] = str(page)
    if per_page is not None:
        query["per_page"] = str(per_page)
    return _list(ctx, collection, query)


def comments_added(
    ctx: Any,
    text: str,
    expected: list[str],
    collection: str = "tickets",
    field: str = "comments",
) -> tuple[bool, str]:
    """Custom check: exactly the ``expected`` items gained a list entry mentioning ``text``.

    Compares the item's ``field`` list before and after the episode; an entry
    counts when one of its string values contains ``text`` (any case). Empty
    strings in ``expected`` are ignored, so a template can leave a slot empty.

    Args:
        ctx: The scoring context (anything with ``initial`` and ``final`` snapshots).
        text: Text the new entry must contain.
        expected: Ids of the items that must have gained such an entry, and no others.
        collection: The collection, e.g. "tickets".
        field: The list field, e.g. "comments".
    """
    before = (ctx.initial.records.get("api", {}) or {}).get(collection, {}) or {}
    after = (ctx.final.records.get("api", {}) or {}).get(collection, {}) or {}
    needle = text.lower()
    gained = set()
    for item_id, item in after.items():
        previous = before.get(item_id)
        old = previous.get(field, []) if isinstance(previous, dict) else []
        new = item.get(field, []) if isinstance(item, dict) else []
        added = new[len(old) :] if isinstance(new, list) and isinstance(old, list) else []
        for entry in added:
            values = entry.values() if isinstance(entry, dict) else [entry]
            if any(isinstance(v, str) and needle in v.lower() for v in values):
                gained.add(item_id)
    want = {str(e) for e in expected if str(e)}
    if gained == want:
        return True, f"{len(want)} items gained the entry: {', '.join(sorted(want)) or 'none'}"
    missing, extra = sorted(want - gained), sorted(gained - want)
    return False, f"missing on {missing or 'none'}; unexpected on {extra or 'none'}"
