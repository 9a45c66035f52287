"""The report as one self-contained HTML file: the template, its script and style inlined.

Jinja2 renders it, for two things we must not hand-roll: autoescaping of every
value the template prints, and ``tojson``, which writes the data into a
``<script type="application/json">`` element with ``<``, ``>``, ``&`` and ``'``
escaped, so a failure message holding ``</script>`` stays data (a reproduction
script's text too, held for its copy button). The script then
puts the data into the page with ``textContent`` only. Nothing is fetched: the
file must open from a CI artifact, offline.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from importlib import resources
from typing import Any

import jinja2
from markupsafe import Markup

from pytest_exportcheck.reports.html.data import page_data

# In the page's head: how a later run knows the file is a page it may overwrite.
MARKER = '<meta name="generator" content="pytest-exportcheck html report">'
_PACKAGE = "pytest_exportcheck.reports.html"
# One function's body, in this order (page.html.j2 wraps them and calls start()).
SCRIPTS = ("page.js", "views.js", "repro.js")


def _asset(name: str) -> str:
    text = resources.files(_PACKAGE).joinpath(name).read_text(encoding="utf-8")
    # Inlined into <script>/<style> as they are: a closing tag in them would end it early.
    if "</script" in text.lower() or "</style" in text.lower():
        raise ValueError(f"{name} holds a closing tag; it cannot be inlined")
    return text


@cache
def _template() -> jinja2.Template:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader(_PACKAGE, "."),
        autoescape=True,
    )
    # Compact and strict: 5,000 items are megabytes; NaN is not JSON (data.finite maps it).
    env.policies["json.dumps_kwargs"] = {"separators": (",", ":"), "allow_nan": False}
    return env.get_template("page.html.j2")


def render(
    doc: Mapping[str, Any],
    versions: Mapping[str, Any] | None = None,
    scripts: Mapping[str, Mapping[str, str]] | None = None,
) -> str:
    """The page of a report document (``--exportcheck-report``'s, or a merged one).

    ``versions``: the versions table (``files.versions_view``); None when the case
    files' recordings were not read, which the page says. ``scripts``: the reproduction
    scripts the items name, by path (``files.scripts_view``), for the copy buttons.
    """
    data = page_data(doc, versions, scripts)
    run = data["run"]
    title = f"exportcheck: {data['totals'].get('items', 0)} items, torch {run.get('torch')}"
    return _template().render(
        marker=Markup(MARKER),
        title=title,
        data=data,
        script=Markup("\n".join(_asset(name) for name in SCRIPTS)),
        style=Markup(_asset("page.css")),
    )
