"""A Monoid's ``combine`` is parsed against the grammar of an expression over ``a`` and ``b``
(``jitscan.operators.expression``): what names memory, writes, or ends the expression is
refused naming the part, and what is taken cannot trap.

The fuzzer at the end generates expressions from a C grammar, and hostile variants of them,
with Hypothesis: every text is refused with a ValueError or rendered into the grammar; the
rendered ones are compiled and run on PoCL in a subprocess, on the values where C traps
(0, -1, the most negative), so that a crash of the process shows as a failed case. CI runs
a fast form; the long one is ``JITSCAN_FUZZ_EXAMPLES=5000 python -m pytest
tests/test_monoid_grammar.py -k fuzz`` (docs/reliability.md gives its last counts).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import jitscan
from jitscan.operators import expression
from jitscan.operators.monoid import BUILTIN, CMUL64

#: examples per fuzz test (the long run sets more)
EXAMPLES = int(os.environ.get("JITSCAN_FUZZ_EXAMPLES", "150"))
#: rendered expressions compiled and run on PoCL by the fast form
RUN_IN_CI = 48


def _refused(combine: str) -> str:
    with pytest.raises(ValueError) as info:
        jitscan.Monoid("m", combine, 0)
    return str(info.value)


@pytest.mark.parametrize(
    "combine, part",
    [
        ("(a+b)*0 + *(int*)(long)140737488355328UL", "*(int*)(long)140737488355328UL"),
        ("++*(int*)(long)140737488355328UL", "++*(int*)"),
        ("*(int*)(long)a + b", "*(int*)(long)a + b"),
        ("a ? b : *(char*)0", "*(char*)0"),
    ],
)
def test_a_combine_that_would_read_or_write_memory_is_refused_quoting_the_part(combine, part):
    said = _refused(combine)
    assert repr(part[:24]).strip("'") in said, said


@pytest.mark.parametrize(
    "combine, what",
    [
        ("*(int*)0", "a dereference"),
        ("&a + b", "an address-of"),
        ("a++", "an increment"),
        ("--a", "a decrement"),
        ("a = b", "an assignment"),
        ("a += b", "an assignment"),
        ("a, b", "a comma outside a function's arguments"),
        ("(a, *(int*)0)", "a comma outside"),
        ("a[0]", "an index"),
        ("a.x", "a member access"),
        ("a->x", "a member access"),
        ("(int*)a", "a pointer type"),
        ("(long long)a", "not a value type"),
        ("int", "type name 'int' outside a cast"),
        ("sqrt", "without calling it"),
        ("pow(a)", "takes 2"),
        ("a b", "goes on after a whole expression"),
        ("a ? b", "needs ':'"),
        ("a ?? b", "needs an operand"),  # a trigraph's start
        ("a <: b", "needs an operand"),  # a digraph of '['
        ("1abc + a", "not a number literal"),
        ("a ? b : c", "the name 'c'"),
        ("sizeof(a)", "the name 'sizeof'"),
        ("__builtin_trap()", "the name '__builtin_trap'"),
        ("a + '1'", 'may not hold "\'"'),
        ("a \\\n+ b", "may not hold '\\\\'"),  # a line continuation
        ("(" * 40 + "a" + ")" * 40, "nests deeper than 32"),
        ("- " * 40 + "a", "nests deeper than 32"),
        ("a / (b / (a / (b / (a / (b / (a / b))))))", "divides inside divisions too deeply"),
    ],
)
def test_what_is_not_an_expression_over_a_and_b_is_refused_naming_it(combine, what):
    said = _refused(combine)
    assert what in said, said


@pytest.mark.parametrize(
    "combine",
    [m.combine for m in BUILTIN.values()]
    + [
        CMUL64.combine,
        "b != 0 ? b : a",
        "(((a >> 32) * (b >> 32)) << 32) | (((a & 0xffffffffu) * (b >> 32) + (b & 0xffffffffu)) & 0xffffffffu)",  # noqa: E501
        "max(a, b) + (int)1.5f - -b",
        "a ? b : a ? a : b",
        "fmin(sqrt(fabs(a)), 2e3) + .5",
    ],
)
def test_an_expression_of_the_grammar_reaches_the_kernels_as_written(combine):
    rendered = jitscan.Monoid("m", combine, 0).expression
    assert rendered.replace(" ", "") == combine.replace(" ", "")
    assert expression.render("m", rendered) == rendered


def _pairs(x: np.ndarray, y: np.ndarray, combine: str, identity: int | float) -> np.ndarray:
    """combine(x[i], y[i]) for each i, through the kernels: a segmented scan of segments [x, y]."""
    values = np.stack([x, y], axis=1).ravel()
    heads = np.arange(values.size) % 2 == 0
    m = jitscan.Monoid("d", combine, identity)
    return jitscan.segmented_scan(values, flags=heads, op=m, backend="opencl")[1::2]


@pytest.mark.parametrize("dtype", ["int32", "int64", "uint32", "uint64"])
@pytest.mark.parametrize("op", ["/", "%"])
def test_integer_division_and_remainder_never_trap_and_divide_by_zero_as_by_one(dtype, op):
    # on a CPU a division by zero, or of the most negative value by -1, kills the process
    info = np.iinfo(dtype)
    edge = np.array([7, 0, 3, info.min, -1 if info.min else 2, info.max, 5], dtype=dtype)
    x, y = (v.ravel() for v in np.meshgrid(edge, edge))
    got = _pairs(x, y, f"a {op} b", 1)
    want = [_c_divide(int(p), int(q), op, info) for p, q in zip(x, y, strict=True)]
    np.testing.assert_array_equal(got, np.array(want, dtype=dtype))


def _c_divide(x: int, y: int, op: str, info: np.iinfo) -> int:
    """C's truncating division and remainder, as jitscan guards them, wrapped to the type."""
    if y == 0:
        y = 1
    q = abs(x) // abs(y) * (1 if (x < 0) == (y < 0) else -1)
    r = x - q * y
    span = 1 << info.bits
    return ((q if op == "/" else r) - info.min) % span + info.min


def test_float_division_stays_cs():
    x = np.array([1.0, 2.0, -1.0, 0.0, 6.0], np.float32)
    y = np.array([0.0, -0.0, 0.0, 0.0, 4.0], np.float32)
    got = _pairs(x, y, "a / b", 1.0)
    np.testing.assert_array_equal(got, [np.inf, -np.inf, -np.inf, np.nan, 1.5])


# -- the fuzzer -----------------------------------------------------------------------

hypothesis = pytest.importorskip("hypothesis", reason="the fuzzer needs Hypothesis (the test extra)")
st = pytest.importorskip("hypothesis.strategies")
from hypothesis import HealthCheck, given, settings  # noqa: E402

_LEAVES = ["a", "b", "0", "1", "2", "7u", "0x7fffffff", "3L", "1.5f", "2.0", ".5", "1e3"]
_BINARY = ["+", "-", "*", "/", "%", "<<", ">>", "<", "<=", ">", ">=", "==", "!=", "&", "^", "|", "&&", "||"]
_UNARY = [
    "-",
    "+",
    "!",
    "~",
    "(int)",
    "(unsigned)",
    "(long)",
    "(js_val)",
    "(unsigned long)",
    "(float)",
    "(double)",
]
#: tokens and fragments of C that reach memory, write or end the expression
_HOSTILE = [
    "*",
    "&",
    "++",
    "--",
    "=",
    "+=",
    ",",
    "[0]",
    ";",
    "->x",
    ".x",
    "(int*)",
    "*(int*)0",
    "sizeof",
    "#",
    "\\",
    "'",
    '"',
    "??=",
    "<:",
    "%:",
    "//",
    "/*",
    "{",
    "}",
    "__global",
    "c",
    "(",
    ")",
    "?",
    ":",
]


def _expressions() -> st.SearchStrategy[str]:
    def extend(child: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
        calls = [
            st.tuples(
                st.sampled_from(sorted(n for n, k in expression.FUNCTIONS.items() if k == arity)),
                st.lists(child, min_size=arity, max_size=arity),
            ).map(lambda f: f"{f[0]}({', '.join(f[1])})")
            for arity in (1, 2)
        ]
        return st.one_of(
            st.tuples(child, st.sampled_from(_BINARY), child).map(lambda t: f"({t[0]} {t[1]} {t[2]})"),
            st.tuples(st.sampled_from(_UNARY), child).map(lambda t: f"{t[0]}({t[1]})"),
            st.tuples(child, child, child).map(lambda t: f"({t[0]} ? {t[1]} : {t[2]})"),
            *calls,
        )

    return st.recursive(st.sampled_from(_LEAVES), extend, max_leaves=12)


def _hostile() -> st.SearchStrategy[str]:
    def insert(t: tuple[str, int, str]) -> str:
        text, at, token = t
        at %= len(text) + 1
        return text[:at] + token + text[at:]

    return st.tuples(_expressions(), st.integers(0, 400), st.sampled_from(_HOSTILE)).map(insert)


def _check_rendering(combine: str, strict: bool = False) -> str | None:
    """None for a refused text (raised when ``strict``); else its rendering, checked to be in the grammar."""
    try:
        rendered = expression.render("m", combine)
    except ValueError:
        if strict:
            raise
        return None
    try:
        again = expression.render("m", rendered)  # the rendering is in the grammar
    except ValueError as why:  # but a guarded division may pass its length or nesting
        assert "/" in combine or "%" in combine, why
        assert any(part in str(why) for part in ("over 2000", "nests deeper", "too deeply")), why
    else:
        assert again == rendered or "/" in combine or "%" in combine  # (a division is guarded again)
    for tok in expression._tokens(rendered):  # and holds only the grammar's words
        assert tok.kind != "name" or tok.text in expression.NAMES
        assert tok.text not in ("=", "++", "--", "[", "]", ";", "{", "}", ".", "->", ",") or tok.text == ","
    return rendered


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_expressions())
def test_fuzz_every_generated_expression_renders_into_the_grammar(combine):
    try:
        _check_rendering(combine, strict=True)
    except ValueError as why:  # only for its size
        assert any(part in str(why) for part in ("nests deeper", "too deeply", "characters, over")), why


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_hostile())
def test_fuzz_hostile_text_is_refused_with_a_value_error_or_rendered_into_the_grammar(combine):
    _check_rendering(combine)


#: the subprocess: each expression as a function beside jitscan's own OpenCL prelude, run on
#: pairs of the values where C traps; prints how many compiled and ran
_RUNNER = textwrap.dedent(
    """
    import json, sys
    import numpy as np, pyopencl as cl
    import jitscan
    from jitscan import backends
    dtype, exprs = sys.argv[1], json.loads(sys.stdin.read())
    info = np.iinfo(dtype) if dtype[0] in "iu" else None
    edge = [0, 1, 2, 7] + ([-1, info.min, info.max] if info is not None and info.min else [])
    if info is not None and not info.min:
        edge += [info.max]
    if info is None:
        edge += [-1.0, 0.5, float("inf"), float("nan"), -0.0]
    vals = np.array(edge, dtype=dtype)
    a, b = (v.ravel().astype(dtype) for v in np.meshgrid(vals, vals))
    prelude = jitscan.source(dtype, backend="opencl", variant="rts")
    queue = backends.get("opencl").queue_for(None)
    ran = built = 0
    for k, e in enumerate(exprs):
        fn = f"JS_DEVICE_FN js_val js_fuzz(js_val a, js_val b) {{ return ({e}); }}"
        kern = ("__kernel void js_fuzz_run(__global const js_val* x, __global const js_val* y, "
                "__global js_val* z) { size_t i = get_global_id(0); z[i] = js_fuzz(x[i], y[i]); }")
        try:
            prg = cl.Program(queue.context, prelude + "\\n" + fn + "\\n" + kern).build()
        except cl.Error:
            continue  # a type error of C (a float shifted, say): a CompileError to a user
        built += 1
        mf = cl.mem_flags
        bx = cl.Buffer(queue.context, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=a)
        by = cl.Buffer(queue.context, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=b)
        bz = cl.Buffer(queue.context, mf.WRITE_ONLY, a.nbytes)
        prg.js_fuzz_run(queue, (a.size,), None, bx, by, bz)
        z = np.empty_like(a)
        cl.enqueue_copy(queue, z, bz)
        queue.finish()
        ran += 1
    print("FUZZ " + json.dumps({"built": built, "ran": ran}))
    """
)


def _run_rendered(dtype: str, exprs: list[str]) -> dict:
    run = subprocess.run(
        [sys.executable, "-c", _RUNNER, dtype],
        input=json.dumps(exprs),
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert run.returncode == 0, (
        f"the process died ({run.returncode}) on one of {exprs}:\n{run.stderr[-2000:]}"
    )
    (line,) = [line for line in run.stdout.splitlines() if line.startswith("FUZZ ")]
    return json.loads(line[5:])


@pytest.mark.parametrize("dtype", ["int32", "uint64", "float32"])
def test_fuzz_rendered_expressions_run_on_the_values_where_c_traps_without_killing_the_process(dtype):
    b = jitscan.backends.get("opencl")
    if not b.available():
        pytest.skip(f"OpenCL unavailable: {b.unavailable_reason()}")
    count = max(RUN_IN_CI, EXAMPLES // 3)
    found: list[str] = []

    @settings(
        max_examples=count * 4,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
    )
    @given(st.one_of(_expressions(), _hostile()))
    def collect(combine):
        rendered = _check_rendering(combine)
        if rendered is not None and len(found) < count:
            found.append(rendered)

    collect()
    # divisions first: the traps are there
    found.sort(key=lambda e: -("/" in e or "%" in e))
    said = _run_rendered(dtype, found)
    divisions = sum("/" in e or "%" in e for e in found)
    print(f"fuzz {dtype}: {len(found)} rendered texts ({divisions} dividing), {said}")
    # a text C does not type (a float shifted) fails to build, as a CompileError would
    assert said["ran"] == said["built"] > 0, said
