"""The xdist scheduler: a unit per (case, capture, device), a consistency item's after its
captures' units; GPUs shared up to their cap."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from pytest_exportcheck.containment.crashes import Breadcrumb, CrashLog
from pytest_exportcheck.parallel.gpu_sharing import PEAK_CACHE_KEY, SIMULATE_FREE_ENV
from pytest_exportcheck.parallel.scheduler import DeviceAwareScheduling, prerequisites, unit_of
from pytest_exportcheck.parallel.unit_durations import CACHE_KEY as DURATIONS_KEY
from pytest_exportcheck.parallel.unit_durations import UNKNOWN_SECONDS, Estimates

CHECKS = ("signature", "hierarchy", "mutation", "parity")
CAPTURES = ("export", "export-strict", "dynamo")


def nodeids(case: str, device: str) -> list[str]:
    return [f"cases/a.yaml::{case}::{check}[export-{device}]" for check in CHECKS]


COLLECTION = [
    *(nodeid for case in ("a", "b", "c", "d") for nodeid in nodeids(case, "cpu")),
    *nodeids("mlp", "cpu"),
    *nodeids("mlp", "cuda:0"),
    *nodeids("mlp", "cuda:1"),
    *nodeids("lm", "cpu"),
    *nodeids("lm", "cuda:0"),
    *nodeids("lm", "cuda:1"),
    "tests/test_plain.py::test_one",
]


class FakeWorker:
    def __init__(
        self, name: str, collection: list[str] = COLLECTION, events: list | None = None
    ) -> None:
        self.gateway = SimpleNamespace(id=name)
        self.collection = collection
        self.events = [] if events is None else events  # ("sent" | "done", nodeid), in order
        self.sent: list[int] = []
        self.shutting_down = False

    def send_runtest_some(self, indices: list[int]) -> None:
        self.sent += indices
        self.events += [("sent", self.collection[i]) for i in indices]

    def shutdown(self) -> None:
        self.shutting_down = True

    def ran(self) -> list[str]:
        return [self.collection[i] for i in self.sent]


class FakeConfig:
    def __init__(
        self,
        workers: int,
        share: bool = False,
        gpu_workers: str = "1",
        memory_per_worker: str = "",
        last_peak: int | None = None,
        durations: dict[str, float] | None = None,
    ) -> None:
        self.option = SimpleNamespace(loadscopereorder=False)
        self.values = {
            "tx": [f"{workers}*popen"],
            "exportcheck_share_gpus": share,
            "exportcheck_gpu_workers": gpu_workers,
        }
        self.ini = {"exportcheck_gpu_memory_per_worker": memory_per_worker}
        cached = {PEAK_CACHE_KEY: last_peak, DURATIONS_KEY: durations}
        self.cache = SimpleNamespace(get=lambda key, default: cached.get(key) or default)
        self.pluginmanager = SimpleNamespace(get_plugin=lambda name: None)

    def getvalue(self, name: str) -> object:
        return self.values[name]

    getoption = getvalue

    def getini(self, name: str) -> object:
        return self.ini[name]


def scheduled(
    workers: int, collection: list[str] = COLLECTION, **config: object
) -> tuple[DeviceAwareScheduling, list[FakeWorker]]:
    scheduler = DeviceAwareScheduling(FakeConfig(workers, **config))  # type: ignore[arg-type]
    events: list = []
    nodes = [FakeWorker(f"gw{i}", collection, events) for i in range(workers)]
    for node in nodes:
        scheduler.add_node(node)
    for node in nodes:
        scheduler.add_node_collection(node, collection)
    scheduler.schedule()
    return scheduler, nodes


def run_to_completion(
    workers: int, collection: list[str] = COLLECTION, **config: object
) -> list[FakeWorker]:
    """Schedule ``collection`` over fake workers, each completing one sent item per round
    (as workers running at the same pace would), until none are left. As an xdist worker,
    one runs its last item only once it knows the next, or is shut down."""
    scheduler, nodes = scheduled(workers, collection, **config)
    done: dict[FakeWorker, int] = dict.fromkeys(nodes, 0)
    while scheduler.has_pending or any(done[n] < len(n.sent) for n in nodes):
        progressed = False
        for node in nodes:
            if done[node] + 1 < len(node.sent) or (
                node.shutting_down and done[node] < len(node.sent)
            ):
                nodeid = node.collection[node.sent[done[node]]]
                node.events.append(("done", nodeid))
                scheduler.mark_test_complete(node, node.sent[done[node]])
                done[node] += 1
                progressed = True
        assert progressed, "scheduler stalled with pending work"
    assert all(node.shutting_down for node in nodes), "a worker was never let go"
    return nodes


def device_workers(nodes: list[FakeWorker]) -> dict[str, set[str]]:
    where: dict[str, set[str]] = {}
    for node in nodes:
        for nodeid in node.ran():
            device = unit_of(nodeid)[1] or "-"
            where.setdefault(device, set()).add(node.gateway.id)
    return where


def test_a_unit_is_one_case_capture_and_device() -> None:
    assert unit_of("cases/a.yaml::lm::parity[export-strict-cuda:1]") == (
        "cases/a.yaml::lm::[export-strict-cuda:1]",
        "cuda:1",
    )
    assert unit_of("tests/test_x.py::test_y[a-b]") == ("tests/test_x.py::test_y[a-b]", None)


def test_a_lowered_item_is_a_unit_of_its_own_that_consistency_does_not_wait_for() -> None:
    # A compile takes seconds to minutes: a case's targets spread over the workers, and
    # the case's consistency item waits for its captures' summaries only.
    assert unit_of("cases/a.yaml::lm::lowered[aoti-export-cuda:1]") == (
        "cases/a.yaml::lm::[lowered-aoti-export-cuda:1]",
        "cuda:1",
    )
    units = [
        "cases/a.yaml::lm::[export-cpu]",
        "cases/a.yaml::lm::[lowered-aoti-export-cpu]",
        "cases/a.yaml::lm::[lowered-onnx-export-cpu]",
        "cases/a.yaml::lm::[cpu]",
    ]
    assert prerequisites(units) == {"cases/a.yaml::lm::[cpu]": {"cases/a.yaml::lm::[export-cpu]"}}


@pytest.mark.parametrize("workers", [1, 2, 3, 4])
def test_every_item_runs_exactly_once(workers: int) -> None:
    nodes = run_to_completion(workers)
    ran = sorted(nodeid for node in nodes for nodeid in node.ran())
    assert ran == sorted(COLLECTION)


@pytest.mark.parametrize("workers", [2, 3, 4])
def test_a_cap_of_one_gives_each_gpu_its_own_worker(workers: int) -> None:
    where = device_workers(run_to_completion(workers, gpu_workers="1"))
    assert len(where["cuda:0"]) == 1
    assert len(where["cuda:1"]) == 1
    assert where["cuda:0"] != where["cuda:1"]


def test_items_of_one_unit_stay_on_one_worker() -> None:
    nodes = run_to_completion(3)
    for node in nodes:
        for other in nodes:
            if node is not other:
                assert not {unit_of(n)[0] for n in node.ran()} & {
                    unit_of(n)[0] for n in other.ran()
                }


def test_cpu_work_spreads_over_all_workers() -> None:
    where = device_workers(run_to_completion(2))
    assert where["cpu"] == {"gw0", "gw1"}


def test_sharing_lets_any_worker_take_gpu_work() -> None:
    nodes = run_to_completion(2, share=True, gpu_workers="1")
    assert sorted(n for node in nodes for n in node.ran()) == sorted(COLLECTION)
    assert all(node.ran() for node in nodes)


def test_a_dead_owner_hands_its_gpu_to_a_survivor() -> None:
    scheduler, (first, second) = scheduled(2)
    (owner_of_cuda0,) = scheduler.owners["cuda:0"]
    survivor = second if owner_of_cuda0 is first else first
    scheduler.remove_node(owner_of_cuda0)
    assert scheduler.owners["cuda:0"] == [survivor]


def test_a_dead_sharer_is_replaced_so_the_cap_holds() -> None:
    scheduler, _ = scheduled(4, gpu_workers="2")
    owners = list(scheduler.owners["cuda:0"])
    scheduler.remove_node(owners[0])
    assert len(scheduler.owners["cuda:0"]) == 2
    assert owners[0] not in scheduler.owners["cuda:0"]


def test_by_default_the_cap_comes_from_free_memory(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(SIMULATE_FREE_ENV, "cuda:0=80GiB,cuda:1=10GiB")
    scheduler, _ = scheduled(4, gpu_workers="auto")
    assert len(scheduler.owners["cuda:0"]) == 4  # 80 x 0.9 / 4 = 18, at most the 4 workers
    assert len(scheduler.owners["cuda:1"]) == 2  # 10 x 0.9 / 4 = 2.25
    assert scheduler.sharing == [
        "cuda:0: 4 of 4 workers (auto: 80.0 GiB free x 0.9 / 4.0 GiB per worker (default) = "
        "18, at most the 4 workers)",
        "cuda:1: 2 of 4 workers (auto: 10.0 GiB free x 0.9 / 4.0 GiB per worker (default) = 2)",
    ]
    ran = sorted(n for node in run_to_completion(4, gpu_workers="auto") for n in node.ran())
    assert ran == sorted(COLLECTION)


def test_the_last_run_s_peak_sizes_a_worker(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(SIMULATE_FREE_ENV, "cuda:0=6GiB,cuda:1=6GiB")
    scheduler, _ = scheduled(4, gpu_workers="auto", last_peak=1 << 30)
    # (1 GiB peak + 0.5 GiB context) x 1.5 = 2.25 GiB a worker: 6 x 0.9 / 2.25 = 2.4
    assert [len(scheduler.owners[d]) for d in ("cuda:0", "cuda:1")] == [2, 2]
    assert "last run's peak 1.0 GiB + a CUDA context, x1.5" in scheduler.sharing[0]


def test_the_ini_sizes_a_worker_before_the_last_peak(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(SIMULATE_FREE_ENV, "cuda:0=6GiB,cuda:1=6GiB")
    scheduler, _ = scheduled(4, gpu_workers="auto", memory_per_worker="5GiB", last_peak=1)
    assert [len(scheduler.owners[d]) for d in ("cuda:0", "cuda:1")] == [1, 1]
    assert scheduler.owners["cuda:0"] != scheduler.owners["cuda:1"]


def test_unknown_free_memory_means_one_worker(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(SIMULATE_FREE_ENV, "cuda:0=80GiB")
    scheduler, _ = scheduled(4, gpu_workers="auto")
    assert len(scheduler.owners["cuda:1"]) == 1
    assert "free memory of cuda:1 unknown: one worker at a time" in scheduler.sharing[1]


COMPARED = [
    *(f"cases/a.yaml::lm::{check}[{capture}-cpu]" for capture in CAPTURES for check in CHECKS),
    "cases/a.yaml::lm::consistency[cpu]",
    *nodeids("mlp", "cpu"),
    *nodeids("b", "cpu"),
    *(f"cases/a.yaml::gru::{check}[{capture}-cpu]" for capture in CAPTURES for check in CHECKS),
    "cases/a.yaml::gru::consistency[cpu]",
]


def test_a_consistency_item_is_a_unit_of_its_own_waiting_for_its_captures() -> None:
    units = list(dict.fromkeys(unit_of(nodeid)[0] for nodeid in COMPARED))
    assert unit_of("cases/a.yaml::lm::consistency[cuda:0]") == (
        "cases/a.yaml::lm::[cuda:0]",
        "cuda:0",
    )
    assert prerequisites(units) == {
        "cases/a.yaml::lm::[cpu]": {f"cases/a.yaml::lm::[{c}-cpu]" for c in CAPTURES},
        "cases/a.yaml::gru::[cpu]": {f"cases/a.yaml::gru::[{c}-cpu]" for c in CAPTURES},
    }


def handed_on_before_sent(nodes: list[FakeWorker], collection: list[str]) -> None:
    """Each capture of a compared case had an item done before its consistency item was
    sent (its summary was written), or ran on the consistency item's own worker."""
    events = nodes[0].events
    worker_of = {n: node.gateway.id for node in nodes for n in node.ran()}
    for item in (n for n in collection if "consistency[" in n):
        sent = events.index(("sent", item))
        head = item.rpartition("::")[0]
        for unit in {unit_of(n)[0] for n in collection if n.startswith(head) and n != item}:
            items = [n for n in collection if unit_of(n)[0] == unit]
            first_done = min(events.index(("done", n)) for n in items)
            assert first_done < sent or worker_of[items[0]] == worker_of[item], (unit, item)


@pytest.mark.parametrize("workers", [1, 2, 4, 6, 12])
def test_a_consistency_item_is_sent_once_its_captures_handed_on(workers: int) -> None:
    nodes = run_to_completion(workers, COMPARED)
    assert sorted(n for node in nodes for n in node.ran()) == sorted(COMPARED)
    handed_on_before_sent(nodes, COMPARED)


ONE_ITEM_UNITS = [
    *(f"cases/a.yaml::lm::parity[{capture}-cpu]" for capture in CAPTURES),
    "cases/a.yaml::lm::consistency[cpu]",
]


@pytest.mark.parametrize("workers", [2, 3, 4, 8])
def test_workers_holding_their_last_item_do_not_wait_for_each_other(workers: int) -> None:
    """A unit of one item runs only once its worker gets more work: the consistency unit
    then goes to one of them rather than wait for summaries nobody will write."""
    nodes = run_to_completion(workers, ONE_ITEM_UNITS)
    assert sorted(n for node in nodes for n in node.ran()) == sorted(ONE_ITEM_UNITS)


def test_one_case_s_captures_run_on_several_workers() -> None:
    nodes = run_to_completion(4, COMPARED)
    workers_of_lm = {
        node.gateway.id for node in nodes for n in node.ran() if "::lm::" in n and "[" in n
    }
    assert len(workers_of_lm) >= 3


def test_the_item_a_worker_died_on_is_not_handed_out_again(tmp_path: Path) -> None:
    log = CrashLog(tmp_path)
    scheduler = DeviceAwareScheduling(FakeConfig(2), crash_log=log)  # type: ignore[arg-type]
    first, second = FakeWorker("gw0"), FakeWorker("gw1")
    for node in (first, second):
        scheduler.add_node(node)
    for node in (first, second):
        scheduler.add_node_collection(node, COLLECTION)
    scheduler.schedule()
    victim, survivor = (first, second) if first.sent else (second, first)
    died_on = COLLECTION[victim.sent[0]]
    case = died_on.split("::")[1]
    trail = Breadcrumb(log.breadcrumb_path(victim.gateway.id))
    trail.start(died_on, "cases/a.yaml:1", [])
    with trail.at("eager", ("cases/a.yaml", case, "cpu")):
        assert scheduler.remove_node(victim) == died_on

    pending = {
        nodeid for unit in scheduler.workqueue.values() for nodeid, done in unit.items() if not done
    }
    still_to_run = pending | {COLLECTION[i] for i in survivor.sent}
    assert died_on not in still_to_run
    assert set(nodeids(case, "cpu")) - {died_on} <= still_to_run  # the rest of its unit
    assert log.find(("cases/a.yaml", case, "cpu")) is not None
    assert log.by_item[died_on].stage == "eager"


def first_units(nodes: list[FakeWorker]) -> list[str]:
    """The unit each worker was sent first."""
    return [unit_of(node.ran()[0])[0] for node in nodes]


def test_the_longest_units_of_the_last_run_go_first() -> None:
    durations = dict.fromkeys(COLLECTION, 0.1)
    durations |= dict.fromkeys(nodeids("lm", "cpu"), 5.0) | dict.fromkeys(nodeids("c", "cpu"), 2.0)
    _, nodes = scheduled(2, share=True, durations=durations)
    assert first_units(nodes) == ["cases/a.yaml::lm::[export-cpu]", "cases/a.yaml::c::[export-cpu]"]


def test_without_a_cache_units_keep_their_collection_order() -> None:
    _, nodes = scheduled(2, share=True)
    assert first_units(nodes) == ["cases/a.yaml::a::[export-cpu]", "cases/a.yaml::b::[export-cpu]"]


def test_an_item_the_cache_does_not_know_counts_as_the_median_of_its_check() -> None:
    known = {
        "cases/a.yaml::a::parity[export-cpu]": 1.0,
        "cases/a.yaml::b::parity[export-cpu]": 3.0,
        "cases/a.yaml::c::parity[export-cpu]": 8.0,
        "cases/a.yaml::a::signature[export-cpu]": 0.5,
    }
    estimates = Estimates(known)
    assert estimates.item("cases/a.yaml::new::parity[export-cpu]") == 3.0
    assert estimates.item("cases/a.yaml::new::mutation[export-cpu]") == 2.0  # all items' median
    assert estimates.item("cases/a.yaml::a::parity[export-cpu]") == 1.0
    assert Estimates({}).item("cases/a.yaml::new::parity[export-cpu]") == UNKNOWN_SECONDS


def test_a_lowered_item_nobody_timed_counts_as_a_cold_lowering() -> None:
    # A first run (a CI checkout) starts the compiles first, not after every capture.
    fresh = Estimates({})
    assert fresh.item("cases/a.yaml::new::lowered[aoti-export-cpu]") == 30.0
    assert fresh.item("cases/a.yaml::new::lowered[inductor-export-cpu]") == 10.0
    timed = Estimates({"cases/a.yaml::a::lowered[aoti-export-cpu]": 2.0})  # a warm cache
    assert timed.item("cases/a.yaml::new::lowered[aoti-export-cpu]") == 2.0


def test_a_worker_takes_more_of_a_case_it_holds_before_the_next_longest() -> None:
    """It built that case's model and eager runs already: another capture of it costs less
    there than anywhere else."""
    a_export, a_strict = (
        nodeids("a", "cpu"),
        [n.replace("export", "export-strict") for n in nodeids("a", "cpu")],
    )
    collection = [*a_export, *a_strict, *nodeids("b", "cpu"), *nodeids("c", "cpu")]
    durations = (
        dict.fromkeys(a_export, 5.0) | dict.fromkeys(a_strict, 1.0)
        | dict.fromkeys(nodeids("b", "cpu"), 4.0) | dict.fromkeys(nodeids("c", "cpu"), 3.0)
    )  # fmt: skip
    nodes = run_to_completion(2, collection, durations=durations)
    (holder,) = [node for node in nodes if a_export[0] in node.ran()]
    assert set(a_strict) <= set(holder.ran())


def test_a_replacement_worker_gets_work_once_its_collection_arrives() -> None:
    # Under load, another worker's collection may arrive while the one replacing a
    # crashed worker is still collecting: xdist then reschedules every node.
    scheduler, (first, second) = scheduled(2)
    scheduler.remove_node(second)
    replacement = FakeWorker("gw2", COLLECTION, first.events)
    scheduler.add_node(replacement)
    scheduler.schedule()  # no KeyError: the replacement is left alone for now
    assert replacement.sent == []
    scheduler.add_node_collection(replacement, COLLECTION)
    scheduler.schedule()
    assert replacement.sent or not scheduler.workqueue
