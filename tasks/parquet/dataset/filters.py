"""The ``--filter`` language: a row filter written as SQL and pyarrow.dataset users write one,
parsed without eval() into a small tree (standard library only, so the command line checks the
text before it imports pyarrow).

    expr      := term ("or" term)*
    term      := factor ("and" factor)*
    factor    := "not" factor | "(" expr ")" | predicate
    predicate := operand OP operand           OP: = == != <> < <= > >=  (one side a column)
               | column ["not"] "in" "(" literal ("," literal)* ")"
               | column "is" ["not"] "null"
    column    := name ([A-Za-z_][A-Za-z0-9_]*, not a keyword) | "double-quoted name"
    literal   := 'text' ('' for a quote) | integer | decimal number | true | false

Keywords are case-insensitive. Truth is SQL's: a comparison with a null is null, ``not null``
is null, and a row is kept only where the filter is true.

The tree answers ``possible(facts)``: which truth values the filter can take on a set of rows
given what is known of their columns (``Exact``: one value for every row, a hive partition
folder's; ``Bounds``: a row group's statistics; a column not in ``facts`` may hold anything).
A folder, a file or a row group is skipped when True is not among them, so the answer must
only ever be too wide, never too narrow.

Hive partition values (``key=value`` folder names, %-decoded; ``__HIVE_DEFAULT_PARTITION__``
is null) are text compared in the type of the literal they meet: as integers with an integer
literal (so ``hour=9`` < ``hour=10``), as numbers with a decimal one, as text with a quoted one
(ISO dates, ``2026-11-01``, sort as dates), as booleans with true/false. A value that is not of
the literal's type is an error naming it. Data columns compare in their own type
(tasks.parquet.dataset.selection converts the literal).
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from urllib.parse import unquote

from tasks.errors import InputError

HIVE_NULL = "__HIVE_DEFAULT_PARTITION__"
COMPARISONS = ("=", "!=", "<", "<=", ">", ">=")
KEYWORDS = {"and", "or", "not", "in", "is", "null", "true", "false"}
_FLIP = {"=": "=", "!=": "!=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}
_TOKEN = re.compile(r"""
    (?P<space>\s+)
  | (?P<number>[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?(?![A-Za-z_0-9.]))
  | (?P<string>'(?:[^']|'')*')
  | (?P<quoted>"(?:[^"]|"")+")
  | (?P<name>[A-Za-z_][A-Za-z_0-9]*)
  | (?P<op>==|!=|<>|<=|>=|=|<|>|\(|\)|,)
""", re.VERBOSE)


class FilterError(InputError):
    """The filter's text is wrong, or names what the dataset does not have."""

    def __init__(self, message: str):
        super().__init__(f"filter: {message}")


# --- the tree ---------------------------------------------------------------------------

@dataclass(frozen=True)
class Compare:
    column: str
    op: str  # one of COMPARISONS
    value: object  # str, int, float or bool


@dataclass(frozen=True)
class In:
    column: str
    values: tuple


@dataclass(frozen=True)
class IsNull:
    column: str


@dataclass(frozen=True)
class Not:
    operand: object


@dataclass(frozen=True)
class And:
    left: object
    right: object


@dataclass(frozen=True)
class Or:
    left: object
    right: object


def columns(node) -> list[str]:
    """The columns a tree names, in the order they first appear."""
    if isinstance(node, (Compare, In, IsNull)):
        return [node.column]
    if isinstance(node, Not):
        return columns(node.operand)
    return list(dict.fromkeys(columns(node.left) + columns(node.right)))


# --- the parser ----------------------------------------------------------------------------

def parse(text: str):
    """The tree of a filter's text; FilterError naming what is wrong and where."""
    if not isinstance(text, str) or not text.strip():
        raise FilterError("an empty filter; give an expression such as day >= '2026-11-01', or leave it out")
    parser = _Parser(text)
    tree = parser.expr()
    if parser.peek() is not None:
        parser.fail("expected and, or or the end")
    return tree


class _Parser:
    def __init__(self, text: str):
        self.text, self.tokens, self.i = text, [], 0
        at = 0
        while at < len(text):
            m = _TOKEN.match(text, at)
            if m is None:
                raise FilterError(f"unexpected {text[at]!r} at character {at + 1} of {text!r}")
            if m.lastgroup != "space":
                self.tokens.append((m.lastgroup, m.group(), at))
            at = m.end()

    def peek(self):
        return self.tokens[self.i] if self.i < len(self.tokens) else None

    def fail(self, expected: str):
        token = self.peek()
        where = f"{token[1]!r} at character {token[2] + 1}" if token else "the end"
        raise FilterError(f"{expected}, found {where} of {self.text!r}")

    def keyword(self, word: str) -> bool:
        token = self.peek()
        if token and token[0] == "name" and token[1].lower() == word:
            self.i += 1
            return True
        return False

    def symbol(self, op: str) -> bool:
        token = self.peek()
        if token and token[0] == "op" and token[1] == op:
            self.i += 1
            return True
        return False

    def expr(self):
        node = self.term()
        while self.keyword("or"):
            node = Or(node, self.term())
        return node

    def term(self):
        node = self.factor()
        while self.keyword("and"):
            node = And(node, self.factor())
        return node

    def factor(self):
        if self.keyword("not"):
            return Not(self.factor())
        if self.symbol("("):
            node = self.expr()
            if not self.symbol(")"):
                self.fail("expected )")
            return node
        return self.predicate()

    def operand(self):
        """('column', name) or ('literal', value)."""
        token = self.peek()
        if token is None:
            self.fail("expected a column or a value")
        kind, text, _ = token
        if kind == "quoted":
            self.i += 1
            return "column", text[1:-1].replace('""', '"')
        if kind == "string":
            self.i += 1
            return "literal", text[1:-1].replace("''", "'")
        if kind == "number":
            self.i += 1
            return "literal", _number(text)
        if kind == "name":
            word = text.lower()
            if word in ("true", "false"):
                self.i += 1
                return "literal", word == "true"
            if word == "null":
                self.fail("null is not a value to compare with; write COLUMN is null")
            if word not in KEYWORDS:
                self.i += 1
                return "column", text
        self.fail("expected a column or a value")

    def literal(self):
        kind, value = self.operand()
        if kind != "literal":
            self.i -= 1
            self.fail("expected a value ('text', a number, true or false)")
        return value

    def predicate(self):
        kind, first = self.operand()
        if kind == "column":
            if self.keyword("is"):
                negated = self.keyword("not")
                if not self.keyword("null"):
                    self.fail("expected null after is")
                return Not(IsNull(first)) if negated else IsNull(first)
            negated = self.keyword("not")
            if negated or self.keyword("in"):
                if negated and not self.keyword("in"):
                    self.fail("expected in after not")
                if not self.symbol("("):
                    self.fail("expected ( after in")
                values = [self.literal()]
                while self.symbol(","):
                    values.append(self.literal())
                if not self.symbol(")"):
                    self.fail("expected , or ) in the list")
                node = In(first, tuple(values))
                return Not(node) if negated else node
        token = self.peek()
        if token is None or token[0] != "op" or token[1] in ("(", ")", ","):
            self.fail("expected a comparison (= != < <= > >=)" + (", in or is" if kind == "column" else ""))
        self.i += 1
        op = {"==": "=", "<>": "!="}.get(token[1], token[1])
        kind2, second = self.operand()
        if kind == kind2:
            self.i -= 1
            self.fail("compare a column with a value" if kind == "column" else "expected a column")
        if kind == "literal":  # 5 < hour is hour > 5
            return Compare(second, _FLIP[op], first)
        return Compare(first, op, second)


def _number(text: str):
    if re.fullmatch(r"[-+]?\d+", text):
        return int(text)
    value = float(text)
    if not math.isfinite(value):
        raise FilterError(f"the number {text} is out of range")
    return value


# --- what a set of rows can make of a filter ---------------------------------------------

@dataclass(frozen=True)
class Exact:
    """Every row holds this value: a hive partition's text (None: null)."""

    text: str | None


@dataclass(frozen=True)
class Bounds:
    """Row-group statistics: values within [low, high] (None: unbounded), nulls possible or
    not, values possible or not (a column of only nulls has none). ``nan``: a float column,
    whose NaNs the statistics leave out (NaN != x is true, every other comparison false)."""

    low: object
    high: object
    nulls: bool
    values: bool = True
    nan: bool = False


ANY = frozenset({True, False, None})


def hive_facts(parts) -> dict[str, Exact]:
    """The partition values of a path's folder names below the dataset's root."""
    facts = {}
    for part in parts:
        key, sep, value = part.partition("=")
        if sep and key:
            value = unquote(value)
            facts[unquote(key)] = Exact(None if value == HIVE_NULL else value)
    return facts


def possible(node, facts: dict) -> frozenset:
    """The truth values (True, False, None) the filter can take on rows of which ``facts`` hold."""
    if isinstance(node, And):
        a, b = possible(node.left, facts), possible(node.right, facts)
        return frozenset(_and(x, y) for x in a for y in b)
    if isinstance(node, Or):
        a, b = possible(node.left, facts), possible(node.right, facts)
        return frozenset(_or(x, y) for x in a for y in b)
    if isinstance(node, Not):
        return frozenset(None if x is None else not x for x in possible(node.operand, facts))
    fact = facts.get(node.column)
    if fact is None:
        return ANY
    if isinstance(fact, Exact):
        return frozenset({_exact(node, fact.text)})
    return _bounded(node, fact)


def _and(x, y):
    if x is False or y is False:
        return False
    return None if x is None or y is None else True


def _or(x, y):
    if x is True or y is True:
        return True
    return None if x is None or y is None else False


def partition_value(column: str, text: str, like):
    """A partition value's text in the type of the literal ``like``."""
    if isinstance(like, bool):
        if text.lower() in ("true", "false"):
            return text.lower() == "true"
        kind = "true or false"
    elif isinstance(like, int):
        if re.fullmatch(r"[-+]?\d+", text):
            return int(text)
        kind = "an integer"
    elif isinstance(like, float):
        try:
            return float(text)
        except ValueError:
            kind = "a number"
    else:
        return text
    raise FilterError(f"partition {column}={text} is not {kind}, which {like!r} is; "
                      f"quote the value ('{like}') to compare {column} as text")


def _exact(node, text):
    if isinstance(node, IsNull):
        return text is None
    if text is None:
        return None
    if isinstance(node, In):
        return any(partition_value(node.column, text, v) == v for v in node.values)
    return compare(partition_value(node.column, text, node.value), node.op, node.value)


def compare(a, op: str, b) -> bool:
    return {"=": a == b, "!=": a != b, "<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}[op]


def _bounded(node, b: Bounds) -> frozenset:
    if isinstance(node, IsNull):
        return frozenset(([True] if b.nulls else []) + ([False] if b.values else []))
    found = {None} if b.nulls else set()
    if not b.values:
        return frozenset(found)
    found.add(False)  # statistics never show that every row passes
    try:
        if isinstance(node, In):
            hit = any(_may_hold(b, "=", v) for v in node.values)
        else:
            hit = _may_hold(b, node.op, node.value) or (b.nan and node.op == "!=")
    except TypeError:  # a bound Python cannot order against the literal: say nothing
        hit = True
    if hit:
        found.add(True)
    return frozenset(found)


def _may_hold(b: Bounds, op: str, v) -> bool:
    """Whether some value in [low, high] can stand in ``op`` to v."""
    low, high = b.low, b.high
    if op == "!=":
        return low is None or high is None or not (low == high == v)
    above = low is None or {"=": low <= v, "<": low < v, "<=": low <= v, ">": True, ">=": True}[op]
    below = high is None or {"=": high >= v, ">": high > v, ">=": high >= v, "<": True, "<=": True}[op]
    return above and below
