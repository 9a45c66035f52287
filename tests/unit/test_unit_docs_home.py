"""The site's home page names every check and links every page of the site's nav."""

from __future__ import annotations

import re
from pathlib import Path

from pytest_exportcheck.spec.case import ALL_CHECKS

ROOT = Path(__file__).resolve().parents[2]
HOME = (ROOT / "docs" / "index.md").read_text(encoding="utf-8")


def test_the_home_page_names_every_check() -> None:
    listed = set(re.findall(r"^- \*\*([a-z]+)\*\*", HOME, re.M))
    # lowered-<target> are one bullet; `loaded` exists with --exportcheck-load-programs only.
    missing = sorted({*ALL_CHECKS, "lowered", "loaded"} - listed)
    assert not missing, f"docs/index.md lists no bullet for {missing}"


def test_the_home_page_links_every_page_of_the_nav() -> None:
    nav = re.findall(r":\s*([\w-]+\.md)\s*$", (ROOT / "mkdocs.yml").read_text("utf-8"), re.M)
    linked = set(re.findall(r"\]\(([\w-]+\.md)[#)]", HOME))
    missing = sorted(set(nav) - linked - {"index.md"})
    assert nav and not missing, f"docs/index.md's table links no {missing}"
