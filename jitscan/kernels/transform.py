"""A scan that reads an expression of arrays and writes through rules: what compaction,
partition, unique runs and the by-key reductions are made of.

A :class:`Transform` replaces the scan's one input array and one output array (``js_src``
and ``js_dst`` of ``kernels/values.py``): element ``i`` scans as an expression of the arrays
it reads and of ``i`` and ``n``, and its scanned value ``v`` (inclusive or exclusive, as the
launch's kind says) goes out through :class:`Write` rules, each writing one value to a
computed place of one array where its condition holds. Everything runs in the chained
scan's one pass: a compaction reads its values and condition once and writes what it
keeps, with no array of positions in between.

Every expression is parsed by the grammar of a Monoid's combine (``operators/expression``),
with array reads ``x[j]`` added. Reads and writes are bounded by the arrays' lengths, which
every launch passes: a read outside an array gives 0, and a write outside it is dropped
(which is what a result of ``size=`` elements wants). No text of a user's reaches a kernel
unparsed, so a transform can neither touch memory outside its arrays nor write a
statement of its own.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..operators import expression

#: the element types a transform's arrays may have, as both dialects spell them (bool is
#: read as its byte)
ARRAY_CTYPES = {**expression.C_SCALARS, "bool": "unsigned char"}
#: the names an item expression may use besides its arrays (each alone: its element i; or
#: indexed, ``x[j]``): the element's index and the count
ITEM_NAMES = ("i", "n")
#: the same for a rule, which also has the element's scanned value ``v`` and its ``item`` (the
#: value it scanned as)
RULE_NAMES = ("i", "n", "v", "item")
#: the most arrays a transform reads, and writes
MOST_ARRAYS = 8


def _check_arrays(what: str, arrays: tuple[tuple[str, str], ...], taken: set[str]) -> None:
    if not 0 < len(arrays) <= MOST_ARRAYS:
        raise ValueError(f"a transform {what} 1 to {MOST_ARRAYS} arrays, not {len(arrays)}")
    for name, dtype in arrays:
        if not (isinstance(name, str) and name.isidentifier() and name.isascii()):
            raise ValueError(f"an array's name must be an identifier, got {name!r}")
        reserved = name in expression.NAMES or name in expression.RESERVED or name in RULE_NAMES
        # a name of the preludes (js_, JS_), of a compiler (_, __) or a macro's shape (M_PI, CL_...)
        shaped = name.startswith(("js_", "JS_", "_")) or (name.isupper() and len(name) > 1) or "__" in name
        if name in taken or reserved or shaped:
            raise ValueError(
                f"array name {name!r} is taken (by another array, a name of C or of its macros, or i, n, v)"
            )
        if dtype not in ARRAY_CTYPES:
            raise ValueError(f"array {name!r}: dtype {dtype!r} is not one of {', '.join(ARRAY_CTYPES)}")
        taken.add(name)


@dataclass(frozen=True)
class Write:
    """One rule of a transform: ``array[at] = value`` for the elements where ``when`` holds.

    Each is an expression over ``i``, ``n``, ``v`` (the element's scanned value), ``item``
    (the value it scanned as: the transform's item) and the transform's read arrays; a place
    outside the array writes nothing. A rule reading other elements (``x[j]``) waits for
    them after the stores before it; its element's own reads and ``item`` were loaded first.
    """

    array: str
    at: str
    value: str
    when: str = "1"


@dataclass(frozen=True)
class Transform:
    """What a scan reads and writes (see the module text).

    Attributes
    ----------
    name : str
        A short name, in the program's description.
    reads : tuple of (name, dtype)
        The arrays the expressions read, in the order a launch passes them.
    item : str
        Element ``i``'s scanned value: an expression over ``i``, ``n`` and ``reads``.
    writes : tuple of (name, dtype)
        The arrays the rules write, in the order a launch passes them.
    rules : tuple of Write
        What each element writes, in order.
    functions : str
        C functions the expressions may call (``calls``: their names and argument counts):
        only what jitscan wrote itself, a Python predicate lowered from Numba's typed IR
        (``operators/lower.py``), never a user's text.
    calls : tuple of (name, arguments)
    """

    name: str
    reads: tuple[tuple[str, str], ...]
    item: str
    writes: tuple[tuple[str, str], ...]
    rules: tuple[Write, ...]
    functions: str = ""
    calls: tuple[tuple[str, int], ...] = ()
    #: the rendered expressions: the item's, and each rule's (when, at, value)
    _item: str = field(init=False, compare=False, repr=False)
    _rules: tuple[tuple[str, str, str], ...] = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        if not (isinstance(self.name, str) and self.name.isidentifier()):
            raise ValueError(f"a transform's name must be an identifier, got {self.name!r}")
        object.__setattr__(self, "reads", tuple((str(a), str(d)) for a, d in self.reads))
        object.__setattr__(self, "writes", tuple((str(a), str(d)) for a, d in self.writes))
        object.__setattr__(self, "rules", tuple(self.rules))
        taken: set[str] = set()
        _check_arrays("reads", self.reads, taken)
        _check_arrays("writes", self.writes, taken)
        reads = tuple(a for a, _ in self.reads)
        written = {a for a, _ in self.writes}
        calls = tuple((str(f), int(k)) for f, k in self.calls)
        object.__setattr__(self, "calls", calls)
        if bool(calls) != bool(self.functions):
            raise ValueError(f"transform {self.name!r}: functions and the calls naming them go together")
        item = expression.render(
            self.name, self.item, (*ITEM_NAMES, *reads), reads, f"transform {self.name!r}: item", calls
        )
        rules = []
        if not self.rules:
            raise ValueError(f"transform {self.name!r} has no rules: it would write nothing")
        for k, w in enumerate(self.rules):
            if not isinstance(w, Write):
                raise TypeError(f"transform {self.name!r}: rules are jitscan Write rules, got {w!r}")
            if w.array not in written:
                raise ValueError(
                    f"transform {self.name!r}: rule {k} writes {w.array!r}, not one of its writes"
                )
            said = f"transform {self.name!r}: rule {k}"
            rules.append(
                tuple(
                    expression.render(
                        self.name, text, (*RULE_NAMES, *reads), reads, f"{said}'s {part}", calls
                    )
                    for part, text in (("when", w.when), ("at", w.at), ("value", w.value))
                )
            )
        object.__setattr__(self, "_item", item)
        object.__setattr__(self, "_rules", tuple(rules))

    def c_io(self, opaque: str) -> list[str]:
        """``js_src`` and ``js_dst`` of this transform, as ``ValueSpelling.io`` gives them.

        Kernels take each array as a pointer, an element offset and a length. A read goes
        through ``js_rd_<name>``, which gives 0 outside the array; a write is dropped
        outside its array. ``opaque``: the dialect's ``JS_OPAQUE_I64``, through which every
        index passes before its bounds are checked (an expression's arithmetic may overflow,
        which C leaves undefined: a compiler may assume it does not and fold a check away).
        """
        ins = [(a, ARRAY_CTYPES[d]) for a, d in self.reads]
        outs = [(a, ARRAY_CTYPES[d]) for a, d in self.writes]
        members = " ".join(f"JS_GLOBAL const {c}* {a}; js_i64 {a}_len;" for a, c in ins)
        params = ", ".join(
            f"JS_GLOBAL const {c}* in{k}, js_size in_off{k}, js_size in_len{k}"
            for k, (_, c) in enumerate(ins)
        )
        at_args = ", ".join(f"in{k} + in_off{k}, in_len{k}" for k in range(len(ins)))
        at_params = ", ".join(f"JS_GLOBAL const {c}* p{k}, js_size l{k}" for k, (_, c) in enumerate(ins))
        sets = " ".join(f"r.{a} = p{k}; r.{a}_len = (js_i64)l{k};" for k, (a, _) in enumerate(ins))
        lines = [
            f"/* transform {self.name}: element i scans as an expression of the arrays it reads, and",
            " * writes its scanned value v through rules; reads outside an array give 0, writes",
            " * outside one are dropped (kernels/transform.py) */",
            opaque,
            "JS_DEVICE_FN js_i64 js_opaque(js_i64 j) { JS_OPAQUE_I64(j); return j; }",
            f"typedef struct {{ {members} js_i64 n; }} js_src;",
            *([self.functions] if self.functions else []),
            f"#define JS_SRC_PARAMS {params}",
            f"#define JS_SRC_AT js_src_at({at_args}, n)",
            f"JS_DEVICE_FN js_src js_src_at({at_params}, js_size n) "
            f"{{ js_src r; {sets} r.n = (js_i64)n; return r; }}",
        ]
        for a, c in ins:
            lines += [
                f"JS_DEVICE_FN {c} js_rd_{a}_(js_src s, js_i64 j) "
                f"{{ return j >= 0 && j < s.{a}_len ? s.{a}[j] : ({c})0; }}",
                f"#define js_rd_{a}(j) js_rd_{a}_(js_s, js_opaque(j))",
            ]
        # each array's name alone is its element i (unused ones cost nothing once compiled)
        # the element's own index is jitscan's, never an expression's: no check to keep
        elements = " ".join(f"const {c} {a} = js_rd_{a}_(js_s, i); (void){a};" for a, c in ins)
        names = f"const js_i64 i = (js_i64)js_i; const js_i64 n = js_s.n; (void)i; (void)n; {elements}"
        lines += [
            f"JS_DEVICE_FN js_val js_src_item(js_src js_s, js_size js_i) "
            f"{{ {names} return (js_val)({self._item}); }}",
            "#define JS_SRC_ITEM(s_, i) js_src_item(s_, i)",
            "#define JS_SRC_VLOAD(v, s_, base, vi) do { for (js_u32 _e = 0; _e < JS_V; ++_e) "
            "(v)[_e] = js_src_item(s_, (base) + (js_size)(vi) * JS_V + _e); } while (0)",
        ]
        members = " ".join(f"JS_GLOBAL {c}* {a}; js_i64 {a}_len;" for a, c in outs)
        params = ", ".join(
            f"JS_GLOBAL {c}* out{k}, js_size out_off{k}, js_size out_len{k}" for k, (_, c) in enumerate(outs)
        )
        at_args = ", ".join(f"out{k} + out_off{k}, out_len{k}" for k in range(len(outs)))
        at_params = ", ".join(f"JS_GLOBAL {c}* p{k}, js_size l{k}" for k, (_, c) in enumerate(outs))
        sets = " ".join(f"r.{a} = p{k}; r.{a}_len = (js_i64)l{k};" for k, (a, _) in enumerate(outs))
        ctype = dict(outs)
        body = []
        for w, (when, at, value) in zip(self.rules, self._rules, strict=True):
            body.append(
                f"if ({when}) {{ js_i64 js_at = (js_i64)({at}); JS_OPAQUE_I64(js_at); "
                f"if (js_at >= 0 && js_at < js_d.{w.array}_len) "
                f"js_d.{w.array}[js_at] = ({ctype[w.array]})({value}); }}"
            )
        # element i's own reads and its item, loaded apart from the rules that use them: the
        # rules write arrays the compiler must assume may be the ones read, so no load moves
        # past a rule's store; the callers load a vector's (a GPU tile's, tile.h) first
        fields = " ".join(f"{c} {a};" for a, c in ins)
        loads = " ".join(f"o.{a} = js_rd_{a}_(js_s, (js_i64)js_i);" for a, _ in ins)
        names = " ".join(f"const {c} {a} = js_o.{a}; (void){a};" for a, c in ins)
        lines += [
            f"typedef struct {{ js_src in; {members} }} js_dst;",
            f"#define JS_DST_PARAMS {params}",
            f"#define JS_DST_AT js_dst_at(JS_SRC_AT, {at_args})",
            f"JS_DEVICE_FN js_dst js_dst_at(js_src in, {at_params}) "
            f"{{ js_dst r; r.in = in; {sets} return r; }}",
            "/* what a rule reads of its element: the arrays' element i, and the item it scans as */",
            "#define JS_DST_OWN 1",
            f"typedef struct {{ {fields} js_val item; }} js_own;",
            "JS_DEVICE_FN js_own js_dst_own(js_dst js_d, js_size js_i) "
            f"{{ js_src js_s = js_d.in; js_own o; {loads} o.item = js_src_item(js_s, js_i); return o; }}",
            "JS_DEVICE_FN void js_dst_rule(js_dst js_d, js_size js_i, js_val v, js_own js_o) "
            "{ js_src js_s = js_d.in; const js_i64 i = (js_i64)js_i; const js_i64 n = js_s.n; "
            f"const js_val item = js_o.item; (void)i; (void)n; (void)v; (void)item; {names} "
            + " ".join(body)
            + " }",
            "JS_DEVICE_FN void js_dst_item(js_dst js_d, js_size js_i, js_val v) "
            "{ js_dst_rule(js_d, js_i, v, js_dst_own(js_d, js_i)); }",
            "JS_DEVICE_FN void js_dst_vector(js_dst js_d, js_size first, const js_val y[JS_V]) "
            "{ js_own o[JS_V]; for (js_u32 e = 0; e < JS_V; ++e) o[e] = js_dst_own(js_d, first + e); "
            "for (js_u32 e = 0; e < JS_V; ++e) js_dst_rule(js_d, first + e, y[e], o[e]); }",
            "#define JS_DST_ITEM(d, i, v) js_dst_item(d, i, v)",
            "#define JS_DST_VSTORE(y, d, base, vi) js_dst_vector(d, (base) + (js_size)(vi) * JS_V, y)",
        ]
        return lines


__all__ = ["ARRAY_CTYPES", "Transform", "Write"]
