"""Sphinx configuration of jitscan's documentation: the user guide, the API reference and the notes.

Build: ``sphinx-build -W --keep-going -b html docs docs/_build/html`` (the ``docs`` extra
installs Sphinx, numpydoc and MyST, which reads the Markdown pages).
"""

from __future__ import annotations

import sys
from pathlib import Path

# the tree's own package, installed or not
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import jitscan  # noqa: E402

project = "jitscan"
author = "jitscan developers"
copyright = "2026, jitscan developers"
release = jitscan.__version__
version = ".".join(release.split(".")[:2])

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.viewcode",
    "numpydoc",
    "myst_parser",
]

# the Markdown pages (guide/, performance.md, design.md, ...) are read by MyST; the README and
# the notes outside docs/ are not part of the site
source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
exclude_patterns = ["_build", "img"]

# MyST: anchors for headings down to ###, so that a page can link to [text](page.md#a-heading)
# as GitHub renders them
myst_heading_anchors = 3

# autodoc: members in source order; signatures without type hints (the docstrings give
# the types, as NumPy's reference does)
autodoc_member_order = "bysource"
autodoc_typehints = "none"

# numpydoc: no autosummary tables of class members (the classes list what they document),
# parameter types as written (no cross-reference guessing)
numpydoc_show_class_members = False
numpydoc_xref_param_type = False
numpydoc_attributes_as_param_list = True


html_theme = "alabaster"
html_title = f"jitscan {release}"
html_static_path: list[str] = []
