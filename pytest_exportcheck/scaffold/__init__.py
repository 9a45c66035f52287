"""``python -m pytest_exportcheck new TARGET``: a starter case, written by running the model once.

Writing ``expect.placeholders`` by hand means guessing how each capture path
names and orders its graph inputs. The scaffold builds the model and inputs
through the plugin's own code (the case mapping is validated by the loader
that collects cases, then ``Subject`` and ``capture`` run it), so what it
writes down is what the checks will read. What it writes down is an
*observation*, not a truth: the header says so, and REVIEW comments mark the
expectations that pin a difference from eager.

Exit status: 0 the case was written; 1 it was written but no capture
succeeded (every capture carries an xfail); 2 nothing was written (a usage,
case or eager error — the case itself is wrong, so there is nothing to pin).
"""

from pytest_exportcheck.scaffold.command import add_arguments, run

__all__ = ["add_arguments", "run"]
