"""User-given text as messages show it: capped, saying how much was left out.

A case name of 5,000 characters, an unknown key of a megabyte or 800k stale
recording entries were printed whole: one line of millions of characters in a
CI log. Every message that repeats a user's text passes it through here.
"""

from __future__ import annotations

# Characters of one user-given string a message shows at most.
MAX_SHOWN = 120


def shorten(text: object, limit: int = MAX_SHOWN) -> str:
    """``text`` as a string of at most about ``limit`` characters (the rest counted)."""
    value = str(text)
    if len(value) <= limit:
        return value
    return f"{value[:limit]}... ({len(value) - limit} more characters)"
