"""A scripted model server that speaks the OpenAI and Anthropic wire protocols.

The test double for hosted LLMs: tests of model adapters, framework agents and
the LLM judge drive the official SDKs over real HTTP against it, and demos run
offline with it. It imports no other toolproof package, so any test can use it.

Map:

    ScriptedReply / ScriptedToolCall / ScriptedError   what the model says (_replies)
    ChatRequest / ChatMessage / OfferedTool            what it was asked (_request)
    Script, sequence_policy, echo_policy               who decides the reply (_script)
    ModelServer                                        uvicorn + starlette thread (_server)
      POST /v1/chat/completions   -> _openai_wire      (JSON or SSE chunks)
      POST /v1/messages           -> _anthropic_wire   (JSON or named SSE events)
    load_script, python -m toolproof.testing           YAML scripts (_yaml, __main__)

Example:

    with ModelServer([
        ScriptedReply(tool_calls=[ScriptedToolCall("add", {"a": 1, "b": 2})]),
        ScriptedReply("3"),
    ]) as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="test")
        ...
        assert server.calls == 2

For the Anthropic SDK use `anthropic.Anthropic(base_url=server.anthropic_base_url)`.

Script file format (`python -m toolproof.testing --port 8000 --script script.yaml`)
---------------------------------------------------------------------------------

Either a list of replies, or a mapping with the list under `replies`::

    per_conversation: false   # true: key the position on the conversation's
                              # assistant turns, so concurrent clients each get
                              # the whole script (see sequence_policy)
    when_exhausted: error     # or "done": answer "done" once replies run out
    replies:
      - Hello!                          # a bare string is a text reply
      - content: Let me look.
        tool_calls:                     # several calls make a parallel call
          - name: read_file
            arguments: {path: notes.txt}
          - name: search
            arguments: '{"q": "unclosed'   # a string is sent verbatim
            id: call_1                     # optional; derived otherwise
      - error: {status: 429, retry_after: 0.5, times: 2, message: slow down}
      - error: 500                      # the status alone
      - error: {status: 200, body: "<html>not json</html>"}   # a garbage body
      - content: All done.
        usage: [120, 8]                 # prompt, completion tokens (else estimated)
        latency_s: 0.5                  # wait before answering
        truncated: false                # true reports the token limit was hit

An error entry answers `times` consecutive requests (default 1). Errors
without a `body` use the provider's own error JSON, so the SDKs raise their
`RateLimitError`, `InternalServerError`, ... and retry as they would.
"""

from toolproof.testing._replies import ScriptedError, ScriptedReply, ScriptedToolCall
from toolproof.testing._request import ChatMessage, ChatRequest, MessageToolCall, OfferedTool
from toolproof.testing._script import Policy, Script, WhenExhausted, echo_policy, sequence_policy
from toolproof.testing._server import ModelServer
from toolproof.testing._yaml import ScriptFileError, load_script

__all__ = [
    "ChatMessage",
    "ChatRequest",
    "MessageToolCall",
    "ModelServer",
    "OfferedTool",
    "Policy",
    "Script",
    "ScriptFileError",
    "ScriptedError",
    "ScriptedReply",
    "ScriptedToolCall",
    "WhenExhausted",
    "echo_policy",
    "load_script",
    "sequence_policy",
]
