"""The grammar of a Monoid's ``combine``: a C expression over two values, and nothing else.

The text a user gives is pasted into every kernel, so it is parsed here, not matched
token by token, and the kernels get this module's rendering of the parse, never the
text itself. What the grammar holds (C's precedence and associativity throughout)::

    expression  := binary ( '?' expression ':' expression )?
    binary      := unary ( OPERATOR unary )*            # * / % + - << >> < <= > >= == != & ^ | && ||
    unary       := ( '-' | '+' | '!' | '~' ) unary
                 | '(' VALUE_TYPE ')' unary             # a cast to a value type
                 | primary
    primary     := 'a' | 'b' | NUMBER
                 | FUNCTION '(' expression ( ',' expression )* ')'
                 | '(' expression ')'

Nothing else parses: no pointer type, dereference, address-of, index or member access
(so no memory but ``a`` and ``b`` can be named), no assignment, increment or comma
operator (so nothing is written), no statement, preprocessor line, comment, string or
character. Integer division and remainder are rendered guarded: on a CPU a division by
zero, or of the most negative value by -1, traps and kills the process (PoCL), so an
integer divisor of 0 divides as 1 and an integer division by -1 negates. Floats divide as
C does (an infinity or a NaN).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

#: the longest ``combine`` accepted, in characters
COMBINE_LIMIT = 2000
#: the deepest nesting of parentheses, calls, unary operators and ``?:``
DEPTH_LIMIT = 32
#: the longest rendering (each guarded division repeats its operands)
RENDERED_LIMIT = 1 << 16

#: functions a combine may call, with their number of arguments: the preludes' helpers and
#: the math functions both dialects have (C's, overloaded)
FUNCTIONS: dict[str, int] = {
    **dict.fromkeys(
        "JS_ISNAN JS_C64_RE JS_C64_IM fabs abs sqrt exp log log1p expm1 log2 log10 sin cos tan asin "
        "acos atan sinh cosh tanh floor ceil trunc round isnan isinf isfinite erf erfc".split(),
        1,
    ),
    **dict.fromkeys("JS_C64 min max fmin fmax atan2 pow hypot copysign fmod".split(), 2),
}
#: the operands
OPERANDS = ("a", "b")
#: words of the value types a cast may name: C's arithmetic types and the kernels' typedefs
TYPE_WORDS = ("signed", "unsigned", "char", "short", "int", "long", "float", "double")
TYPEDEFS = ("js_val", "js_i64", "js_u64", "js_u32")
#: the casts taken, as their words in order (C allows other orders; one spelling is enough)
CASTS = frozenset(
    {(t,) for t in ("char", "short", "int", "long", "float", "double", "signed", "unsigned", *TYPEDEFS)}
    | {(s, t) for s in ("signed", "unsigned") for t in ("char", "short", "int", "long")}
    | {("short", "int"), ("long", "int"), ("unsigned", "short", "int"), ("unsigned", "long", "int")}
)
#: C spelling of the scalar types, the same in both dialects (a bool as a value: int)
C_SCALARS = {
    "bool": "int",
    "int8": "signed char",
    "uint8": "unsigned char",
    "int16": "short",
    "uint16": "unsigned short",
    "int32": "int",
    "uint32": "unsigned int",
    "int64": "js_i64",
    "uint64": "js_u64",
    "float32": "float",
    "float64": "double",
}
#: every name a combine may use
NAMES = frozenset((*OPERANDS, *FUNCTIONS, *TYPE_WORDS, *TYPEDEFS))
#: names the C side keeps for itself: keywords of C, C++ and OpenCL C, the preludes' and
#: the math headers' macros (no name a caller gives may be one)
RESERVED = frozenset(
    (
        "auto break case char const continue default do double else enum extern float for goto if "
        "inline int long register restrict return short signed sizeof static struct switch typedef "
        "union unsigned void volatile while bool true false class new delete this template typename "
        "namespace operator private public protected virtual friend using kernel global local "
        "constant half uint ulong uchar ushort size_t ptrdiff_t INFINITY NAN HUGE_VAL HUGE_VALF "
        "MAXFLOAT min max abs in out inline asm typeof decltype alignof alignas noexcept nullptr "
        "constexpr static_assert thread_local"
    ).split()
)

#: binary operators by precedence, loosest first (C's)
_LEVELS = (
    ("||",),
    ("&&",),
    ("|",),
    ("^",),
    ("&",),
    ("==", "!="),
    ("<", "<=", ">", ">="),
    ("<<", ">>"),
    ("+", "-"),
    ("*", "/", "%"),
)
_PRECEDENCE = {op: level for level, ops in enumerate(_LEVELS) for op in ops}
_UNARY = ("-", "+", "!", "~")

#: what each refused operator would do, for the message
_REFUSED = {
    "++": "an increment",
    "--": "a decrement",
    "->": "a member access",
    ".": "a member access",
    "[": "an index",
    "]": "an index",
    "{": "a block",
    "}": "a block",
    ";": "a statement",
    **{op: "an assignment" for op in ("=", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<<=", ">>=")},
}
_TOKEN = re.compile(
    r"(?P<space>\s+)"
    r"|(?P<number>(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?\w*)"
    r"|(?P<name>[A-Za-z_]\w*)"
    r"|(?P<op><<=|>>=|->|\+\+|--|<<|>>|<=|>=|==|!=|&&|\|\||[-+*/%&|^!=<>]=?|[~?:(),.\[\]{};])"
)
_INTEGER = re.compile(r"(?:0[xX][0-9a-fA-F]+|0[0-7]*|[1-9]\d*)(?:[uU][lL]?|[lL][uU]?)?")
_FLOAT = re.compile(r"(?:(?:\d+\.\d*|\.\d+)(?:[eE][+-]?\d+)?|\d+[eE][+-]?\d+)[fF]?")


@dataclass(frozen=True)
class _Token:
    kind: str  # "number", "name", "op" or "end"
    text: str
    at: int


class _Refused(Exception):
    def __init__(self, what: str, at: int) -> None:
        super().__init__(what)
        self.what, self.at = what, at


def render(
    name: str,
    combine: str,
    operands: tuple[str, ...] = OPERANDS,
    arrays: tuple[str, ...] = (),
    what: str = "",
    calls: tuple[tuple[str, int], ...] = (),
) -> str:
    """The C the kernels get for ``combine``, or ValueError naming what the grammar refuses.

    ``operands`` are the names the expression may use as values; ``arrays`` the names it
    may index, ``x[expression]``, each rendered as ``js_rd_x((js_i64)(expression))``, a
    read its caller bounds (``kernels/transform.py``); ``calls`` (name, arguments) the
    functions it may call besides :data:`FUNCTIONS` (C its caller made). ``what`` names the text in
    messages (default: a monoid's combine). The message quotes the text from the
    offending part on, with its position.
    """
    over = " and ".join((", ".join(operands[:-1]), operands[-1])) if len(operands) > 1 else operands[0]
    if arrays:
        over += " and the arrays " + ", ".join(arrays)
    what = what or f"monoid {name!r}: combine"
    if not isinstance(combine, str) or not combine.strip():
        raise ValueError(f"{what} must be a non-empty C expression over {over}")
    if len(combine) > COMBINE_LIMIT:
        raise ValueError(f"{what} is {len(combine)} characters, over {COMBINE_LIMIT}")
    for comment in ("//", "/*"):
        if comment in combine:
            raise ValueError(f"{what} may not hold a comment ({comment!r} in {combine!r})")
    try:
        extra = dict(calls)
        tokens = _tokens(combine, frozenset(operands) | frozenset(extra), frozenset(arrays))
        text = _Parser(tokens, frozenset(operands), frozenset(arrays), extra).whole()
    except RecursionError:  # not reached within DEPTH_LIMIT; a safety net
        raise ValueError(f"{what} nests too deeply") from None
    except _Refused as why:
        part = combine[why.at : why.at + 24] + ("..." if len(combine) > why.at + 24 else "")
        raise ValueError(
            f"{what} {why.what}, at {why.at} of {combine!r}: {part!r}; it is an "
            f"expression over {over} (docs/reliability.md gives the grammar)"
        ) from None
    return text


def _tokens(
    text: str, operands: frozenset[str] = frozenset(OPERANDS), arrays: frozenset[str] = frozenset()
) -> list[_Token]:
    out, at = [], 0
    while at < len(text):
        m = _TOKEN.match(text, at)
        if m is None:
            raise _Refused(f"may not hold {text[at]!r}", at)
        kind = m.lastgroup
        word = m.group()
        if kind == "number" and not (_INTEGER.fullmatch(word) or _FLOAT.fullmatch(word)):
            raise _Refused(f"holds {word!r}, which is not a number literal of C", at)
        if kind == "name" and word not in NAMES - set(OPERANDS) | operands | arrays:
            allowed = ", ".join(sorted(NAMES - set(OPERANDS) | operands | arrays))
            raise _Refused(f"uses the name {word!r}; the expression may use only {allowed}", at)
        if kind == "op" and word in _REFUSED and not (arrays and word in "[]"):
            raise _Refused(f"may not hold {_REFUSED[word]} ({word!r})", at)
        if kind != "space":
            out.append(_Token(kind, word, at))
        at = m.end()
    return out + [_Token("end", "", len(text))]


class _Parser:
    """Recursive descent over the tokens, rendering as it goes (so no tree is kept)."""

    def __init__(
        self,
        tokens: list[_Token],
        operands: frozenset[str] = frozenset(OPERANDS),
        arrays: frozenset[str] = frozenset(),
        calls: dict[str, int] | None = None,
    ) -> None:
        self.tokens, self.i, self.depth = tokens, 0, 0
        self.operands, self.arrays = operands, arrays
        self.functions = {**FUNCTIONS, **(calls or {})}

    @property
    def tok(self) -> _Token:
        return self.tokens[self.i]

    def take(self, text: str) -> None:
        self.no_comma()
        if self.tok.text != text or self.tok.kind == "end":
            found = "the end" if self.tok.kind == "end" else repr(self.tok.text)
            raise _Refused(f"needs {text!r} where it has {found}", self.tok.at)
        self.i += 1

    def deeper(self) -> None:
        self.depth += 1
        if self.depth > DEPTH_LIMIT:
            raise _Refused(f"nests deeper than {DEPTH_LIMIT}", self.tok.at)

    def no_comma(self) -> None:
        if self.tok.text == ",":
            raise _Refused("may not hold a comma outside a function's arguments", self.tok.at)

    def whole(self) -> str:
        text = self.expression()
        self.no_comma()
        if self.tok.kind != "end":
            raise _Refused(f"goes on after a whole expression with {self.tok.text!r}", self.tok.at)
        return text

    def expression(self) -> str:
        self.deeper()
        cond = self.binary(0)
        if self.tok.text == "?":
            self.i += 1
            yes = self.expression()
            self.take(":")
            no = self.expression()
            cond = f"{cond} ? {yes} : {no}"
        self.depth -= 1
        return cond

    def binary(self, level: int) -> str:
        """Operators of ``level`` and tighter, each level left to right (precedence climbing)."""
        left = self.unary()
        while self.tok.kind == "op" and _PRECEDENCE.get(self.tok.text, -1) >= level:
            op = self.tok.text
            self.i += 1
            right = self.binary(_PRECEDENCE[op] + 1)
            if op in ("/", "%"):
                left = _divide(left, op, right)
                if len(left) > RENDERED_LIMIT:  # checked as it grows: each level repeats its operands
                    raise _Refused(
                        f"divides inside divisions too deeply (a guarded rendering over {RENDERED_LIMIT} "
                        "characters)",
                        self.tokens[self.i - 1].at,
                    )
            else:
                left = f"{left} {op} {right}"
        return left

    def unary(self) -> str:
        tok = self.tok
        if tok.kind == "op" and tok.text in _UNARY:
            self.deeper()
            self.i += 1
            operand = self.unary()
            self.depth -= 1
            # a space keeps "- -a" from reading as a decrement
            return f"{tok.text}{' ' if operand[:1] in '+-' else ''}{operand}"
        if tok.kind == "op" and tok.text in ("*", "&"):
            what = "a dereference" if tok.text == "*" else "an address-of"
            raise _Refused(f"may not hold {what} (unary {tok.text!r})", tok.at)
        if tok.text == "(" and self.tokens[self.i + 1].text in (*TYPE_WORDS, *TYPEDEFS):
            return self.cast()
        return self.primary()

    def cast(self) -> str:
        self.deeper()
        self.take("(")
        words, start = [], self.tok.at
        while self.tok.kind == "name" and self.tok.text in (*TYPE_WORDS, *TYPEDEFS):
            words.append(self.tok.text)
            self.i += 1
        if self.tok.text == "*":
            raise _Refused(f"may not hold a pointer type ('{' '.join(words)}*')", self.tok.at)
        if tuple(words) not in CASTS:
            raise _Refused(f"casts to {' '.join(words)!r}, not a value type", start)
        self.take(")")
        operand = self.unary()
        self.depth -= 1
        return f"({' '.join(words)}){operand}"

    def primary(self) -> str:
        tok = self.tok
        indexed = tok.kind == "name" and tok.text in self.arrays and self.tokens[self.i + 1].text == "["
        if tok.kind == "number" or (tok.kind == "name" and tok.text in self.operands and not indexed):
            self.i += 1
            return tok.text
        if tok.kind == "name" and tok.text in self.arrays:
            self.i += 1
            if self.tok.text != "[":
                raise _Refused(f"names the array {tok.text!r} without an index", tok.at)
            self.deeper()
            self.i += 1
            at = self.expression()
            self.take("]")
            self.depth -= 1
            return f"js_rd_{tok.text}((js_i64)({at}))"
        if tok.text in ("[", "]"):
            raise _Refused(
                f"may not hold {_REFUSED[tok.text]} ({tok.text!r}) but after an array's name", tok.at
            )
        if tok.kind == "name" and tok.text in self.functions:
            self.i += 1
            if self.tok.text != "(":
                raise _Refused(f"names the function {tok.text!r} without calling it", tok.at)
            self.deeper()
            self.take("(")
            args = [self.expression()]
            while self.tok.text == ",":
                self.i += 1
                args.append(self.expression())
            self.take(")")
            self.depth -= 1
            if len(args) != self.functions[tok.text]:
                raise _Refused(
                    f"calls {tok.text} with {len(args)} argument(s); it takes {self.functions[tok.text]}",
                    tok.at,
                )
            return f"{tok.text}({', '.join(args)})"
        if tok.kind == "name":
            raise _Refused(f"uses the type name {tok.text!r} outside a cast", tok.at)
        if tok.text == "(":
            self.deeper()
            self.i += 1
            inner = self.expression()
            self.take(")")
            self.depth -= 1
            return f"({inner})"
        found = "the end" if tok.kind == "end" else repr(tok.text)
        raise _Refused(f"needs an operand where it has {found}", tok.at)


def _divide(x: str, op: str, y: str) -> str:
    """``x / y`` or ``x % y`` that cannot trap, written without knowing the operands' types.

    The checks are computed in the type C gives the operation (the operands' usual
    arithmetic conversion, as ``x * 0 + y * 0``): it is an integer type where
    ``(that + 1) / 2`` is 0, and signed where ``that - 1`` is negative. For integers the
    compiler folds them to constants; floats divide unguarded.
    """
    kind = f"((({x}) * 0 + ({y}) * 0 + 1) / 2 == 0)"
    signed = f"(({x}) * 0 + ({y}) * 0 - 1 < 0)"
    value = f"(({x}) * 0 + ({y}))"  # y in the operation's type
    minus_one = f"({kind} && {signed} && {value} == -1)"
    divisor = f"(({kind} && {value} == 0) || {minus_one} ? 1 : ({y}))"
    if op == "%":
        return f"(({x}) % {divisor})"
    return f"(({x}) / {divisor} * ({minus_one} ? -1 : 1))"
