"""pytest hooks and options of pytest-exportcheck; nothing else.

Loaded through the ``pytest11`` entry point in *every* pytest run, so this
module imports only pytest and the standard library: without ``--exportcheck``
the plugin collects nothing and torch is never imported. The collectors, the
per-process state and everything that touches torch load only when needed.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Generator
from pathlib import Path
from typing import Any

import pytest

from pytest_exportcheck import CASE_SUFFIXES
from pytest_exportcheck.unrewritten import leave_unrewritten

DEFAULT_CASE_PATHS = ["cases"]
# The case directories collected in place of testpaths, for the header to say so.
CASE_PATHS_COLLECTED = pytest.StashKey[list[str]]()


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    leave_unrewritten(pluginmanager)  # the first call pytest makes here: unrewritten.py


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("exportcheck", "export conformance testing of PyTorch models")
    group.addoption(
        "--exportcheck",
        action="store_true",
        default=False,
        help="collect YAML model cases and check them through torch.export.",
    )
    group.addoption(
        "--exportcheck-devices",
        dest="exportcheck_devices",
        default=None,
        metavar="LIST",
        help="devices to check, comma-separated: cpu (default), cuda, cuda:1, xpu, mps, meta, "
        "or all (every discovered device). A case's `devices:` narrows it.",
    )
    group.addoption(
        "--exportcheck-lower",
        dest="exportcheck_lower",
        default=None,
        metavar="LIST",
        help="lowering targets every export capture is also checked through, comma-separated: "
        "aoti, inductor, executorch, onnx (adds to each case's `lower:`; lowering compiles C++, "
        "seconds to minutes a program; packages are kept under pytest's cache).",
    )
    group.addoption(
        "--exportcheck-gpu-workers",
        dest="exportcheck_gpu_workers",
        default=None,
        metavar="N",
        help="under pytest-xdist, how many workers may use one GPU: auto (default: as many "
        "as its free memory holds at exportcheck_gpu_memory_per_worker each), a number "
        "(1: one worker per GPU, for models that need all of it) or all.",
    )
    group.addoption(
        "--exportcheck-share-gpus", action="store_true", help="--exportcheck-gpu-workers all."
    )
    group.addoption(
        "--exportcheck-tb",
        dest="exportcheck_tb",
        choices=("short", "long"),
        default="short",
        help="short (default): a failure shows its headline and the user-code frame that "
        "caused it; long: also the full traceback (as -vv does).",
    )
    group.addoption(
        "--exportcheck-timeout",
        dest="exportcheck_timeout",
        default=None,
        metavar="SECONDS",
        help="time limit per item (0: none); overrides the exportcheck_timeout ini option. "
        "A case's `timeout:` overrides both.",
    )
    group.addoption(
        "--exportcheck-memory-limit",
        dest="exportcheck_memory_limit",
        default=None,
        metavar="SIZE",
        help="memory each process running items may ask for (e.g. 12GiB; 0: no limit); "
        "default: the exportcheck_memory_limit ini option, else 90%% of the machine's "
        "(or its cgroup's) memory, for each process.",
    )
    group.addoption(
        "--exportcheck-update",
        action="store_true",
        default=False,
        help="record each case's placeholders, module tree and mutation sets for the installed "
        "torch minor into <case file>.recorded.json (written once, by the controller, atomically).",
    )
    group.addoption(
        "--exportcheck-report",
        dest="exportcheck_report",
        default=None,
        metavar="PATH.json",
        help="write every item's result as JSON to PATH.json and as Markdown to PATH.md.",
    )
    group.addoption(
        "--exportcheck-html",
        dest="exportcheck_html",
        default=None,
        metavar="PATH.html",
        help="write the run as one self-contained HTML page (the matrix as a grid, filters, "
        "each item's details, durations, the versions table): it opens offline, from a CI "
        "artifact. `python -m pytest_exportcheck html REPORT.json -o PATH.html` makes one "
        "from a report.",
    )
    group.addoption(
        "--exportcheck-github",
        dest="exportcheck_github",
        default="auto",
        choices=("auto", "on", "off"),
        help="GitHub Actions: annotate each failure's root cause on its case's YAML line "
        "(workflow commands) and append the Markdown report to $GITHUB_STEP_SUMMARY. auto "
        "(default): annotations where GITHUB_ACTIONS=true, the summary where "
        "GITHUB_STEP_SUMMARY is set; on: annotations anywhere; off: neither.",
    )
    group.addoption(
        "--exportcheck-compare",
        dest="exportcheck_compare",
        default=None,
        metavar="BASELINE.json",
        help="compare this run with a report written by --exportcheck-report: regressions, "
        "fixes and changed recorded expectations. Give it as --exportcheck-compare=PATH (pytest "
        "reads a separate existing path as a test path when it picks its rootdir).",
    )
    group.addoption(
        "--exportcheck-fail-on-regression",
        action="store_true",
        default=False,
        help="with --exportcheck-compare: the baseline is a ratchet — the run fails exactly "
        "when an item that passed (or xfailed) in the baseline fails now, or a new item fails; "
        "failures the baseline already had do not fail it.",
    )
    group.addoption(
        "--exportcheck-programs",
        dest="exportcheck_programs",
        default=None,
        metavar="CHAINS",
        help="chains of steps every export capture is also run as, comma-separated, as a "
        "case's programs: key (e.g. decompose>save,retrace,save>unflatten): judged by parity, "
        "the stepped mutation runs and shapes.",
    )
    group.addoption(
        "--exportcheck-save-programs",
        dest="exportcheck_save_programs",
        default=None,
        metavar="DIR",
        help="save every export capture's program (torch.export.save) with the case's inputs "
        "and eager's outputs under DIR/torch-<this minor>/, for a later torch to load with "
        "--exportcheck-load-programs. Give it as --exportcheck-save-programs=DIR (pytest reads a "
        "separate existing path as a test path when it picks its rootdir).",
    )
    group.addoption(
        "--exportcheck-load-programs",
        dest="exportcheck_load_programs",
        default=None,
        metavar="DIR",
        help="load every program an older torch saved in DIR (--exportcheck-save-programs) "
        "and compare it with what eager gave there and gives here: items loaded[<minor>-"
        "<capture>-<device>]. Only DIR is read, never a directory found by search: loading a "
        ".pt2 can run pickled code, so name only a directory you trust. Programs a newer torch "
        "saved are left: torch promises no forward compatibility. Give it as "
        "--exportcheck-load-programs=DIR.",
    )
    group.addoption(
        "--exportcheck-strict-gaps",
        dest="exportcheck_strict_gaps",
        action="store_true",
        default=False,
        help="an item that passes with gaps (something its check did not verify, listed in "
        "the 'exportcheck gaps' summary) fails instead, naming them; also the "
        "exportcheck_strict_gaps ini option.",
    )
    group.addoption(
        "--exportcheck-progress",
        dest="exportcheck_progress",
        choices=("auto", "off"),
        default="auto",
        help="auto (default): on a terminal, an item running past exportcheck_progress_seconds "
        "shows its stage at the end of pytest's line (under -n, every busy worker's); "
        "never in a log that is not a terminal. off: never.",
    )
    group.addoption(
        "--exportcheck-repro",
        dest="exportcheck_repro",
        default=None,
        metavar="DIR",
        help="write DIR/<case>-<check>-<capture>-<device>.py per failed or xfailed item: plain "
        "torch showing the finding (exit 1) or not (exit 0), run and its verdict reported.",
    )
    group.addoption("--exportcheck-repro-run", choices=("yes", "no"), help="no: only write them.")
    # The ini options that only give an option's default.
    for name, default in (
        ("devices", "cpu"), ("gpu_workers", "auto"), ("lower", ""), ("repro", ""),
        ("repro_run", "yes"),
    ):  # fmt: skip
        option = "--exportcheck-" + name.replace("_", "-")
        parser.addini(f"exportcheck_{name}", f"default for {option}.", default=default)
    parser.addini(
        "exportcheck_progress_seconds",
        "seconds before the live progress line shows an item.",
        default="5",
    )
    parser.addini(
        "exportcheck_strict_gaps",
        type="bool",
        default=False,
        help="default for --exportcheck-strict-gaps: a pass with gaps fails (default false).",
    )
    parser.addini(
        "exportcheck_paths",
        type="args",
        default=DEFAULT_CASE_PATHS,
        help="directories holding YAML cases (default: cases). With --exportcheck and no "
        "paths on the command line, these are collected instead of testpaths.",
    )
    parser.addini(
        "exportcheck_timeout",
        default="600",
        help="seconds an item (building, eager, capture, check) may take before it fails as "
        "[timeout] naming the stage (default 600; 0: no limit).",
    )
    parser.addini(
        "exportcheck_max_elements",
        default=str(1 << 28),
        help="largest tensor, in elements, a case may ask for: in its YAML inputs, and from "
        "torch while its model's constructor or input factory runs (refused before it is "
        "allocated); over it the case fails as [case] instead of swapping the machine "
        "(default 268435456, 1 GiB of float32).",
    )
    parser.addini(
        "exportcheck_max_case_bytes",
        default=str(4 << 20),
        help="largest case file, in bytes, read at all: over it the file fails as one [case] "
        "item before it is parsed (a 50 MB file took 5 min and 7 GB to refuse; default "
        "4194304, 4 MiB; the bundled files are under 25 KB).",
    )
    parser.addini(
        "exportcheck_memory_limit",
        default="",
        help="memory each process running items may ask for (e.g. 12GiB; CPU-only runs, "
        "Linux): an allocation past it fails its item, naming the limit, instead of the "
        "system killing the worker (default: 90% of the machine's memory, or its cgroup's, "
        "for each process; 0: no limit).",
    )
    parser.addini(
        "exportcheck_gpu_memory_per_worker",
        default="",
        help="GPU memory one worker may need (e.g. 4GiB), for the auto cap of workers per "
        "GPU (default: the last run's measured peak per worker with a margin, else 4GiB).",
    )
    parser.addini(
        "exportcheck_supervise",
        type="bool",
        default=True,
        help="without -n, run the session in a child process (a fork, or a fresh interpreter "
        "with the same command line where pytest's process has threads) and fail the run if "
        "that process ends before the run does "
        "(posix._exit, exec, libc's exit in a model); default true.",
    )
    parser.addini(
        "exportcheck_cache_size",
        default="4",
        help="captures kept alive per process at most (each is released after its last item).",
    )


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_load_initial_conftests(early_config: pytest.Config) -> Generator[None]:
    """Outermost, so before pytest captures output or imports any conftest: a
    one-process run is supervised from here (``containment/supervisor.py``): this
    process starts the session as a child and exits with the run's status.

    Then ``pytest --exportcheck`` with no paths collects ``exportcheck_paths`` instead
    of ``testpaths``: so pytest loads their conftests, not the test suite's (which may
    import much the corpus never uses; this project's imports torch and its test
    helpers, in the xdist controller too, before any worker starts)."""
    namespace = early_config.known_args_namespace
    if getattr(namespace, "exportcheck", False):
        from pytest_exportcheck.containment import supervisor

        status = supervisor.supervise(early_config, namespace)
        if status is not None:
            raise SystemExit(status)  # the session ran in the child: nothing more here
        if not namespace.file_or_dir:
            existing = [str(d) for d in _case_dirs(early_config) if d.is_dir()]
            if existing:
                namespace.file_or_dir = existing
    return (yield)


def pytest_report_header(config: pytest.Config) -> list[str]:
    paths = config.stash.get(CASE_PATHS_COLLECTED, None)
    if paths is None:
        return []
    shown = ", ".join(os.path.relpath(p, config.invocation_params.dir) for p in paths)
    return [f"exportcheck: collecting exportcheck_paths ({shown}), not testpaths"]


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config: pytest.Config) -> int | None:
    """Where this plugin came too late for ``pytest_load_initial_conftests`` (a
    conftest's ``pytest_plugins`` named it), supervision is decided here, before any
    ``pytest_configure``; the parent has then imported the conftests the child will."""
    if not config.getoption("exportcheck"):
        return None
    from pytest_exportcheck.containment import supervisor

    return supervisor.supervise(config, config.option)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "exportcheck: an item generated by pytest-exportcheck from a YAML case"
    )
    if not config.getoption("exportcheck"):
        return
    case_dirs = _case_dirs(config)
    if config.args_source != pytest.Config.ArgsSource.ARGS:
        existing = [str(d) for d in case_dirs if d.is_dir()]
        if not existing:
            names = ", ".join(str(d) for d in case_dirs)
            raise pytest.UsageError(
                f"--exportcheck: no case directory to collect ({names} not found); "
                "name case files or directories on the command line, or set exportcheck_paths"
            )
        config.args = existing
        # pytest's header would otherwise say "testpaths: tests": not what is collected.
        config.args_source = pytest.Config.ArgsSource.ARGS
        config.stash[CASE_PATHS_COLLECTED] = existing
    from pytest_exportcheck.items.session import ExportCheckSession

    config.pluginmanager.register(ExportCheckSession(config, case_dirs), "exportcheck-session")
    if not hasattr(config, "workerinput"):
        from pytest_exportcheck.containment.supervisor import UnguardedNotice

        config.pluginmanager.register(UnguardedNotice(), "exportcheck-unguarded")
    from pytest_exportcheck.items.program_saving import PLUGIN, ProgramsAcrossVersions
    from pytest_exportcheck.spec.compat import torch_minor

    if config.getoption("exportcheck_save_programs") or config.getoption(
        "exportcheck_load_programs"
    ):
        from pytest_exportcheck.saved_programs.store import minor_of

        programs = ProgramsAcrossVersions(config, minor_of(torch_minor()))
        config.pluginmanager.register(programs, PLUGIN)
    from pytest_exportcheck.reports import ReportPlugin

    config.pluginmanager.register(ReportPlugin(config), "exportcheck-reports")
    from pytest_exportcheck.parallel.unit_durations import DurationLog

    config.pluginmanager.register(DurationLog(config), "exportcheck-durations")
    if not hasattr(config, "workerinput"):  # the process that owns the terminal
        from pytest_exportcheck.reports.live_progress import PLUGIN as PROGRESS
        from pytest_exportcheck.reports.live_progress import LiveProgress
        from pytest_exportcheck.reports.slowest import SECTION, SlowestCases

        session = config.pluginmanager.get_plugin("exportcheck-session")
        config.pluginmanager.register(LiveProgress(config, session.where_items_are), PROGRESS)
        config.pluginmanager.register(SlowestCases(config), SECTION)


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    if file_path.suffix not in CASE_SUFFIXES or not parent.config.getoption("exportcheck"):
        return None
    session = parent.config.pluginmanager.get_plugin("exportcheck-session")
    if session is None or not session.is_case_file(file_path):
        return None
    from pytest_exportcheck.items.collect import CaseFile

    return CaseFile.from_parent(parent, path=file_path)


@pytest.fixture
def exportcheck(request: pytest.FixtureRequest) -> Callable[..., Any]:
    """Check a model defined in the test, as a YAML case: ``exportcheck(model, args=(x,), ...)``.

    Available in every run, without ``--exportcheck``. The API (and torch) load only
    when a test asks for it. The arguments: ``pytest_exportcheck.api.check_model``.
    """
    from pytest_exportcheck.api import fixture_checker

    return fixture_checker(request.config, request.node)


def _case_dirs(config: pytest.Config) -> list[Path]:
    base = config.inipath.parent if config.inipath else config.rootpath
    return [(base / entry).resolve() for entry in config.getini("exportcheck_paths")]
