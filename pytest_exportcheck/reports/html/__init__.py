"""The HTML report: one self-contained page of a run (``--exportcheck-html``, or
``python -m pytest_exportcheck html REPORT.json -o PAGE.html``).

* ``data.py``  the report → the JSON the page is drawn from (the grid's layout from matrix.py);
* ``page.py``  that JSON → the HTML, with Jinja2 (``page.html.j2``, ``page.js``, ``page.css``);
* ``files.py`` where a page may be written, the recordings it reads, writing it atomically;
* ``command.py`` the ``html`` command.

No torch here either: the page is written by the xdist controller.
"""

from pytest_exportcheck.reports.html.files import overwrite_problem, write_page
from pytest_exportcheck.reports.html.page import render

__all__ = ["overwrite_problem", "render", "write_page"]
