"""``python -m pytest_exportcheck``: the command-line tools beside the pytest plugin.

Only ``new`` so far (see ``scaffold.py``). Kept separate from the plugin so that
``--help`` imports neither pytest's plugin machinery nor torch.
"""

from __future__ import annotations

import argparse
import sys

from pytest_exportcheck import scaffold


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(
        prog="python -m pytest_exportcheck",
        description="Tools for pytest-exportcheck case files.",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    new = commands.add_parser(
        "new",
        help="write a starter YAML case for a model by running it once",
        description="Build TARGET, run it once on the given inputs, capture it with each "
        "--capture path and print (or write, -o) a case whose expect: entries are what that "
        "run observed. Review them before committing: they are observations, not truths.",
        epilog="example: python -m pytest_exportcheck new pkg.mod:MyModel --input 2x8:float32 "
        "-o cases/my_model.yaml",
    )
    scaffold.add_arguments(new)
    args = parser.parse_args(argv)
    return scaffold.run(args, argv)


if __name__ == "__main__":
    sys.exit(main())
