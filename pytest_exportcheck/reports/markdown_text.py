"""User text (messages, case names, reasons) made inert inside the Markdown reports.

The Markdown report becomes a GitHub job summary, which renders HTML tags, links and
images: a model's exception message must read as the text it is, never as markup. In a
table cell HTML's ``& < >`` become entities and a link's ``](`` is broken with a
backslash; other punctuation stays as written, so the report reads as plain text in a
file too (``[parity] step 2``, ``float32[2, 4]``). In a code span, where neither
entities nor backslashes are read, only what could end the span or the cell is changed.
"""

from __future__ import annotations

import re


def _one_line(text: str) -> str:
    return re.sub(r"\s*[\r\n]\s*", " ", text)


def md_text(text: str) -> str:
    """``text`` as a table cell shows it: one line, no HTML, no link, pipes kept in."""
    flat = _one_line(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    # [text](url) and ![alt](src) are links and images only with "(" right after "]".
    return flat.replace("](", "]\\(").replace("|", "\\|")


def md_code(text: str) -> str:
    """``text`` as an inline code span in a table cell (backticks cannot end it)."""
    return "`" + _one_line(text).replace("`", "'").replace("|", "\\|") + "`"
