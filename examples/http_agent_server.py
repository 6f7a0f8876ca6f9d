#!/usr/bin/env python3
"""A reference agent for toolproof's HTTP agent protocol (toolproof-agent/1), stdlib only.

Run it, then point toolproof at it::

    python examples/http_agent_server.py --port 8765
    toolproof run core --agent http://127.0.0.1:8765 --task stock-sum --task stock-lookup

toolproof POSTs one JSON request per turn and reads one JSON turn back; the
full contract is ``docs/agent-protocol.openapi.yaml``. In short::

    request:  {"protocol": "toolproof-agent/1",
               "messages": [{"role", "content", "tool_calls", "tool_call_id", "name"}, ...],
               "tools": [{"name", "description", "parameters", "kind"}, ...],
               "step": 0, "task": {"id", "epoch", "suite"}}
    response: {"content": "final answer or null",
               "tool_calls": [{"id", "name", "arguments": {...}}],
               "usage": {"input_tokens", "output_tokens", "cost_usd"} or null,
               "give_up": false}

A turn with tool calls asks toolproof to run them (all of them: several make a
parallel call) and to come back with their results; a turn without tool calls
is the final answer. The server keeps no state: everything it needs is in the
transcript, which is how a real agent behind this protocol should work too.

Instead of a model, this agent follows rules good enough for a few core tasks:
look up the stock of the products the task names (in parallel; a product named
by its name is searched for first), add them up with the calculator when there
are several, and compute "compute EXPR and answer" tasks with the calculator.
It hands the value in with ``submit_answer`` when the task offers that tool (a
task that asks for a value types its answer), else answers in text. Anything
else it gives up on. Replace ``decide`` with a call to your own model or
framework to evaluate your agent.
"""

from __future__ import annotations

import argparse
import json
import re
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

PROTOCOL = "toolproof-agent/1"

PRODUCTS = re.compile(r"\bproducts?\s+([A-Z]\d*(?:(?:\s*,\s*|\s+and\s+)[A-Z]\d*)*)\b")
NAMED = re.compile(r"\bunits of the\s+(.+?)\s+are in stock\b", re.IGNORECASE)
EXPRESSION = re.compile(r"\bcompute\s+(.+?)\s+and answer\b", re.IGNORECASE | re.DOTALL)


def results_of(messages: list[dict[str, Any]], tool: str) -> list[Any]:
    """The decoded results of every successful call of ``tool`` so far."""
    names = {
        call["id"]: call["name"]
        for message in messages
        if message["role"] == "assistant"
        for call in message.get("tool_calls") or []
    }
    found = []
    for message in messages:
        if message["role"] == "tool" and names.get(message.get("tool_call_id")) == tool:
            try:
                found.append(json.loads(message.get("content") or ""))
            except ValueError:
                found.append(None)
    return found


def call(step: int, index: int, name: str, **arguments: Any) -> dict[str, Any]:
    """One tool call of a turn."""
    return {"id": f"call_{step}_{index}", "name": name, "arguments": arguments}


def finish(tools: set[str], value: Any, text: str) -> dict[str, Any]:
    """The final turn: the value through ``submit_answer`` when offered, else the text."""
    if "submit_answer" in tools:
        return {
            "tool_calls": [
                {"id": "answer", "name": "submit_answer", "arguments": {"answer": value}}
            ]
        }
    return {"content": text}


def decide(request: dict[str, Any]) -> dict[str, Any]:
    """The next turn: tool calls, a final answer, or giving up."""
    messages = request["messages"]
    step = request["step"]
    tools = {tool["name"] for tool in request["tools"]}
    task = next((m.get("content") or "" for m in messages if m["role"] == "user"), "")
    if any(m["role"] == "tool" and (m.get("content") or "").startswith("error") for m in messages):
        return {"content": "A tool failed; I cannot finish this task.", "give_up": True}

    expression = EXPRESSION.search(task)
    if expression and "calculate" in tools:
        done = results_of(messages, "calculate")
        if not done:
            return {"tool_calls": [call(step, 0, "calculate", expression=expression[1])]}
        result = done[-1]["result"]
        return finish(tools, result, f"The result is {result}.")

    named = NAMED.search(task)
    if named and "search_products" in tools and "get_stock" in tools:
        found = results_of(messages, "search_products")
        if not found:
            return {"tool_calls": [call(step, 0, "search_products", query=named[1])]}
        if len(found[-1]) != 1:
            return {"content": f"I found no single product named {named[1]}.", "give_up": True}
        product = found[-1][0]["product_id"]
        stocks = results_of(messages, "get_stock")
        if not stocks:
            return {"tool_calls": [call(step, 0, "get_stock", product_id=product)]}
        stock = stocks[-1]["stock"]
        return finish(tools, stock, f"There are {stock} units of {product} in stock.")

    products = PRODUCTS.search(task)
    if products and "get_stock" in tools:
        ids = re.findall(r"[A-Z]\d*", products[1])
        stocks = results_of(messages, "get_stock")
        if not stocks:
            lookups = [call(step, i, "get_stock", product_id=pid) for i, pid in enumerate(ids)]
            return {"tool_calls": lookups}
        if len(ids) == 1:
            stock = stocks[0]["stock"]
            return finish(tools, stock, f"There are {stock} units of {ids[0]} in stock.")
        totals = results_of(messages, "calculate")
        if not totals and "calculate" in tools:
            expression_text = " + ".join(str(s["stock"]) for s in stocks)
            return {"tool_calls": [call(step, 0, "calculate", expression=expression_text)]}
        total = totals[-1]["result"] if totals else sum(s["stock"] for s in stocks)
        text = f"Products {' and '.join(ids)} have {total} units in stock together."
        return finish(tools, total, text)

    return {"content": "I do not know how to do this task.", "give_up": True}


class Server(ThreadingHTTPServer):
    """A threading HTTP server that knows whether to log requests."""

    verbose = False


class Handler(BaseHTTPRequestHandler):
    """Answers POST (any path) with the next turn, GET with what this server is."""

    def _send(self, status: int, body: dict[str, Any]) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        self._send(200, {"protocol": PROTOCOL, "agent": "toolproof reference rule agent"})

    def do_POST(self) -> None:
        try:
            length = int(self.headers.get("content-length", 0))
            request = json.loads(self.rfile.read(length))
        except ValueError as exc:
            self._send(400, {"error": f"the body is not JSON: {exc}"})
            return
        if not isinstance(request, dict) or request.get("protocol") != PROTOCOL:
            got = request.get("protocol") if isinstance(request, dict) else None
            self._send(400, {"error": f"this agent speaks {PROTOCOL}, got {got!r}"})
            return
        turn = decide(request)
        self._send(200, {"protocol": PROTOCOL, "usage": None, "give_up": False, **turn})

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet, unless --verbose: then one line per request on stderr."""
        if isinstance(self.server, Server) and self.server.verbose:
            super().log_message(format, *args)


def main(argv: list[str] | None = None) -> None:
    """Serve until interrupted; print the URL (first line of stdout) once listening."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8765, help="0 picks a free port")
    parser.add_argument("--verbose", action="store_true", help="log each request")
    args = parser.parse_args(argv)
    server = Server((args.host, args.port), Handler)
    server.verbose = args.verbose
    port = server.server_address[1]
    print(f"http://{args.host}:{port}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


if __name__ == "__main__":
    main()
