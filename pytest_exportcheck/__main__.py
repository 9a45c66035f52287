"""``python -m pytest_exportcheck``: the command-line tools beside the pytest plugin.

``new`` writes a starter case (``scaffold/``); ``versions`` prints what
changes between the torch minors recorded next to the cases
(``reports/versions.py``, the table in docs/versions.md); ``merge`` makes one report of a
run's shards (``reports/merge.py``); ``html`` the HTML page of a report
(``reports/html/``); ``counts`` the counts a Markdown page states about a run, from its
report (``reports/stated_counts.py``); ``repro`` one item's plain-torch reproduction
(``repro/command.py``). Kept separate from the plugin
so that ``--help`` imports neither pytest's plugin machinery nor torch.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from pytest_exportcheck import scaffold
from pytest_exportcheck.repro import command as repro_command


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
    versions = commands.add_parser(
        "versions",
        help="print, as a Markdown table, what changes between the recorded torch minors",
        description="Read every *.recorded.json under PATH (default: cases) and print, for "
        "each step from one recorded torch minor to the next, what changed, grouped by kind "
        "(placeholder names, lifted state, mutation records, unflattened modules, captures "
        "that start or stop failing), with a count and one example.",
    )
    versions.add_argument("paths", nargs="*", type=Path, default=[Path("cases")], metavar="PATH")
    versions.add_argument(
        "--write",
        type=Path,
        metavar="FILE.md",
        help="put the table into FILE.md between its versions-table markers instead of "
        "printing it (docs/versions.md's table is made so)",
    )
    versions.add_argument(
        "--programs",
        type=Path,
        metavar="DIR",
        help="instead: the table of programs across versions (per loading and saving torch "
        "minor, how many load and match, differences by cause), from the loaded-by-torch-*.json "
        "files that runs with --exportcheck-load-programs DIR wrote there",
    )
    merge = commands.add_parser(
        "merge",
        help="merge the --exportcheck-report files of a run split across CI jobs into one",
        description="Merge shard reports (pytest-split groups, one CI job each) into the JSON "
        "and Markdown report one run would have written, and print its matrix. Refuses shards "
        "of different torch versions or case files, and shards that overlap. Exit status: the "
        "merged run's (1 if any item failed).",
        epilog="example: python -m pytest_exportcheck merge shard-*.json -o report.json",
    )
    merge.add_argument("shards", nargs="+", type=Path, metavar="SHARD.json")
    merge.add_argument("-o", "--output", type=Path, required=True, metavar="REPORT.json")
    merge.add_argument(
        "--update-recordings",
        action="store_true",
        help="also write the recordings the shards observed (runs made with "
        "--exportcheck-update), into the case files' *.recorded.json under the current "
        "directory, as one update run would (stale entries are kept)",
    )
    merge.add_argument(
        "--github",
        choices=("auto", "off"),
        default="auto",
        help="auto (default): where GITHUB_STEP_SUMMARY is set (a GitHub Actions step), "
        "append the merged Markdown report to it; off: do not",
    )
    html = commands.add_parser(
        "html",
        help="write the HTML report of a --exportcheck-report file (or of a merged one)",
        description="Write one self-contained HTML page of REPORT.json: the matrix as a "
        "colored grid, the items with their failure details and durations, the versions "
        "table of the recordings beside the report's case files, and the comparison when "
        "the run had a baseline. It opens from a file, offline.",
        epilog="example: python -m pytest_exportcheck html report.json -o report.html",
    )
    html.add_argument("report", type=Path, metavar="REPORT.json")
    html.add_argument("-o", "--output", type=Path, required=True, metavar="PAGE.html")
    html.add_argument(
        "--root",
        type=Path,
        default=Path("."),
        metavar="DIR",
        help="what the report's case file paths are relative to, to find their recordings "
        "for the versions view (default: the current directory)",
    )
    stated = commands.add_parser(
        "counts",
        help="write a report's counts into Markdown pages, between their count markers",
        description="Rewrite every '<!-- count: QUERY -->N<!-- /count -->' in each PAGE "
        "with the number of REPORT.json's items QUERY selects: 'items', 'cases' or 'gaps', "
        "then filters KEY=V1,V2 or KEY!=V1,V2 (globs) on file (** for any folders), check, "
        "capture, device or outcome; e.g. 'items file=cases/field/** outcome=skipped'.",
        epilog="example: python -m pytest_exportcheck counts corpus.json README.md docs/*.md "
        "--record docs/corpus-counts.json",
    )
    stated.add_argument("report", type=Path, metavar="REPORT.json")
    stated.add_argument("pages", nargs="+", type=Path, metavar="PAGE.md")
    stated.add_argument(
        "--record",
        type=Path,
        metavar="FILE.json",
        help="also write the counts, and which run they came from, to FILE.json",
    )
    stated.add_argument(
        "--check",
        action="store_true",
        help="write nothing: exit 1, naming each, if a page (or --record's file) states "
        "another count than the report's",
    )
    repro = commands.add_parser(
        "repro",
        help="write the plain-torch reproduction of one item (as --exportcheck-repro does)",
        description="Write the script that rebuilds NODEID's case in plain torch (torch and "
        "the case's own code only), makes its capture and programs and shows its finding: "
        "exit 1 when it reproduces, 0 printing 'not reproduced' when not.",
        epilog="example: python -m pytest_exportcheck repro "
        "'cases/main.yaml::mlp::parity[export-cpu]' -o repro.py",
    )
    repro_command.add_arguments(repro)
    args = parser.parse_args(argv)
    if args.command == "repro":
        return repro_command.main(args)
    if args.command == "counts":
        from pytest_exportcheck.reports import stated_counts

        return stated_counts.main(args.report, args.pages, args.record, args.check)
    if args.command == "html":
        from pytest_exportcheck.reports.html import command as html_command

        return html_command.main(args.report, args.output, args.root)
    if args.command == "merge":
        import os

        from pytest_exportcheck.reports import github
        from pytest_exportcheck.reports import merge as merge_reports

        root = Path.cwd() if args.update_recordings else None
        summary = github.summary_path(args.github, os.environ)
        return merge_reports.main(args.shards, args.output, root, summary)
    if args.command == "versions":
        from pytest_exportcheck.reports import versions as versions_table

        return versions_table.main(args.paths, args.write, args.programs)
    return scaffold.run(args, argv)


if __name__ == "__main__":
    sys.exit(main())
