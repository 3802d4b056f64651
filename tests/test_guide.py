"""The examples of the README and of the user guide run as they are shown.

Every ```python block of README.md and of docs/guide/*.md is an example. The examples of
one page run in order in one namespace, so an example may use what an earlier one on its
page made. A block whose first line starts with ``>>>`` is a doctest: what it shows after
a statement is what that statement must print.

An example that needs what a machine may lack says so on the line before its fence, in an
HTML comment that Markdown does not show::

    <!-- requires: dask, awkward -->

Each name is a module to import (``dask``, ``awkward``, ``pyopencl``, ...), or ``cupy`` (a
CUDA device through CuPy) or ``gpu`` (a GPU on some backend). Where one is missing the
example is skipped with the reason. An example that uses what a marked example made
carries the same marker.
"""

from __future__ import annotations

import doctest
import importlib.util
import io
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest

from jitscan import backends

ROOT = Path(__file__).resolve().parents[1]
GUIDE = ROOT / "docs" / "guide"
PAGES = [ROOT / "README.md", *sorted(GUIDE.glob("*.md"))]
USER_PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), *sorted(GUIDE.glob("*.md"))]

FENCE = re.compile(r"^(?P<indent>\s*)```python\s*$")
MARKER = re.compile(r"^\s*<!--\s*requires:\s*(?P<names>[^>]*?)\s*-->\s*$")
DEVICES = {"cupy", "gpu"}
DOCTEST_FLAGS = doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS

# what a user's page must not name: an issue number, a work session or period, a commit
# hash (7 to 40 hex digits with a letter and a digit among them)
INTERNAL = re.compile(
    r"\bissues? \d+|#\d{2}|\bsessions?\b|\bwork periods?\b"
    r"|\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*[0-9])[0-9a-f]{7,40}\b"
)


def shown(path: Path) -> str:
    return str(path.relative_to(ROOT))


@dataclass(frozen=True)
class Example:
    """One fenced block: where it is, its text, and what it needs."""

    page: Path
    line: int  # of the opening fence, counting from 1
    code: str
    requires: tuple[str, ...]

    @property
    def where(self) -> str:
        return f"{shown(self.page)}:{self.line}"

    @property
    def is_doctest(self) -> bool:
        return self.code.lstrip().startswith(">>>")


def names_in(marker: re.Match) -> tuple[str, ...]:
    return tuple(name.strip() for name in marker["names"].split(",") if name.strip())


def examples_of(page: Path) -> list[Example]:
    """The ```python blocks of a Markdown page, in order, each with its requires: marker."""
    lines = page.read_text(encoding="utf-8").splitlines()
    found, i = [], 0
    while i < len(lines):
        opening = FENCE.match(lines[i])
        if not opening:
            i += 1
            continue
        indent, start = opening["indent"], i
        end = next(j for j in range(start + 1, len(lines)) if lines[j].strip() == "```")
        body = [line.removeprefix(indent) for line in lines[start + 1 : end]]
        before = next((lines[j] for j in range(start - 1, -1, -1) if lines[j].strip()), "")
        marker = MARKER.match(before)
        found.append(Example(page, start + 1, "\n".join(body) + "\n", names_in(marker) if marker else ()))
        i = end + 1
    return found


@cache
def missing(requirement: str) -> str | None:
    """Why ``requirement`` cannot be met here, or None when it can."""
    if requirement == "cupy":
        cupy = backends.get("cupy")
        return None if cupy.available() else f"no CUDA device through CuPy: {cupy.unavailable_reason()}"
    if requirement == "gpu":
        for name in backends.available():
            backend = backends.get(name)
            if backend.device_info(backend.queue_of(None)).is_gpu:
                return None
        return "no GPU on any backend"
    if importlib.util.find_spec(requirement) is None:
        return f"{requirement} is not installed"
    return None


def skip_reason(example: Example) -> str | None:
    reasons = [reason for name in example.requires if (reason := missing(name))]
    return f"{example.where} needs {', '.join(example.requires)}: {'; '.join(reasons)}" if reasons else None


class PageRun:
    """A page's examples, run in order in one namespace, each at most once per process.

    A test asks for one example; the examples before it that have not run in this process
    run first (pytest-xdist may have given their own tests to another worker).
    """

    def __init__(self, examples: list[Example]):
        self.examples = examples
        self.namespace: dict = {"__name__": "__guide__"}
        self.done = 0
        self.broken: str | None = None

    def run(self, example: Example) -> None:
        index = self.examples.index(example)
        while self.done < index:
            earlier = self.examples[self.done]
            self.done += 1
            if self.broken is None and skip_reason(earlier) is None:
                try:
                    self.execute(earlier)
                except Exception as error:  # the test of that example reports it
                    first = (str(error).splitlines() or [""])[0]
                    self.broken = f"the example at {earlier.where} failed ({type(error).__name__}: {first})"
        if self.broken is not None:
            pytest.fail(f"not run, since {self.broken}")
        self.done = index + 1
        try:
            self.execute(example)
        except BaseException:
            self.broken = f"the example at {example.where} failed"
            raise

    def execute(self, example: Example) -> None:
        if example.is_doctest:
            self.doctest(example)
        else:
            # blank lines in front, so that a traceback names the Markdown file's own line
            code = "\n" * example.line + example.code
            exec(compile(code, str(example.page), "exec"), self.namespace)

    def doctest(self, example: Example) -> None:
        parser = doctest.DocTestParser()
        test = parser.get_doctest(
            example.code, self.namespace, example.where, str(example.page), example.line
        )
        test.globs = self.namespace  # DocTest works on a copy; the page's names go on from here
        report = io.StringIO()
        runner = doctest.DocTestRunner(optionflags=DOCTEST_FLAGS)
        runner.run(test, out=report.write, clear_globs=False)
        if runner.failures:
            raise AssertionError(f"{runner.failures} statement(s) printed otherwise:\n{report.getvalue()}")


EXAMPLES = [example for page in PAGES for example in examples_of(page)]
RUNS: dict[Path, PageRun] = {}


def page_run(page: Path) -> PageRun:
    if page not in RUNS:
        RUNS[page] = PageRun([example for example in EXAMPLES if example.page == page])
    return RUNS[page]


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda e: e.where)
def test_the_example_runs_as_shown(example):
    if not backends.available():
        pytest.skip("no backend with a device here")
    reason = skip_reason(example)
    if reason:
        pytest.skip(reason)
    page_run(example.page).run(example)


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda e: e.where)
def test_every_example_is_python_even_where_it_cannot_run(example):
    if example.is_doctest:
        for statement in doctest.DocTestParser().get_examples(example.code):
            compile(statement.source, example.where, "single")
    else:
        compile(example.code, example.where, "exec")


def test_every_page_of_the_guide_shows_examples_and_is_in_its_table_of_contents():
    contents = (GUIDE / "index.md").read_text(encoding="utf-8")
    pages = [page for page in PAGES if page.parent == GUIDE and page.name != "index.md"]
    assert pages, "docs/guide has no pages"
    for page in pages:
        assert examples_of(page), f"{shown(page)} shows no example"
        assert re.search(rf"^{page.stem}$", contents, re.M), f"{page.name} is not in the guide's toctree"


def test_a_requires_marker_stands_just_before_a_python_block_and_names_what_it_needs():
    for page in PAGES:
        lines = page.read_text(encoding="utf-8").splitlines()
        for number, line in enumerate(lines, 1):
            marker = MARKER.match(line)
            if not marker:
                continue
            following = next((text for text in lines[number:] if text.strip()), "")
            assert FENCE.match(following), f"{shown(page)}:{number}: no python block follows the marker"
            for name in names_in(marker):
                assert name in DEVICES or re.fullmatch(r"[a-z_][a-z0-9_.]*", name), (
                    f"{shown(page)}:{number}: {name!r} is neither a device nor a module"
                )


def test_the_readme_begins_with_the_commands_that_set_up_a_fresh_machine():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    first = re.search(r"^```bash\n(.*?)^```", readme, re.M | re.S)
    assert first, "the README has no bash block"
    assert readme.index(first.group(0)) < readme.index("```python"), "an example comes before the set-up"
    commands = first.group(1)
    assert 'python -m pip install -e ".[opencl]" && python examples/quickstart.py' in commands
    assert 'python -m pip install -e ".[opencl,test]" && python -m pytest -n 2' in commands
    assert (ROOT / "examples" / "quickstart.py").exists()


@pytest.mark.parametrize("page", USER_PAGES, ids=shown)
def test_a_users_page_names_no_issue_number_session_or_commit(page):
    found = [
        f"{shown(page)}:{number}: {match.group(0)!r}"
        for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1)
        for match in INTERNAL.finditer(line)
    ]
    assert not found, "internal references in a user's page:\n" + "\n".join(found)
