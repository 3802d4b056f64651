"""Lowering a Python operator to the kernels' C: Numba types it, jitscan writes the C.

Numba compiles the function for the value type (``numba.njit`` with the signature
``(value, value)``) and keeps the typed IR: blocks of assignments whose every variable
and every operation has a type. This module walks that IR and writes one C function,
``js_vop(x, y)``, statement by statement: each operation takes the operand types
Numba's typing chose (an int32 sum is an int64 sum in Numba, so it is one in C too),
and every assignment converts to the type of its target. Branches (``if``, conditional
expressions, ``and``/``or``) are the IR's blocks, joined by ``goto``.

Tuples never become C types of their own: a tuple-valued variable is one C variable per
field, and the value type (``js_val``, a struct of ``f0``, ``f1``...) is built only where
the function returns. Temporaries used once are written inline, so the C reads like the
Python it comes from; each Python line stands above its C in a comment.

What the translator does not know raises :class:`UnsupportedOperator` with the line of
the user's function; see :data:`MATH` and :func:`lower` for the subset.
"""

from __future__ import annotations

import math
import operator
import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numba.core import ir
from numba.core import types as nt

from .expression import C_SCALARS, RESERVED

#: C spelling of the scalar types the translator writes (the same in both dialects)
C_TYPES = C_SCALARS

_BINARY = {
    operator.add: "+",
    operator.iadd: "+",
    operator.sub: "-",
    operator.isub: "-",
    operator.mul: "*",
    operator.imul: "*",
    operator.truediv: "/",
    operator.itruediv: "/",
    operator.lshift: "<<",
    operator.ilshift: "<<",
    operator.rshift: ">>",
    operator.irshift: ">>",
    operator.and_: "&",
    operator.iand: "&",
    operator.or_: "|",
    operator.ior: "|",
    operator.xor: "^",
    operator.ixor: "^",
    operator.eq: "==",
    operator.ne: "!=",
    operator.lt: "<",
    operator.le: "<=",
    operator.gt: ">",
    operator.ge: ">=",
}
_FLOOR = (operator.floordiv, operator.ifloordiv, operator.mod, operator.imod)
_POW = (operator.pow, operator.ipow)
_UNARY = {operator.neg: "-", operator.pos: "+", operator.not_: "!", operator.invert: "~"}

#: the functions of ``math`` both C dialects have, under the same name
MATH = {
    getattr(math, name): name
    for name in (
        "sqrt exp log log1p expm1 log2 log10 sin cos tan asin acos atan atan2 sinh cosh tanh "
        "floor ceil trunc fabs pow hypot copysign fmod isnan isinf isfinite erf erfc"
    ).split()
}
_NUMBER_CLASSES = {int, float, bool}
#: names the C side keeps for itself: keywords of C, C++ and OpenCL C, and the preludes'
_RESERVED = set(RESERVED)


class UnsupportedOperator(TypeError):
    """A Python operator uses something outside the translatable subset."""


def _ctype(t: nt.Type) -> str:
    t = _unliteral(t)
    name = "bool" if isinstance(t, nt.Boolean) else str(t)
    if name not in C_TYPES:
        raise UnsupportedOperator(f"values of type {t} are not supported in an operator")
    return C_TYPES[name]


def _unliteral(t: nt.Type) -> nt.Type:
    return nt.unliteral(t)


def _is_float(t: nt.Type) -> bool:
    return isinstance(_unliteral(t), nt.Float)


def _is_signed(t: nt.Type) -> bool:
    t = _unliteral(t)
    return isinstance(t, nt.Integer) and t.signed


def literal(value: Any, t: nt.Type) -> str:
    """A C literal of a Python number, in C type ``t``."""
    c = _ctype(t)
    if isinstance(value, (bool, np.bool_)):
        return "1" if value else "0"
    if _is_float(t):
        v = float(value)
        if math.isnan(v):
            text = "NAN"
        elif math.isinf(v):
            text = "INFINITY" if v > 0 else "-INFINITY"
        else:
            text = repr(v)
        return text if c == "double" and "INF" not in text and "NAN" not in text else f"(({c}){text})"
    v = int(value)
    if -(2**31) <= v < 2**31:
        return str(v) if c == "int" else f"({c}){v}"
    bits = v & (2**64 - 1)  # two's complement, built from 32-bit halves (suffixes differ by dialect)
    return f"(({c})((js_u64){bits >> 32}u << 32 | (js_u64){bits & 0xFFFFFFFF}u))"


@dataclass
class _Value:
    """What a variable stands for in C: an expression per field (one for a scalar)."""

    fields: list[str]
    reads: set[str] = field(default_factory=set)
    tuple: bool = False
    #: the Python number of a constant, written as a literal of whatever type it meets
    const: Any = None


@dataclass
class Lowered:
    """The C of one operator: helpers it needs, then the function."""

    helpers: list[str]
    function: str

    @property
    def text(self) -> str:
        return "\n".join([*self.helpers, self.function])


class _Lowering:
    def __init__(self, fn: Any, cres: Any, value_type: nt.Type, name: str) -> None:
        ann = cres.type_annotation
        self.blocks: dict[int, ir.Block] = ann.blocks
        self.typemap: dict[str, nt.Type] = ann.typemap
        self.calltypes = ann.calltypes
        self.value_type = value_type
        self.name = name
        try:
            import inspect

            lines, first = inspect.getsourcelines(fn)
            self.source = {first + i: line.strip() for i, line in enumerate(lines)}
        except (OSError, TypeError):
            self.source = {}
        self.names: dict[str, str] = {}
        self.taken: set[str] = set()
        self.decls: dict[str, str] = {}  # C name -> C type, in order of first use
        self.helpers: dict[str, str] = {}
        self.values: dict[str, _Value] = {}
        self.callees: dict[str, Any] = {}
        self.uses = self._count_uses()
        #: inlined temporaries of the current block not yet used
        self.pending: dict[str, _Value] = {}

    # -- names -----------------------------------------------------------------------
    def cname(self, var: str) -> str:
        name = self.names.get(var)
        if name is None:
            if var.startswith("$"):
                base = f"_t{len(self.names)}"
            else:
                base = re.sub(r"\W", "_", var)
                if base in _RESERVED or base.lower().startswith("js_") or base.startswith("_"):
                    base += "_"
            name = base
            k = 1
            while name in self.taken:
                name = f"{base}_{k}"
                k += 1
            self.taken.add(name)
            self.names[var] = name
        return name

    def _count_uses(self) -> dict[str, int]:
        uses: dict[str, int] = {}
        for block in self.blocks.values():
            for stmt in block.body:
                if isinstance(stmt, ir.Del):
                    continue
                for v in stmt.list_vars():
                    if isinstance(stmt, ir.Assign) and v is stmt.target:
                        continue
                    uses[v.name] = uses.get(v.name, 0) + 1
        return uses

    def fail(self, what: str, loc: Any) -> UnsupportedOperator:
        line = getattr(loc, "line", None)
        where = f" (line {line}: {self.source.get(line, '')!s})" if line in self.source else ""
        return UnsupportedOperator(f"operator {self.name!r}: {what}{where}")

    # -- values ----------------------------------------------------------------------
    def use(self, var: ir.Var) -> _Value:
        value = self.values.get(var.name)
        self.pending.pop(var.name, None)
        if value is None:
            raise self.fail(f"{var.name} is used before it has a value", var.loc)
        return value

    def scalar(self, var: ir.Var, want: nt.Type | None = None) -> str:
        value = self.use(var)
        if value.tuple:
            raise self.fail("a tuple where a number is expected", var.loc)
        if value.const is not None:
            return literal(value.const, want or self.typemap[var.name])
        return self.cast(value.fields[0], self.typemap[var.name], want)

    def cast(self, text: str, have: nt.Type, want: nt.Type | None) -> str:
        if want is None:
            return text
        have, want = _unliteral(have), _unliteral(want)
        if isinstance(have, nt.BaseTuple) or isinstance(want, nt.BaseTuple):
            raise UnsupportedOperator(f"cannot convert {have} to {want}")
        if _ctype(have) == _ctype(want) and not (
            isinstance(want, nt.Boolean) and not isinstance(have, nt.Boolean)
        ):
            return text
        if isinstance(want, nt.Boolean):
            return f"({text} != 0)"
        return f"({_ctype(want)}){text}"

    def helper(self, kind: str, t: nt.Type) -> str:
        c = _ctype(t)
        name = f"js_{kind}_{c.replace(' ', '_')}"
        if name in self.helpers:
            return name
        body = {
            # Python's max and min: the first argument unless the second compares past it
            "max": "return b > a ? b : a;",
            "min": "return b < a ? b : a;",
            "abs": "return a < 0 ? -a : a;",
            # Python's floor division and modulo: the remainder takes the divisor's sign
            "floordiv": f"{c} q = a / b; return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;",
            "mod": f"{c} r = a % b; return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;",
        }[kind]
        params = f"{c} a" if kind == "abs" else f"{c} a, {c} b"
        self.helpers[name] = f"JS_DEVICE_FN {c} {name}({params}) {{ {body} }}"
        return name

    # -- expressions -----------------------------------------------------------------
    def expr(self, value: Any, target: ir.Var) -> _Value | None:
        """The C of an assigned value, or None for what only names a callee."""
        t = self.typemap[target.name]
        if isinstance(value, ir.Arg):
            cname = self.cname(target.name)
            if isinstance(t, nt.BaseTuple):
                return _Value([f"{cname}.f{k}" for k in range(len(t))], {target.name}, True)
            return _Value([cname], {target.name})
        if isinstance(value, ir.Var):
            src = self.use(value)
            if src.tuple:
                return _Value(list(src.fields), set(src.reads) | {value.name}, True)
            return _Value([self.cast(src.fields[0], self.typemap[value.name], t)], src.reads | {value.name})
        if isinstance(value, (ir.Const, ir.Global, ir.FreeVar)):
            v = value.value
            if isinstance(v, (bool, int, float, np.number, np.bool_)):
                return _Value([literal(v, t)], const=v)
            self.callees[target.name] = v
            return None
        if not isinstance(value, ir.Expr):
            raise self.fail(f"unsupported statement {value}", target.loc)
        op = value.op
        if op in ("binop", "inplace_binop"):
            return self.binop(value, t)
        if op == "unary":
            sig = self.calltypes[value]
            text = self.scalar(value.value, sig.args[0])
            return _Value([self.cast(f"({_UNARY[value.fn]}{text})", sig.return_type, t)], self.reads(value))
        if op == "call":
            return self.call(value, t)
        if op == "getattr":
            base = self.callees.get(value.value.name)
            if base is None:
                raise self.fail(f"attribute .{value.attr} of a value", value.loc)
            attr = getattr(base, value.attr)
            if isinstance(attr, (int, float)):
                return _Value([literal(attr, t)])
            self.callees[target.name] = attr
            return None
        if op in ("static_getitem", "getitem"):
            if op == "getitem" or not isinstance(value.index, int):
                raise self.fail("a tuple may only be indexed by a constant", value.loc)
            src = self.use(value.value)
            if not src.tuple:
                raise self.fail("indexing a number", value.loc)
            index = value.index % len(src.fields)
            field_t = self.typemap[value.value.name][index]
            return _Value([self.cast(src.fields[index], field_t, t)], src.reads | {value.value.name})
        if op == "build_tuple":
            items, reads = [], set()
            for k, item in enumerate(value.items):
                items.append(self.scalar(item, t[k]))
                reads |= self.use(item).reads | {item.name}
            return _Value(items, reads, True)
        if op in ("exhaust_iter", "cast"):
            src = self.use(value.value)
            if src.tuple:
                return _Value(list(src.fields), src.reads | {value.value.name}, True)
            return _Value([self.scalar(value.value, t)], src.reads | {value.value.name})
        raise self.fail(
            f"unsupported operation {op!r} (loops, containers and calls of your own functions are not)",
            value.loc,
        )

    def reads(self, expr: ir.Expr) -> set[str]:
        out: set[str] = set()
        for v in expr.list_vars():
            if v.name in self.values:
                out |= self.values[v.name].reads | {v.name}
        return out

    def binop(self, value: ir.Expr, t: nt.Type) -> _Value:
        sig = self.calltypes[value]
        ta, tb = sig.args
        a, b = self.scalar(value.lhs, ta), self.scalar(value.rhs, tb)
        fn = value.fn
        if fn in _FLOOR:
            if _is_float(ta) or _is_float(tb) or _is_float(sig.return_type):
                raise self.fail("// and % of floats (write math.floor(a / b) or math.fmod(a, b))", value.loc)
            kind = "floordiv" if fn in (operator.floordiv, operator.ifloordiv) else "mod"
            text = (
                f"{self.helper(kind, sig.return_type)}({a}, {b})"
                if _is_signed(sig.return_type)
                else (f"({a} {'/' if kind == 'floordiv' else '%'} {b})")
            )
        elif fn in _POW:
            if not _is_float(sig.return_type):
                raise self.fail("** of integers (write the product, or use floats)", value.loc)
            text = f"pow({a}, {b})"
        elif fn in _BINARY:
            text = f"({a} {_BINARY[fn]} {b})"
        else:
            raise self.fail(f"the operator {getattr(fn, '__name__', fn)}", value.loc)
        return _Value([self.cast(text, sig.return_type, t)], self.reads(value))

    def call(self, value: ir.Expr, t: nt.Type) -> _Value:
        if value.kws or value.vararg:
            raise self.fail("keyword or starred arguments", value.loc)
        callee = self.callees.get(value.func.name)
        sig = self.calltypes[value]
        args = list(value.args)
        if callee is bool:
            text = self.scalar(args[0], nt.boolean)
        elif callee in _NUMBER_CLASSES or isinstance(self.typemap[value.func.name], nt.NumberClass):
            text = self.scalar(args[0], sig.return_type)
        elif callee in (min, max):
            if len(args) == 1:
                raise self.fail(f"{callee.__name__} of a tuple (give it the numbers)", value.loc)
            rt = sig.return_type
            fname = self.helper(callee.__name__, rt)
            text = self.scalar(args[0], rt)
            for arg in args[1:]:
                text = f"{fname}({text}, {self.scalar(arg, rt)})"
        elif callee is abs:
            rt = sig.return_type
            x = self.scalar(args[0], rt)
            text = f"fabs({x})" if _is_float(rt) else f"{self.helper('abs', rt)}({x})"
        elif callee in MATH:
            params = sig.args
            if len(params) == 1 and isinstance(params[0], nt.BaseTuple) and len(args) > 1:
                params = tuple(params[0])
            cargs = ", ".join(self.scalar(arg, p) for arg, p in zip(args, params, strict=True))
            # C's result type is not Numba's (floor of a float is an int64 in Numba)
            rt = sig.return_type
            text = f"{MATH[callee]}({cargs})"
            text = f"({text} != 0)" if isinstance(rt, nt.Boolean) else f"({_ctype(rt)}){text}"
        else:
            what = getattr(callee, "__name__", None) or str(self.typemap[value.func.name])
            raise self.fail(
                f"a call of {what} (operators may call min, max, abs, casts to number types and "
                f"the math functions {', '.join(sorted(MATH.values()))})",
                value.loc,
            )
        return _Value([self.cast(text, sig.return_type, t)], self.reads(value))

    # -- statements ------------------------------------------------------------------
    def declare(self, var: str) -> list[str]:
        t = self.typemap[var]
        cname = self.cname(var)
        if isinstance(t, nt.BaseTuple):
            names = [f"{cname}_{k}" for k in range(len(t))]
            for name, ft in zip(names, t, strict=True):
                self.decls.setdefault(name, _ctype(ft))
            return names
        self.decls.setdefault(cname, _ctype(t))
        return [cname]

    def lower(self, params: tuple[str, ...], head: str = "") -> Lowered:
        order = sorted(self.blocks)
        targets = {
            label
            for block in self.blocks.values()
            for stmt in block.body
            if isinstance(stmt, (ir.Jump, ir.Branch))
            for label in ((stmt.target,) if isinstance(stmt, ir.Jump) else (stmt.truebr, stmt.falsebr))
        }
        body: list[str] = []
        line = None  # the Python line last shown
        for i, label in enumerate(order):
            nxt = order[i + 1] if i + 1 < len(order) else None
            if label in targets:
                body.append(f"L{label}:;")
            pending = self.pending = {}
            for stmt in self.blocks[label].body:
                if isinstance(stmt, ir.Del):
                    continue
                loc_line = getattr(stmt.loc, "line", None)
                arg = isinstance(stmt, ir.Assign) and isinstance(stmt.value, ir.Arg)
                if loc_line != line and loc_line in self.source and not arg:
                    line = loc_line
                    body.append(f"    /* {self.source[line].replace('*/', '* /')} */")
                if isinstance(stmt, ir.Assign):
                    target = stmt.target
                    # a temporary read before its assignment elsewhere must be written out first
                    for name in [n for n, v in pending.items() if target.name in v.reads]:
                        body += self.write(name, pending.pop(name))
                    value = self.expr(stmt.value, target)
                    if value is None:
                        continue
                    if isinstance(stmt.value, ir.Arg):
                        self.values[target.name] = value
                        self.cname(target.name)
                    elif (
                        target.name.startswith("$")
                        and self.uses.get(target.name, 0) == 1
                        and self._used_in(target.name, label)
                    ):
                        self.values[target.name] = value
                        pending[target.name] = value
                    else:
                        body += self.write(target.name, value)
                elif isinstance(stmt, ir.Branch):
                    cond = self.scalar(stmt.cond, nt.boolean)
                    if stmt.truebr == nxt:
                        body.append(f"    if (!{cond}) goto L{stmt.falsebr};")
                    else:
                        body.append(f"    if ({cond}) goto L{stmt.truebr};")
                        if stmt.falsebr != nxt:
                            body.append(f"    goto L{stmt.falsebr};")
                elif isinstance(stmt, ir.Jump):
                    if stmt.target != nxt:
                        body.append(f"    goto L{stmt.target};")
                elif isinstance(stmt, ir.Return):
                    body += self.ret(stmt.value)
                else:
                    raise self.fail(f"unsupported statement {stmt}", stmt.loc)
        # labels nothing jumps to (a branch's fall-through) go
        jumped = set(re.findall(r"goto (L\d+);", "\n".join(body)))
        body = [b for b in body if not (b.endswith(":;") and b[:-2] not in jumped)]
        vt = self.value_type
        decls = [f"    {c} {name};" for name, c in self.decls.items()]
        head = head or f"JS_DEVICE_FN js_val js_vop(js_val {params[0]}, js_val {params[1]})"
        text = "\n".join(
            [
                # the name as an identifier: a function's __name__ can be any text, and only
                # what this module writes reaches a kernel
                f"/* {re.sub(r'[^A-Za-z0-9_]', '_', str(self.name))[:64]}, lowered from Python "
                f"(typed by Numba as {re.sub(r'[^A-Za-z0-9_(), ]', '_', str(vt))}) */",
                head,
                "{",
                *decls,
                *body,
                "}",
            ]
        )
        return Lowered(list(self.helpers.values()), text)

    def _used_in(self, var: str, label: int) -> bool:
        return any(
            isinstance(stmt, ir.Del) is False
            and any(
                v.name == var
                for v in stmt.list_vars()
                if not (isinstance(stmt, ir.Assign) and v is stmt.target)
            )
            for stmt in self.blocks[label].body
        )

    def write(self, var: str, value: _Value) -> list[str]:
        names = self.declare(var)
        lines = [
            f"    {name} = {text};" for name, text in zip(names, value.fields, strict=True) if name != text
        ]
        self.values[var] = _Value(names, {var}, value.tuple)
        return lines

    def ret(self, var: ir.Var) -> list[str]:
        vt = self.value_type
        src = self.use(var)
        have = self.typemap[var.name]
        if isinstance(vt, nt.BaseTuple):
            fields = [self.cast(f, ht, wt) for f, ht, wt in zip(src.fields, have, vt, strict=True)]
            sets = " ".join(f"r.f{k} = {f};" for k, f in enumerate(fields))
            return [f"    {{ js_val r; {sets} return r; }}"]
        return [f"    return {self.cast(src.fields[0], have, vt)};"]


def lower(fn: Any, cres: Any, value_type: nt.Type, name: str) -> Lowered:
    """The C function ``js_vop`` of a Python operator Numba compiled for ``value_type``.

    The subset: numbers and tuples of numbers, arithmetic, comparisons, bitwise
    operators, ``and``/``or``/``not``, conditional expressions, ``if``/``else``, local
    variables, tuple indexing and unpacking, ``min``/``max``/``abs``, casts to number
    types and the functions of :data:`MATH`.
    """
    code = fn.__code__
    if code.co_argcount != 2:
        raise UnsupportedOperator(f"operator {name!r} must take two arguments, not {code.co_argcount}")
    low = _Lowering(fn, cres, value_type, name)
    params = tuple(low.cname(v) for v in code.co_varnames[:2])
    return low.lower(params)  # type: ignore[arg-type]


def lower_predicate(fn: Any, cres: Any, arg_type: nt.Type, name: str, c_name: str) -> Lowered:
    """The C function ``int c_name(x)`` of a Python predicate of one number, Numba-compiled
    for ``arg_type``: nonzero where it holds. The subset of :func:`lower`."""
    code = fn.__code__
    if code.co_argcount != 1:
        raise UnsupportedOperator(f"predicate {name!r} must take one argument, not {code.co_argcount}")
    low = _Lowering(fn, cres, nt.boolean, name)
    param = low.cname(code.co_varnames[0])
    return low.lower((param,), f"JS_DEVICE_FN int {c_name}({_ctype(arg_type)} {param})")
