"""The subset of Kusto (KQL) that Resource Graph's scheduled-events queries use, parsed
into a small tree: a table, then ``where``, ``project``, ``order by``/``sort by``,
``take``/``limit``, ``summarize count() by``, ``count``. Anything else is a ``KqlError``
naming the operator, function or token, never evaluated text."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

__all__ = [
    "LONG_MAX",
    "Call",
    "Compare",
    "Count",
    "KqlError",
    "Literal",
    "Logic",
    "Order",
    "Path",
    "Project",
    "Query",
    "Summarize",
    "Take",
    "Where",
    "parse",
]

MAX_QUERY = 16 * 1024
MAX_DEPTH = 50
#: Kusto's ``long``: a whole number in a query (a literal, ``take``, an index) fits in it.
LONG_MAX = 2**63 - 1
OPERATORS = ("where", "project", "order by", "sort by", "take", "limit", "summarize", "count")
FUNCTIONS = frozenset({"tostring", "tolower", "toupper", "toint", "tolong", "isempty",
                       "isnotempty", "isnull", "isnotnull", "not", "strlen",
                       "array_length"})  # fmt: skip
COMPARISONS = frozenset({"==", "!=", "=~", "!~", "<", "<=", ">", ">=", "contains", "!contains",
                         "has", "!has", "startswith", "!startswith", "endswith", "!endswith",
                         "in", "!in", "in~", "!in~", "contains_cs", "has_cs"})  # fmt: skip

_TOKEN = re.compile(
    r"""\s*(?:
      (?P<str>"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*')
    | (?P<num>\d+(?:\.\d+)?)
    | (?P<op>==|!=|=~|!~|<=|>=|\|\||[|,()\[\].=<>!-])
    | (?P<word>!?[A-Za-z_][A-Za-z0-9_]*~?)
    )""",
    re.VERBOSE,
)


class KqlError(ValueError):
    """A query forewarn cannot run: ``what`` is the operator, function or token at fault."""

    def __init__(self, message: str, what: str = "") -> None:
        super().__init__(message)
        self.what = what


@dataclass(frozen=True, slots=True)
class Literal:
    value: Any


@dataclass(frozen=True, slots=True)
class Path:
    parts: tuple[str | int, ...]


@dataclass(frozen=True, slots=True)
class Call:
    name: str
    args: tuple[Any, ...]


@dataclass(frozen=True, slots=True)
class Compare:
    op: str
    left: Any
    right: Any  # an expression, or a tuple of them for in/!in


@dataclass(frozen=True, slots=True)
class Logic:
    op: str  # and, or
    parts: tuple[Any, ...]


@dataclass(frozen=True, slots=True)
class Where:
    condition: Any


@dataclass(frozen=True, slots=True)
class Project:
    columns: tuple[tuple[str, Any], ...]


@dataclass(frozen=True, slots=True)
class Order:
    keys: tuple[tuple[Any, bool], ...]  # (expression, descending)


@dataclass(frozen=True, slots=True)
class Take:
    count: int


@dataclass(frozen=True, slots=True)
class Summarize:
    count_name: str
    by: tuple[tuple[str, Any], ...]


@dataclass(frozen=True, slots=True)
class Count:
    pass


@dataclass(frozen=True, slots=True)
class Query:
    table: str
    steps: tuple[Any, ...]


def _tokens(text: str) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    pos = 0
    while pos < len(text):
        if text[pos:].strip() == "":
            break
        match = _TOKEN.match(text, pos)
        if match is None or match.end() == pos:
            bad = text[pos:].strip()[:20]
            raise KqlError(f"unsupported token {bad!r} in the query", bad)
        kind = match.lastgroup or ""
        out.append((kind, match.group(kind)))
        pos = match.end()
    return out


def column_name(expr: Any, index: int) -> str:
    """The name Kusto gives a projected expression: ``properties.EventStatus`` is
    ``properties_EventStatus``; ``tostring(x)`` takes x's name."""
    if isinstance(expr, Path):
        return "_".join(str(p) for p in expr.parts)
    if isinstance(expr, Call) and len(expr.args) == 1:
        return column_name(expr.args[0], index)
    return f"Column{index + 1}"


class _Parser:
    def __init__(self, text: str) -> None:
        self.toks = _tokens(text)
        self.i = 0
        self.depth = 0

    # ------------------------------------------------------------------ helpers

    def peek(self, ahead: int = 0) -> tuple[str, str]:
        j = self.i + ahead
        return self.toks[j] if j < len(self.toks) else ("end", "")

    def take(self) -> tuple[str, str]:
        tok = self.peek()
        self.i += 1
        return tok

    def expect(self, value: str) -> None:
        _kind, text = self.take()
        if text.lower() != value:
            shown = text or "the end of the query"
            raise KqlError(f"expected {value!r} but found {shown!r}", text)

    def word(self, value: str) -> bool:
        kind, text = self.peek()
        if kind == "word" and text.lower() == value:
            self.i += 1
            return True
        return False

    # ------------------------------------------------------------------- query

    def query(self) -> Query:
        kind, table = self.take()
        if kind != "word":
            raise KqlError("a query starts with a table name (maintenanceresources)", table)
        steps: list[Any] = []
        while self.peek()[0] != "end":
            self.expect("|")
            steps.append(self.operator())
        return Query(table, tuple(steps))

    def operator(self) -> Any:
        kind, name = self.take()
        low = name.lower()
        if kind == "word" and low in ("order", "sort"):
            self.expect("by")
            return self.order()
        if low == "where":
            return Where(self.expr())
        if low == "project" and self.peek()[1] != "-":
            return Project(tuple(self.named_list()))
        if low in ("take", "limit"):
            kind, number = self.take()
            if kind != "num" or "." in number:
                raise KqlError(f"{low} needs a whole number of rows", number)
            return Take(_whole(number))
        if low == "summarize":
            return self.summarize()
        if low == "count":
            return Count()
        if low == "project" and self.peek()[1] == "-":
            self.take()
            name = "project-" + self.take()[1]
        raise KqlError(
            f"unsupported query operator {name!r}: forewarn answers {', '.join(OPERATORS)}",
            name,
        )

    def named_list(self) -> list[tuple[str, Any]]:
        out: list[tuple[str, Any]] = []
        while True:
            if self.peek()[0] == "word" and self.peek(1)[1] == "=":
                alias = self.take()[1]
                self.take()
                out.append((alias, self.expr()))
            else:
                expr = self.expr()
                out.append((column_name(expr, len(out)), expr))
            if self.peek()[1] != ",":
                return out
            self.take()

    def order(self) -> Order:
        keys: list[tuple[Any, bool]] = []
        while True:
            expr = self.expr()
            descending = True  # Kusto sorts descending unless told
            if self.word("asc"):
                descending = False
            elif self.word("desc"):
                descending = True
            if self.word("nulls") and not (self.word("first") or self.word("last")):
                raise KqlError("nulls must be followed by first or last", self.peek()[1])
            keys.append((expr, descending))
            if self.peek()[1] != ",":
                return Order(tuple(keys))
            self.take()

    def summarize(self) -> Summarize:
        name = "count_"
        if self.peek()[0] == "word" and self.peek(1)[1] == "=":
            name = self.take()[1]
            self.take()
        _kind, func = self.take()
        if func.lower() != "count":
            raise KqlError(
                f"unsupported aggregation {func!r}: forewarn summarizes count() only", func
            )
        self.expect("(")
        self.expect(")")
        by: list[tuple[str, Any]] = []
        if self.word("by"):
            by = self.named_list()
        return Summarize(name, tuple(by))

    # -------------------------------------------------------------- expressions

    def expr(self) -> Any:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise KqlError("the query is nested too deeply", "(")
        try:
            return self.logic("or", lambda: self.logic("and", self.compare))
        finally:
            self.depth -= 1

    def logic(self, op: str, inner: Any) -> Any:
        parts = [inner()]
        while self.word(op):
            parts.append(inner())
        return parts[0] if len(parts) == 1 else Logic(op, tuple(parts))

    def compare(self) -> Any:
        left = self.primary()
        kind, text = self.peek()
        low = text.lower()
        if kind == "op" and text in ("==", "!=", "=~", "!~", "<", "<=", ">", ">="):
            self.take()
            return Compare(text, left, self.primary())
        if kind == "op" and text == "=":
            raise KqlError("unsupported operator '=': compare with ==", "=")
        if kind == "word" and low in COMPARISONS:
            self.take()
            if low in ("in", "!in", "in~", "!in~"):
                self.expect("(")
                items = [self.primary()]
                while self.peek()[1] == ",":
                    self.take()
                    items.append(self.primary())
                self.expect(")")
                return Compare(low, left, tuple(items))
            return Compare(low, left, self.primary())
        if kind == "word" and low not in ("and", "or", "asc", "desc", "by", "nulls"):
            raise KqlError(f"unsupported operator {text!r} in an expression", text)
        return left

    def primary(self) -> Any:
        kind, text = self.take()
        if kind == "str":
            return Literal(_unquote(text))
        if kind == "num":
            return Literal(_number(text))
        if text == "(":
            inner = self.expr()
            self.expect(")")
            return inner
        if text == "-" and self.peek()[0] == "num":
            return Literal(-_number(self.take()[1]))
        if kind != "word":
            raise KqlError(f"unexpected {text or 'end of the query'!r} in an expression", text)
        low = text.lower()
        if low in ("true", "false"):
            return Literal(low == "true")
        if self.peek()[1] == "(":
            if low not in FUNCTIONS:
                raise KqlError(f"unsupported function {text!r}", text)
            self.take()
            args: list[Any] = []
            if self.peek()[1] != ")":
                args.append(self.expr())
                while self.peek()[1] == ",":
                    self.take()
                    args.append(self.expr())
            self.expect(")")
            return Call(low, tuple(args))
        parts: list[str | int] = [text]
        while self.peek()[1] in (".", "["):
            if self.take()[1] == ".":
                kind, name = self.take()
                if kind != "word":
                    raise KqlError(f"expected a property name after '.', found {name!r}", name)
                parts.append(name)
            else:
                kind, key = self.take()
                if kind == "str":
                    parts.append(_unquote(key))
                elif kind == "num" and "." not in key:
                    parts.append(_whole(key))
                else:
                    raise KqlError(f"expected a quoted name or an index in [], found {key!r}", key)
                self.expect("]")
        return Path(tuple(parts))


def _whole(text: str) -> int:
    """A whole number token as a long; a longer one is a ``KqlError`` (Python's ``int``
    refuses over 4,300 digits with a ValueError: the length is checked first)."""
    if len(text) > len(str(LONG_MAX)) or int(text) > LONG_MAX:
        shown = text if len(text) <= 30 else f"{text[:20]}... ({len(text)} digits)"
        raise KqlError(f"the number {shown} does not fit in a long (at most {LONG_MAX})", shown)
    return int(text)


def _number(text: str) -> int | float:
    """A number token: a long, or a finite real (one that overflows is a ``KqlError``)."""
    if "." not in text:
        return _whole(text)
    real = float(text)
    if not math.isfinite(real):
        shown = text if len(text) <= 30 else f"{text[:20]}... ({len(text)} characters)"
        raise KqlError(f"the number {shown} is out of range for a real", shown)
    return real


def _unquote(text: str) -> str:
    body = text[1:-1]
    return re.sub(r"\\(.)", lambda m: {"n": "\n", "t": "\t"}.get(m.group(1), m.group(1)), body)


def parse(text: str) -> Query:
    """The query's tree, or ``KqlError``."""
    if len(text) > MAX_QUERY:
        raise KqlError(f"the query is longer than {MAX_QUERY} characters", "")
    if not text.strip():
        raise KqlError("the query is empty", "")
    return _Parser(text).query()
