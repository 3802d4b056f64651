"""What users read when something goes wrong: compile errors, install hints, the CLI's refusals."""

from __future__ import annotations

import copyreg
import pickle
import re
import subprocess
import sys
import types

import numpy as np
import pytest

import jitscan
from jitscan import errors
from jitscan.__main__ import main
from jitscan.backends import cupy as cupy_backend
from jitscan.backends import opencl_programs
from jitscan.backends.base import Build, build_failure

#: expressions the grammar takes that no compiler does (a shift by a float, ~ of a float)
BAD = ("a << 1.5", "~1.5 + a")
#: a generated source whose second line does not compile, and the column of the culprit
SRC = "/* prelude */\nJS_DEVICE_FN js_val js_vop(js_val a, js_val b) { return (a + c); }\n"
COL = SRC.splitlines()[1].index("c)") + 1


def _build(what: str = "fallback kernel for op 'bad' (int32)") -> Build:
    return Build(key=what, what=what, source=lambda dialect: "", entries={}, threads=1)


@pytest.mark.parametrize("combine", BAD)
def test_a_monoid_that_does_not_compile_shows_its_expression_and_the_first_error_once(backend, combine):
    op = jitscan.Monoid("bad", combine=combine, identity=0)
    with pytest.raises(jitscan.CompileError) as info:
        jitscan.scan(np.arange(10, dtype=np.int32), op=op, backend=backend)
    msg = str(info.value)
    head, *rest = msg.splitlines()
    assert "op 'bad'" in head
    error = head.split(" failed: ", 1)[1]
    assert error and msg.count(error) == 1, msg  # the compiler's first error, once
    assert combine in "\n".join(rest), msg  # the generated line holding the user's expression
    assert "BUILD_PROGRAM_FAILURE" not in msg, msg
    assert not re.search(r"tempfile|/tmp/|\.cl:\d|\.cu\(\d", msg), msg  # no temporary file
    assert info.value.__cause__ is not None  # the whole log stays on the cause


@pytest.mark.parametrize(
    "log, error",
    [
        (  # PoCL, as PyOpenCL words it
            "clBuildProgram failed: BUILD_PROGRAM_FAILURE - clBuildProgram failed: BUILD_PROGRAM_FAILURE\n\n"
            "Build on <pyopencl.Device 'cpu'>:\n\n"
            f"error: /root/.cache/pocl/kcache/tempfile_X.cl:2:{COL}: use of undeclared identifier 'c'\n"
            "error: /root/.cache/pocl/kcache/tempfile_X.cl:3:1: a second error\n",
            "use of undeclared identifier 'c'",
        ),
        (  # clang-based drivers
            f"<kernel>:2:{COL}: error: use of undeclared identifier 'c'\n"
            "<kernel>:3:1: error: a second error\n",
            "use of undeclared identifier 'c'",
        ),
    ],
)
def test_opencl_build_failure_names_the_first_error_and_its_line(log, error):
    msg = build_failure("OpenCL", _build().what, SRC, log, opencl_programs.ERRORS)
    assert msg.splitlines()[0] == f"OpenCL build of the fallback kernel for op 'bad' (int32) failed: {error}"
    assert "return (a + c);" in msg and "second" not in msg and "tempfile" not in msg
    code, caret = msg.splitlines()[-2:]
    assert code[caret.index("^")] == "c"  # the caret under the column the compiler names


@pytest.mark.parametrize(
    "log",
    [
        '/tmp/tmpab12cd/kern.cu(2): error: identifier "c" is undefined\n'
        "  JS_DEVICE_FN js_val js_vop(js_val a, js_val b) { return (a + c); }\n"
        "                                                              ^\n\n"
        "/tmp/tmpab12cd/kern.cu(3): error: a second error\n\n"
        '2 errors detected in the compilation of "/tmp/tmpab12cd/kern.cu".\n',
        f'/tmp/comgr/input/CompileSource:2:{COL}: error: use of undeclared identifier "c"\n',  # hipRTC
    ],
)
def test_nvrtc_build_failure_names_the_first_error_and_its_line(log):
    msg = build_failure("NVRTC", _build().what, SRC, log, cupy_backend._ERRORS)
    head = msg.splitlines()[0]
    assert head.startswith("NVRTC build of the fallback kernel for op 'bad' (int32) failed: ")
    assert '"c"' in head and "second" not in msg and "/tmp/" not in msg
    assert "return (a + c);" in msg


#: PyOpenCL's bundled PoCL on an AMD Zen 5: its LLVM 14 builds no kernel for the CPU
BUNDLED_POCL = "OpenCL 3.0 PoCL 3.0-rc2  Linux, Release, RELOC, LLVM 14.0.6, SLEEF, DISTRO, POCL_DEBUG"
UNKNOWN_CPU_LOG = (
    "clBuildProgram failed: BUILD_PROGRAM_FAILURE - clBuildProgram failed: BUILD_PROGRAM_FAILURE\n\n"
    "Build on <pyopencl.Device 'pthread-AMD EPYC' on 'Portable Computing Language' at 0x55e4b36e1710>:\n\n"
    "error: unknown target CPU 'generic'\nDevice pthread-AMD EPYC failed to build the program\n"
)


def _failing_queue(monkeypatch, log: str, platform_version: str) -> object:
    """A queue whose builds fail with ``log``, as PyOpenCL raises it (its error holds a record)."""
    cl = pytest.importorskip("pyopencl")

    class Program:
        def __init__(self, context, src):
            pass

        def build(self, devices):
            raise cl.RuntimeError(cl._cl._ErrorRecord("clBuildProgram", -11, log))

    monkeypatch.setattr(cl, "Program", Program)
    platform = types.SimpleNamespace(version=platform_version)
    return types.SimpleNamespace(context=None, device=types.SimpleNamespace(platform=platform))


def test_a_pocl_whose_llvm_does_not_know_the_cpu_says_why_and_how_to_mend_it(monkeypatch):
    queue = _failing_queue(monkeypatch, UNKNOWN_CPU_LOG, BUNDLED_POCL)
    what = "fallback kernel for op 'add' (int32)"
    build = Build(key="k", what=what, source=lambda dialect: SRC, entries={}, threads=1)
    with pytest.raises(jitscan.CompileError) as info:
        opencl_programs.compile_program(build, queue, "opencl")
    head, advice = str(info.value).splitlines()
    assert head == f"OpenCL build of the {what} failed: unknown target CPU 'generic'"
    assert "(PoCL 3.0-rc2, LLVM 14.0.6) does not know this processor" in advice
    assert "apt-get install pocl-opencl-icd" in advice and "conda-forge: pocl" in advice
    assert "jitscan then prefers the newest PoCL" in advice
    # an error in the kernel itself gets no such advice
    assert "newer LLVM" not in opencl_programs.build_message("k", SRC, "error: x.cl:2:3: bad", BUNDLED_POCL)


def _pickled(error: BaseException, how: str) -> BaseException:
    """``error`` raised, pickled and loaded: by pickle itself, or as dask.distributed sends a
    worker's error to its client (tblib's reducers, which take its cause, context and
    traceback along)."""
    try:
        raise error
    except BaseException as raised:  # noqa: BLE001 - any error, with a traceback
        error = raised
    if how == "tblib":
        tblib = pytest.importorskip("tblib.pickling_support")
        saved = dict(copyreg.dispatch_table)  # tblib registers its reducers process-wide
        try:
            tblib.install(error)
            return pickle.loads(pickle.dumps(error))
        finally:
            copyreg.dispatch_table.clear()
            copyreg.dispatch_table.update(saved)
    return pickle.loads(pickle.dumps(error))


ERROR_CLASSES = [
    c
    for c in vars(errors).values()
    if isinstance(c, type) and issubclass(c, BaseException) and c.__module__ == errors.__name__
]


@pytest.mark.parametrize("how", ["pickle", "tblib"])
@pytest.mark.parametrize(
    "error",
    [cls(f"a {cls.__name__}") for cls in ERROR_CLASSES]
    + [errors.DeadlockError("a wait past the watchdog", cause="time", waited=1.5)],
    ids=repr,
)
def test_every_jitscan_error_crosses_processes_as_itself(error, how):
    back = _pickled(error, how)
    assert type(back) is type(error) and str(back) == str(error)
    assert vars(back) == vars(error)  # DeadlockError's cause and waited


def test_a_compile_error_of_a_failed_opencl_build_crosses_processes_with_its_log(monkeypatch):
    # under dask.distributed a worker's CompileError did not reach the client ("cannot pickle
    # '_ErrorRecord' object"): it was raised from PyOpenCL's error, which holds one
    queue = _failing_queue(monkeypatch, UNKNOWN_CPU_LOG, BUNDLED_POCL)
    build = Build(key="k", what="fallback kernel", source=lambda dialect: SRC, entries={}, threads=1)
    with pytest.raises(jitscan.CompileError) as info:
        opencl_programs.compile_program(build, queue, "opencl")
    back = _pickled(info.value, "tblib")
    assert type(back) is jitscan.CompileError and str(back) == str(info.value)
    assert str(back.__cause__) == str(info.value.__cause__) and "unknown target CPU" in str(back.__cause__)


def test_install_hints_name_packages_that_exist():
    # the backends as they are where neither package is installed (None in sys.modules: ImportError)
    code = (
        "import sys; sys.modules['pyopencl'] = None; sys.modules['cupy'] = None\n"
        "from jitscan import backends\n"
        "print(backends.get('opencl').unavailable_reason()); print(backends.get('cupy').unavailable_reason())"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    opencl, cuda = out.splitlines()
    assert 'pip install "pyopencl[pocl]"' in opencl and ".[opencl]" in opencl
    assert "cupy-cuda12x" in cuda and "cupy-cuda13x" in cuda and ".[cuda13]" in cuda
    assert "jitscan[" not in out  # jitscan is not on PyPI


def test_version_option(capsys):
    with pytest.raises(SystemExit) as info:
        main(["--version"])
    assert info.value.code == 0
    assert capsys.readouterr().out.strip() == f"jitscan {jitscan.__version__}"


def test_version_option_of_python_m_jitscan():
    res = subprocess.run([sys.executable, "-m", "jitscan", "--version"], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    assert re.fullmatch(r"jitscan \d+\.\d+\S*", res.stdout.strip())


@pytest.mark.parametrize("dtypes", ["int8", "int32,float16", "complex64", "nonsense"])
def test_bench_refuses_dtypes_it_cannot_bench_in_one_line(capsys, dtypes):
    with pytest.raises(SystemExit) as info:
        main(["bench", "--dtypes", dtypes, "--no-progress", "--no-plots"])
    assert info.value.code == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "Traceback" not in err
    assert dtypes.split(",")[-1] in err
    assert "supported dtypes: int32, uint32, int64, uint64, float32, float64" in err
