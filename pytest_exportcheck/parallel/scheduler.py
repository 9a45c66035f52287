"""pytest-xdist scheduling for export checks: one export per worker, GPUs shared up to a cap.

A *work unit* is every item of one (case, capture path, device) — they share
one export, so they go to one worker together. A case's ``consistency`` item on
a device is a unit of its own, handed out once its captures' units have run:
their workers hand it their summaries (``capture_summaries.py``), so one case's
captures run on as many workers as there are.
Units on the CPU go to whichever worker asks; a unit on an accelerator goes
only to one of the workers dealt that accelerator when scheduling starts. How
many workers share one GPU is its *cap* (``gpu_sharing.py``: derived from free
memory by default, ``--exportcheck-gpu-workers N`` to set it, ``1`` for one
worker per GPU). Owners change only when one dies: a survivor takes its place.
A lowered item (``lowered[aoti-export-cpu]``) is a unit of its own too: lowering
takes seconds to minutes (an AOTInductor compile: 30 s and more on 2 cores), far
more than a capture, so a case's targets run on as many workers as there are,
each worker capturing the program again for its own.
Units are handed out longest first, by the durations the last run kept in
pytest's cache (``unit_durations.py``; lowered items the cache does not know are
estimated at a cold lowering's cost), except that a worker takes another unit
of a case it already holds first (it has built that case's model and eager runs).

Builds on xdist's ``LoadScopeScheduling``: it already schedules units; this
class says what a unit is (``_split_scope``) and which worker may take it
(``_assign_work_unit``).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from xdist.scheduler import LoadScopeScheduling

from pytest_exportcheck.containment.crashes import EXIT_SIGNAL, Breadcrumb, CrashLog
from pytest_exportcheck.items.item_names import split_item_name
from pytest_exportcheck.model.devices import KNOWN_KINDS, is_accelerator
from pytest_exportcheck.parallel.gpu_sharing import (
    PEAK_CACHE_KEY,
    cap_for,
    deal,
    free_memory_bytes,
    memory_per_worker,
    requested_workers_per_gpu,
)
from pytest_exportcheck.parallel.unit_durations import load as load_estimates
from pytest_exportcheck.spec.case import LOWERED_PREFIX

# --dist modes that only ask "balance the load"; `each` and `no` mean something else.
BALANCING_MODES = ("load", "loadscope", "loadfile", "loadgroup", "worksteal")


def make_scheduler(config: pytest.Config, log: Any) -> DeviceAwareScheduling | None:
    if not config.getoption("exportcheck") or config.getoption("dist") not in BALANCING_MODES:
        return None
    session = config.pluginmanager.get_plugin("exportcheck-session")
    return DeviceAwareScheduling(config, log, session.crash_log if session else None)


def unit_of(nodeid: str) -> tuple[str, str | None]:
    """``cases/a.yaml::lm::parity[export-cuda:0]`` → (``cases/a.yaml::lm::[export-cuda:0]``,
    ``cuda:0``); a consistency item, ``cases/a.yaml::lm::consistency[cuda:0]``, is a unit of
    its own, ``cases/a.yaml::lm::[cuda:0]``. Other tests are units of their own."""
    head, _, name = nodeid.rpartition("::")
    parsed = split_item_name(name.split("@")[0])
    if not head or parsed is None or parsed[2].split(":")[0] not in KNOWN_KINDS:
        return nodeid, None
    check, capture, device = parsed
    if check == "consistency":
        return f"{head}::[{device}]", device
    if check.startswith(LOWERED_PREFIX):  # long: a unit of its own (see the module's text)
        return f"{head}::[{check}-{capture}-{device}]", device
    return f"{head}::[{capture}-{device}]", device


def case_of(unit: str) -> str:
    """``cases/a.yaml::lm::[export-cuda:0]`` and ``cases/a.yaml::lm::[cuda:0]`` →
    ``cases/a.yaml::lm::cuda:0``: the case and device whose subject a worker builds."""
    head, _, bracket = unit.rpartition("::")
    return f"{head}::{bracket[1:-1].rpartition('-')[2]}" if bracket.startswith("[") else unit


def prerequisites(units: list[str]) -> dict[str, frozenset[str]]:
    """Each consistency unit → the units of its case's captures on its device, which
    hand it their summaries (``capture_summaries.py``)."""
    by_case: dict[str, set[str]] = {}
    for unit in units:
        by_case.setdefault(case_of(unit), set()).add(unit)
    waiting = {}
    for unit in units:
        bracket = unit.rpartition("::")[2]
        device = bracket[1:-1]
        if not bracket.startswith("[") or "-" in device or device.split(":")[0] not in KNOWN_KINDS:
            continue  # not a consistency unit: "[capture-device]", or another test
        captures = {u for u in by_case[case_of(unit)] if not _is_lowered(u)}
        waiting[unit] = frozenset(captures - {unit})
    return waiting


def _is_lowered(unit: str) -> bool:
    return unit.rpartition("::")[2].startswith(f"[{LOWERED_PREFIX}")


class DeviceAwareScheduling(LoadScopeScheduling):
    def __init__(
        self, config: pytest.Config, log: Any = None, crash_log: CrashLog | None = None
    ) -> None:
        super().__init__(config, log)
        self.crash_log = crash_log
        self.requested = requested_workers_per_gpu(config)
        self.owners: dict[str, list[Any]] = {}
        self.sharing: list[str] = []  # per GPU: how many workers and why, for the summary
        self._waiting_for: dict[str, frozenset[str]] | None = None
        self._cases: dict[Any, set[str]] = {}  # per worker: the (case, device) of its units
        self._ordered = False

    def _split_scope(self, nodeid: str) -> str:
        return unit_of(nodeid)[0]

    def schedule(self) -> None:
        if self.collection is None and not self.owners:
            self._deal_accelerators()
        super().schedule()

    def _deal_accelerators(self) -> None:
        collection = next(iter(self.registered_collections.values()), [])
        accelerators = []
        for nodeid in collection:
            device = unit_of(nodeid)[1]
            if device and is_accelerator(device) and device not in accelerators:
                accelerators.append(device)
        # LoadScopeScheduling.schedule shuts the last workers down when there are
        # fewer units than workers: deal only to the workers that will stay.
        units = {unit_of(nodeid)[0] for nodeid in collection}
        workers = self.nodes[: max(1, min(len(self.nodes), len(units)))]
        if not accelerators:
            return
        cache = getattr(self.config, "cache", None)
        last_peak = cache.get(PEAK_CACHE_KEY, None) if cache is not None else None
        per_worker = memory_per_worker(
            self.config.getini("exportcheck_gpu_memory_per_worker"), last_peak
        )
        caps = {
            device: cap_for(
                device,
                len(workers),
                self.requested,
                free_memory_bytes(device) if self.requested is None else None,
                per_worker,
            )
            for device in accelerators
        }
        by_id = {node.gateway.id: node for node in workers}
        dealt = deal(accelerators, list(by_id), caps)
        self.owners = {device: [by_id[i] for i in ids] for device, ids in dealt.items()}
        self.sharing = [
            f"{device}: {len(dealt[device])} of {len(workers)} workers ({caps[device].why})"
            for device in accelerators
        ]
        session = self.config.pluginmanager.get_plugin("exportcheck-session")
        if session is not None:
            session.gpu_sharing = self.sharing
        self.log("accelerator owners:", {d: ids for d, ids in dealt.items()})

    def may_run(self, node: Any, unit: str) -> bool:
        """Whether ``node`` may take ``unit`` now: it may ever, and its captures handed on."""
        return self.may_ever_run(node, unit) and self.ready(unit, node)

    def may_ever_run(self, node: Any, unit: str) -> bool:
        device = unit_of(next(iter(self.workqueue[unit])))[1]
        if device is None or not is_accelerator(device) or device not in self.owners:
            return True
        return node in self.owners[device]

    def ready(self, unit: str, node: Any) -> bool:
        """A consistency unit may go to ``node`` once each of its captures was handed on."""
        return all(self._handed_on(u, node) for u in (self._waiting_for or {}).get(unit, ()))

    def _handed_on(self, unit: str, node: Any) -> bool:
        """A capture's summary is written as its first item runs: a unit with an item done
        has handed it on, and ``node`` finds a unit queued before on itself in its own cache.
        (A queued unit has not; one no longer anywhere ran, or was deselected.)"""
        if unit in self.workqueue:
            return False
        for worker, work in self.assigned_work.items():
            if unit in work:
                return worker is node or any(work[unit].values())
        return True

    def mark_test_complete(self, node: Any, item_index: int, duration: float = 0) -> None:
        """As xdist does; and where the item was its unit's first or last, a consistency
        unit may have become ready for another worker, idle or holding its last item."""
        super().mark_test_complete(node, item_index, duration)
        if not self._waiting_for:
            return
        unit = self._split_scope(self.registered_collections[node][item_index])
        done = list(self.assigned_work[node].get(unit, {}).values())
        if done.count(True) == 1 or all(done):
            for other in self.nodes:
                if other is not node:
                    self._reschedule(other)

    def _longest_first(self) -> None:
        """Reorder the queue once, before the first unit is handed out (``unit_durations``)."""
        estimates = load_estimates(self.config)
        expected = {unit: estimates.unit(work) for unit, work in self.workqueue.items()}
        ordered = sorted(self.workqueue.items(), key=lambda kv: -expected[kv[0]])
        self.workqueue.clear()
        self.workqueue.update(ordered)
        self._waiting_for = prerequisites(list(self.workqueue))
        self._ordered = True
        self.log("longest units first:", [(u, round(expected[u], 1)) for u, _ in ordered[:3]])

    def _assign_work_unit(self, node: Any) -> None:
        if not self._ordered:
            self._longest_first()
        runnable = [u for u in self.workqueue if self.may_run(node, u)]
        # Another unit of a case this worker already holds goes first: the worker built that
        # case's model and eager runs, and keeps them (2 workers on the bundled corpus spent
        # 175 s of item time, against 151 s serially, where each unit went by length alone).
        held = self._cases.get(node, set())
        unit = next((u for u in runnable if case_of(u) in held), runnable[0] if runnable else None)
        if unit is None and self._stuck():
            # Every worker holds at most its last item, which an xdist worker runs only once
            # it knows the next: nothing will be handed on. A consistency unit goes anyway,
            # and its item captures what it was not handed.
            unit = next((u for u in self.workqueue if self.may_ever_run(node, u)), None)
        if unit is None:
            return  # nothing this worker may run now; _reschedule decides on shutdown
        work_unit = self.workqueue.pop(unit)
        self.assigned_work.setdefault(node, {})[unit] = work_unit
        self._cases.setdefault(node, set()).add(case_of(unit))
        collection = self.registered_collections[node]
        node.send_runtest_some(
            [collection.index(nodeid) for nodeid, done in work_unit.items() if not done]
        )
        if not self.workqueue:
            # Nothing left to hand out: every worker is let go, this one too (it may hold
            # only this unit's one item, which it runs once it knows no other follows).
            for each in self.nodes:
                self._reschedule(each)

    def _stuck(self) -> bool:
        return all(self._pending_of(work) < 2 for work in self.assigned_work.values())

    def _reschedule(self, node: Any) -> None:
        if node.shutting_down:
            return
        if node not in self.registered_collections:
            # A worker that replaced a crashed one and has not sent its collection yet:
            # work is sent as indices into it, so it is dealt in once it arrives
            # (xdist reschedules every node when another's collection arrives).
            return
        if not any(self.may_ever_run(node, unit) for unit in self.workqueue):
            # Ownership is fixed, so nothing will become runnable for this worker later.
            node.shutdown()
            return
        if self._pending_of(self.assigned_work[node]) > 2:
            return
        self._assign_work_unit(node)

    def remove_node(self, node: Any) -> str | None:
        """A worker finished or died; a dead one's unfinished units go back to the queue.

        Unlike ``LoadScopeScheduling.remove_node``, the item it died on is marked
        done (xdist reports it as crashed) instead of being handed to the next
        worker to die on, and what it condemned is logged *before* any unit is
        handed out again, so no worker builds that subject or capture again
        (see ``crashes.py``).
        """
        survivors = [n for n in self.nodes if n is not node and not n.shutting_down]
        for device, owners in list(self.owners.items()):
            if node not in owners:
                continue
            owners.remove(node)
            # The cap stays: a survivor not yet using this GPU takes the dead one's place.
            newcomer = next((n for n in survivors if n not in owners), None)
            if newcomer is not None:
                owners.append(newcomer)
            if not owners:
                del self.owners[device]
        workload = self.assigned_work.pop(node)
        pending = [
            (unit, nodeid)
            for unit, work in workload.items()
            for nodeid, done in work.items()
            if not done
        ]
        if not pending:
            return None
        unit, crashitem = pending[0]
        if self.crash_log is not None:
            worker = node.gateway.id
            crash = Breadcrumb.read(self.crash_log.breadcrumb_path(worker), worker)
            if crash is not None and crash.nodeid == crashitem:
                # The signal that ended it, as the session's testnodedown found it.
                signal = getattr(node, EXIT_SIGNAL, None)
                self.crash_log.record(dataclasses.replace(crash, signal=signal))
        workload[unit][crashitem] = True
        self.workqueue.update(
            {unit: work for unit, work in workload.items() if not all(work.values())}
        )
        for other in self.assigned_work:
            self._reschedule(other)
        return crashitem
