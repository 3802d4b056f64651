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

import re
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

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
                f"array name {name!r} is taken (by another array, a name of C or of its macros, "
                "or i, n, v, item)"
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
    The last element's rules (``when`` is ``i == n - 1``) run after its others.
    """

    array: str
    at: str
    value: str
    when: str = "1"

    @property
    def last(self) -> bool:
        """Whether the rule is the last element's alone (``when`` is ``i == n - 1``): a GPU
        tile runs it only where it holds that element, after the element's other rules."""
        return self.when.replace(" ", "") == "i==n-1"


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
    _hash: int = field(init=False, compare=False, repr=False)

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
        # the key of its prepared scans, looked up on every call: hashed once
        described = (self.name, self.reads, self.item, self.writes, self.rules, self.functions, calls)
        object.__setattr__(self, "_hash", hash(described))

    def __hash__(self) -> int:
        return self._hash

    def c_io(self, opaque: str, vector_load: Callable[[str, str], list[str]], width: int) -> list[str]:
        """``js_src`` and ``js_dst`` of this transform, as ``ValueSpelling.io`` gives them.

        Kernels take each array as a pointer, an element offset and a length. A read goes
        through ``js_rd_<name>``, which gives 0 outside the array; a write is dropped
        outside its array. ``opaque``: the dialect's ``JS_OPAQUE_I64``, through which every
        index passes before its bounds are checked (an expression's arithmetic may overflow,
        which C leaves undefined: a compiler may assume it does not and fold a check away).
        ``vector_load(macro, dtype)``: the dialect's ``macro(dst, ptr, vi)``, vector ``vi`` of
        ``width`` elements of ``dtype`` in accesses of at most 16 bytes.
        """
        ins = [(a, ARRAY_CTYPES[d]) for a, d in self.reads]
        outs = [(a, ARRAY_CTYPES[d]) for a, d in self.writes]
        # the alignment of an array's vector loads: their 16-byte pieces, or the whole vector
        align = {a: min(16, width * np.dtype(d).itemsize) for a, d in self.reads}
        members = " ".join(f"JS_GLOBAL const {c}* {a}; js_i64 {a}_len; int {a}_whole;" for a, c in ins)
        params = ", ".join(
            f"JS_GLOBAL const {c}* in{k}, js_size in_off{k}, js_size in_len{k}"
            for k, (_, c) in enumerate(ins)
        )
        at_args = ", ".join(f"in{k} + in_off{k}, in_len{k}" for k in range(len(ins)))
        at_params = ", ".join(f"JS_GLOBAL const {c}* p{k}, js_size l{k}" for k, (_, c) in enumerate(ins))
        sets = " ".join(
            f"r.{a} = p{k}; r.{a}_len = (js_i64)l{k}; "
            f"r.{a}_whole = (js_size)p{k} % {align[a]}u == 0 && l{k} >= n;"
            for k, (a, _) in enumerate(ins)
        )
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
                *vector_load(f"JS_TLOAD_{a}", dict(self.reads)[a]),
            ]
        # the arrays read alone (element i) in the item or a rule: their elements go in js_own
        said = " ".join((self._item, *(part for rule in self._rules for part in rule)))
        own = [(a, c) for a, c in ins if re.search(rf"\b{a}\b", said)]
        fields = " ".join(f"{c} {a};" for a, c in own)
        each = " ".join(f"o.{a} = js_rd_{a}_(js_s, (js_i64)js_i);" for a, _ in own)

        def vector(a: str, c: str) -> str:  # a vector's elements of array a, unchecked
            return (
                f"{{ {c} t[JS_V]; JS_TLOAD_{a}(t, js_s.{a} + first, 0); "
                f"for (js_u32 e = 0; e < JS_V; ++e) o[e].{a} = t[e]; }}"
            )

        checked = " ".join(
            f"if (js_s.{a}_whole && first + JS_V <= (js_size)js_s.n) {vector(a, c)} "
            f"else {{ for (js_u32 e = 0; e < JS_V; ++e) o[e].{a} = js_rd_{a}_(js_s, (js_i64)(first + e)); }}"
            for a, c in own
        )
        fast = " ".join(vector(a, c) for a, c in own)
        whole = " && ".join(f"js_s.{a}_whole" for a, _ in own) or "1"
        names = " ".join(f"const {c} {a} = js_o.{a}; (void){a};" for a, c in own)
        # x[i - 1] of an array read alone, as the grammar renders it: the element before,
        # which a vector holds for all but its first
        item = self._item
        for a, _ in own:
            before = f"js_rd_{a}((js_i64)(i - 1))"
            item = item.replace(before, f"(js_p ? js_prev.{a} : {before})")
        common = "const js_i64 i = (js_i64)js_i; const js_i64 n = js_s.n; (void)i; (void)n;"
        lines += [
            "/* What the item and a rule read of their element: the element i of each array read",
            " * alone, and the item. A vector's are loaded as vectors where they lie whole in an",
            " * array aligned for it and at least n long (js_own_fast, for a tile whose every",
            " * array is so: no check at all), else element by element, checked. The element's",
            " * index is jitscan's, never an expression's. */",
            f"typedef struct {{ {fields} js_val item; }} js_own;",
            f"JS_DEVICE_FN int js_src_whole(js_src js_s) {{ return {whole}; }}",
            "/* js_prev: element i - 1's, where js_p says the caller holds it (a vector's items",
            " * after its first): an item reading x[i - 1] of an array x read alone reads it there */",
            "JS_DEVICE_FN js_val js_item_of(js_src js_s, js_size js_i, js_own js_o, "
            "js_own js_prev, int js_p) "
            f"{{ {common} {names} (void)js_prev; (void)js_p; return (js_val)({item}); }}",
            f"JS_DEVICE_FN js_own js_own_at(js_src js_s, js_size js_i) {{ js_own o; {each} "
            "o.item = js_item_of(js_s, js_i, o, o, 0); return o; }",
            f"JS_DEVICE_FN void js_own_checked(js_src js_s, js_size first, js_own o[JS_V]) {{ {checked} }}",
            f"JS_DEVICE_FN void js_own_fast(js_src js_s, js_size first, js_own o[JS_V]) {{ {fast} }}",
            "#define JS_SRC_ITEM(s_, i) js_own_at(s_, i).item",
            "#define JS_SRC_VLOAD(v, s_, base, vi) do { js_own _o[JS_V]; "
            "js_size _first = (base) + (js_size)(vi) * JS_V; js_own_checked(s_, _first, _o); "
            "for (js_u32 _e = 0; _e < JS_V; ++_e) "
            "(v)[_e] = js_item_of(s_, _first + _e, _o[_e], _o[_e ? _e - 1 : 0], _e > 0); } while (0)",
        ]
        members = " ".join(f"JS_GLOBAL {c}* {a}; js_i64 {a}_len;" for a, c in outs)
        params = ", ".join(
            f"JS_GLOBAL {c}* out{k}, js_size out_off{k}, js_size out_len{k}" for k, (_, c) in enumerate(outs)
        )
        at_args = ", ".join(f"out{k} + out_off{k}, out_len{k}" for k in range(len(outs)))
        at_params = ", ".join(f"JS_GLOBAL {c}* p{k}, js_size l{k}" for k, (_, c) in enumerate(outs))
        sets = " ".join(f"r.{a} = p{k}; r.{a}_len = (js_i64)l{k};" for k, (a, _) in enumerate(outs))
        ctype = dict(outs)
        most, last = [], []
        for w, (when, at, value) in zip(self.rules, self._rules, strict=True):
            # A place is in its array where it is below the length as unsigned (a negative
            # one wraps above): one compare. GPUs work the place out whatever the condition (an
            # expression has no effect and reads only inside its arrays), so that one predicate
            # guards the store and no branch splits the subgroup; on a CPU that costs more than
            # the branch it saves (PoCL, experiments/selection_h200.md).
            # (the element's own place is jitscan's index, which no arithmetic overflowed:
            # without the opaque copy a CPU's compiler vectorizes a dense rule; a copy
            # through a transform ran 2.6x faster so on PoCL, experiments/selection_h200.md)
            opaque = "" if w.at.strip() == "i" else " JS_OPAQUE_I64(js_at);"
            place = f"js_i64 js_at = (js_i64)({at});{opaque}"
            inside = f"(js_u64)js_at < (js_u64)js_d.{w.array}_len"
            store = f"js_d.{w.array}[js_at] = ({ctype[w.array]})({value});"
            (last if w.last else most).append(
                f"if (JS_T > 1) {{ {place} if (({when}) && {inside}) {store} }} "
                f"else if ({when}) {{ {place} if ({inside}) {store} }}"
            )
        rule = (
            "{ js_src js_s = js_d.in; const js_i64 i = (js_i64)js_i; const js_i64 n = js_s.n; "
            f"const js_val item = js_o.item; (void)i; (void)n; (void)v; (void)item; {names} "
        )
        lines += [
            f"typedef struct {{ js_src in; {members} }} js_dst;",
            f"#define JS_DST_PARAMS {params}",
            f"#define JS_DST_AT js_dst_at(JS_SRC_AT, {at_args})",
            f"JS_DEVICE_FN js_dst js_dst_at(js_src in, {at_params}) "
            f"{{ js_dst r; r.in = in; {sets} return r; }}",
            "/* the rules: those of every element, and those of the last (when i == n - 1), which",
            " * a GPU tile runs only where it holds the last element (tile.h) */",
            "#define JS_DST_OWN 1",
            "#define JS_DST_SRC(d) ((d).in)",
            "JS_DEVICE_FN void js_dst_most(js_dst js_d, js_size js_i, js_val v, js_own js_o) "
            + rule
            + " ".join(most)
            + " }",
            "JS_DEVICE_FN void js_dst_last(js_dst js_d, js_size js_i, js_val v, js_own js_o) "
            + rule
            + " ".join(last)
            + " }",
            "JS_DEVICE_FN void js_dst_rule(js_dst js_d, js_size js_i, js_val v, js_own js_o) "
            "{ js_dst_most(js_d, js_i, v, js_o); js_dst_last(js_d, js_i, v, js_o); }",
            "JS_DEVICE_FN void js_dst_item(js_dst js_d, js_size js_i, js_val v) "
            "{ js_dst_rule(js_d, js_i, v, js_own_at(js_d.in, js_i)); }",
            "JS_DEVICE_FN void js_dst_vector(js_dst js_d, js_size first, const js_val y[JS_V]) "
            "{ js_own o[JS_V]; js_own_checked(js_d.in, first, o); "
            "for (js_u32 e = 0; e < JS_V; ++e) "
            "o[e].item = js_item_of(js_d.in, first + e, o[e], o[e ? e - 1 : 0], e > 0); "
            "for (js_u32 e = 0; e < JS_V; ++e) js_dst_most(js_d, first + e, y[e], o[e]); "
            "if (first + JS_V >= (js_size)js_d.in.n) "
            "for (js_u32 e = 0; e < JS_V; ++e) js_dst_last(js_d, first + e, y[e], o[e]); }",
            "#define JS_DST_ITEM(d, i, v) js_dst_item(d, i, v)",
            "#define JS_DST_VSTORE(y, d, base, vi) js_dst_vector(d, (base) + (js_size)(vi) * JS_V, y)",
        ]
        return lines


__all__ = ["ARRAY_CTYPES", "Transform", "Write"]
