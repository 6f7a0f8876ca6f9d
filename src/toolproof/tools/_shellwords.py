"""Split a shell command line into the simple commands it would run, for policy rules.

This is a best-effort reading of POSIX shell syntax, made to err towards
finding a command rather than missing it: it splits at every operator
(``; && || | & ( ) `` and newlines, also inside ``$( )``), drops variable
assignments, shell keywords and wrappers (``sudo``, ``env``, ``xargs``,
``timeout`` ...), and reads the strings of ``sh -c``, ``eval`` and ``find -exec``
as commands of their own. It does not expand variables, aliases, functions or
globs, and does not follow ``cd``: relative paths are taken from /workspace.
"""

from __future__ import annotations

import posixpath
import re
import shlex

__all__ = ["WORKSPACE", "path_forms", "simple_commands"]

WORKSPACE = "/workspace"
_PUNCTUATION = ";&|()<>`\n"
_MAX_DEPTH = 8
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\[[^]]*\])?\+?=")
_DURATION = re.compile(r"^\d+(\.\d+)?[smhd]?$")
_KEYWORDS = frozenset(
    {"!", "{", "}", "if", "then", "else", "elif", "fi", "do", "done", "while", "until", "time"}
)
_WRAPPERS = frozenset(
    {
        "builtin", "busybox", "chroot", "command", "doas", "env", "exec", "ionice", "nice",
        "nohup", "setsid", "stdbuf", "sudo", "timeout", "unbuffer", "xargs",
    }
)  # fmt: skip
#: Wrapper options that take the next word as their value.
_VALUE_OPTIONS = frozenset({"-C", "-E", "-I", "-L", "-P", "-a", "-c", "-d", "-g", "-k"} | {
    "-n", "-p", "-s", "-u", "-U",
})  # fmt: skip
_POSITIONAL = frozenset({"chroot"})
_SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "ash", "mksh", "busybox"})
_EXEC_OPTIONS = frozenset({"-exec", "-execdir", "-ok", "-okdir"})
_VARIABLES = re.compile(r"\$\{?(WORKSPACE|PWD)\}?")


def _tokens(text: str) -> list[str]:
    """Shell words and operators; an unclosed quote is closed at the end (as the
    shell would refuse it, a guess errs towards reading what is there)."""
    for suffix in ("", '"', "'"):
        lex = shlex.shlex(text + suffix, posix=True, punctuation_chars=_PUNCTUATION)
        lex.whitespace = " \t\r"
        lex.whitespace_split = True
        lex.commenters = ""
        try:
            return list(lex)
        except ValueError:
            continue
    return text.split()


def _is_operator(token: str) -> bool:
    return bool(token) and all(c in _PUNCTUATION for c in token)


def _is_redirection(token: str) -> bool:
    return ("<" in token or ">" in token) and not any(c in token for c in "()|;`\n")


def _substitutions(word: str) -> list[str]:
    """The text of ``$( ... )`` and backtick substitutions inside one (quoted) word."""
    found = re.findall(r"`([^`]*)`?", word) if "`" in word else []
    start = word.find("$(")
    while start != -1:
        depth, end = 0, start + 1
        while end < len(word):
            depth += {"(": 1, ")": -1}.get(word[end], 0)
            if depth == 0:
                break
            end += 1
        found.append(word[start + 2 : end])
        start = word.find("$(", end)
    return found


def _unwrap(words: list[str]) -> list[str]:
    """Drop assignments, keywords and wrapper programs with their options."""
    while words:
        head = words[0]
        if _ASSIGNMENT.match(head) or head in _KEYWORDS:
            words = words[1:]
            continue
        if posixpath.basename(head) not in _WRAPPERS or len(words) == 1:
            return words
        wrapper, words = posixpath.basename(head), words[1:]
        while words and (words[0].startswith("-") or _ASSIGNMENT.match(words[0])):
            option, words = words[0], words[1:]
            if option in _VALUE_OPTIONS and words:
                words = words[1:]
        positional = wrapper in _POSITIONAL
        if words and (positional or (wrapper == "timeout" and _DURATION.match(words[0]))):
            words = words[1:]
    return words


def _nested(words: list[str]) -> list[str]:
    """Command strings run by ``sh -c``, ``eval`` and ``find -exec`` in one command."""
    program = posixpath.basename(words[0])
    if program == "eval":
        return [" ".join(words[1:])]
    if program in _SHELLS:
        for index, word in enumerate(words[1:], 1):
            if re.fullmatch(r"-[A-Za-z]*c[A-Za-z]*", word):
                rest = [w for w in words[index + 1 :] if not w.startswith("-")]
                return rest[:1]
        return []
    if program == "find":
        for index, word in enumerate(words):
            if word in _EXEC_OPTIONS:
                return [shlex.join(words[index + 1 :])]
    return []


def simple_commands(text: str, depth: int = 0) -> list[list[str]]:
    """Every simple command (program and arguments) the command line may run.

    Args:
        text: A shell command line.
        depth: Nesting level of ``sh -c`` and substitutions (stops at 8).
    """
    if depth > _MAX_DEPTH:
        return []
    commands: list[list[str]] = []
    current: list[str] = []
    nested: list[str] = []
    skip_next = False
    for token in [*_tokens(text), ";"]:
        if skip_next:
            skip_next = False
            nested.extend(_substitutions(token))
            continue
        if _is_operator(token) and _is_redirection(token):
            skip_next = True
            continue
        if _is_operator(token):
            words = _unwrap(current)
            if words:
                commands.append(words)
                nested.extend(_nested(words))
            current = []
            continue
        nested.extend(_substitutions(token))
        current.append(token)
    for inner in nested:
        commands.extend(simple_commands(inner, depth + 1))
    return commands


def path_forms(word: str) -> set[str]:
    """A word as written and, unless it is an option, as an absolute normalised path.

    ``.``, ``./``, ``$WORKSPACE`` and ``/workspace/`` all give ``/workspace``;
    ``..`` gives ``/``.
    """
    forms = {word}
    if word.startswith("-") or not word:
        return forms
    expanded = _VARIABLES.sub(WORKSPACE, word)
    absolute = posixpath.normpath(posixpath.join(WORKSPACE, expanded))
    forms.add(re.sub(r"^/+", "/", absolute))
    return forms
