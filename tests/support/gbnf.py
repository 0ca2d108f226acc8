"""A GBNF grammar without recursion (the kind the agents send) as a Python regular expression,
so a test can ask whether the grammar allows a reply. Reads the subset those grammars use:
string literals, character classes, rule references, groups, `|`, `?`, `*`, `+`, `{m,n}`."""

from __future__ import annotations

import re

_TOKEN = re.compile(
    r'\s*(?:("(?:\\.|[^"\\])*")|(\[(?:\\.|[^\]\\])*\])|([A-Za-z0-9-]+)|(\{\d*,?\d*\})|([()|?*+]))'
)
_ESCAPE = re.compile(r"\\(x[0-9A-Fa-f]{2}|u[0-9A-Fa-f]{4}|U[0-9A-Fa-f]{8}|.)")
_SIMPLE = {"n": "\n", "r": "\r", "t": "\t"}


def matches(grammar: str, text: str) -> bool:
    """Whether `grammar` (its `root` rule) allows `text` whole."""
    return compile_grammar(grammar).fullmatch(text) is not None


def compile_grammar(grammar: str) -> re.Pattern[str]:
    rules = dict(_rule(line) for line in grammar.splitlines() if line.strip())
    return re.compile(_expand("root", rules, set()), re.DOTALL)


def _rule(line: str) -> tuple[str, str]:
    name, _, body = line.partition("::=")
    return name.strip(), body


def _expand(name: str, rules: dict[str, str], seen: set[str]) -> str:
    assert name not in seen, f"recursive rule {name}"
    body, position, parts = rules[name], 0, []
    while position < len(body) and body[position:].strip():
        token = _TOKEN.match(body, position)
        assert token is not None, f"cannot read {body[position:]!r}"
        position = token.end()
        text, klass, reference, repeat, operator = token.groups()
        if text is not None:
            parts.append("(?:" + re.escape(_unescaped(text[1:-1])) + ")")
        elif klass is not None:
            parts.append(_klass(klass))
        elif reference is not None:
            parts.append("(?:" + _expand(reference, rules, seen | {name}) + ")")
        elif repeat is not None:
            parts.append(repeat)
        else:
            parts.append({"(": "(?:"}.get(operator, operator))
    return "".join(parts)


def _unescaped(text: str) -> str:
    def one(found: re.Match[str]) -> str:
        code = found.group(1)
        if len(code) > 1:
            return chr(int(code[1:], 16))
        return _SIMPLE.get(code, code)

    return _ESCAPE.sub(one, text)


def _klass(klass: str) -> str:
    negated = klass.startswith("[^")
    inner = _unescaped(klass[2 if negated else 1 : -1])
    return "[" + ("^" if negated else "") + "".join(re.escape(c) for c in inner) + "]"
