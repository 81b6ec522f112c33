"""The HTML profile viewer: one self-contained page from a JSON profile report.

``poplar-py profile report.json --html report.html`` and ``poplar-py run --profile-html``
write it. The page's template, styles and script are files in ``poplar_py/profile/viewer/``; they
are inlined, with the report and its printed summary, when the page is written, so it
needs no network and no other file: plain JavaScript draws the charts on canvases.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from importlib import resources
from typing import Any

from .report import summary

_CSS, _JS, _DATA = "/*@css*/", "/*@js*/", "@data@"


def _viewer_file(name: str) -> str:
    return resources.files("poplar_py.profile").joinpath("viewer", name).read_text(encoding="utf-8")


def _script_json(data: Any) -> str:
    """JSON that is safe inside a <script> element: no '<' (so no '</script>' or '<!--')."""
    return json.dumps(data, separators=(",", ":")).replace("<", "\\u003c")


def render_html(report: Mapping[str, Any], title: str = "") -> str:
    """The viewer page for ``report``, everything inline."""
    page = _viewer_file("viewer.html")
    css, js = _viewer_file("viewer.css"), _viewer_file("viewer.js")
    data = {"title": title, "summary": summary(report, {"showExecutionSteps": "true"}), "report": report}
    head, rest = page.split(_CSS, 1)
    middle, tail = rest.split(_DATA, 1)
    before_js, after_js = tail.split(_JS, 1)
    # the report goes in last, so nothing in it is taken for a placeholder
    return head + css + middle + _script_json(data) + before_js + js + after_js


def write_html(report: Mapping[str, Any], path: str | os.PathLike, title: str | None = None) -> int:
    """Write the viewer page for ``report`` to ``path``; returns its size in bytes."""
    text = render_html(report, os.path.basename(os.fspath(path)) if title is None else title)
    encoded = text.encode("utf-8")
    with open(path, "wb") as f:
        f.write(encoded)
    return len(encoded)


def write_html_from_json(report_path: str | os.PathLike, html_path: str | os.PathLike) -> int:
    """Read a saved JSON report and write its viewer page; returns the page's size in bytes."""
    with open(report_path) as f:
        report = json.load(f)
    return write_html(report, html_path, os.path.basename(os.fspath(report_path)))
