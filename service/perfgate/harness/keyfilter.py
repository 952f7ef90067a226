"""`-k` expressions over instance keys: substrings combined with and / or / not and parentheses."""

from __future__ import annotations

import re
from collections.abc import Callable

from perfgate.errors import UsageError

Matcher = Callable[[str], bool]

_TOKEN = re.compile(r"\(|\)|[^\s()]+")
_KEYWORDS = ("and", "or", "not")


def compile_filter(expression: str | None) -> Matcher:
    """A predicate over instance keys, like pytest -k: case-insensitive substring terms.

    `matmul`, `matmul and not bfloat16`, `(softmax or sdpa) and n=256`. An expression without
    operators is one plain substring, spaces included.
    """
    text = (expression or "").strip()
    if not text:
        return lambda key: True
    tokens = _TOKEN.findall(text)
    if not any(t in _KEYWORDS or t in "()" for t in tokens):
        needle = text.lower()
        return lambda key: needle in key.lower()
    parser = _Parser(tokens, text)
    matcher = parser.parse_or()
    if parser.pos != len(tokens):
        raise UsageError(f"-k {text!r}: unexpected {tokens[parser.pos]!r}")
    return matcher


class _Parser:
    """Recursive descent: or < and < not < (expr) | term, the precedence pytest uses."""

    def __init__(self, tokens: list[str], text: str) -> None:
        self.tokens = tokens
        self.text = text
        self.pos = 0

    def _peek(self) -> str | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def _fail(self, what: str) -> UsageError:
        return UsageError(f"-k {self.text!r}: {what}")

    def parse_or(self) -> Matcher:
        left = self.parse_and()
        while self._peek() == "or":
            self.pos += 1
            right = self.parse_and()
            left = _either(left, right)
        return left

    def parse_and(self) -> Matcher:
        left = self.parse_not()
        while self._peek() == "and":
            self.pos += 1
            right = self.parse_not()
            left = _both(left, right)
        return left

    def parse_not(self) -> Matcher:
        if self._peek() == "not":
            self.pos += 1
            inner = self.parse_not()
            return lambda key: not inner(key)
        return self.parse_primary()

    def parse_primary(self) -> Matcher:
        token = self._peek()
        if token is None:
            raise self._fail("expression ends too early")
        if token == "(":
            self.pos += 1
            inner = self.parse_or()
            if self._peek() != ")":
                raise self._fail("missing ')'")
            self.pos += 1
            return inner
        if token in _KEYWORDS or token == ")":
            raise self._fail(f"unexpected {token!r}")
        self.pos += 1
        needle = token.lower()
        return lambda key: needle in key.lower()


def _either(a: Matcher, b: Matcher) -> Matcher:
    return lambda key: a(key) or b(key)


def _both(a: Matcher, b: Matcher) -> Matcher:
    return lambda key: a(key) and b(key)
