"""Fixtures shared by the whole suite.

``spark_context``: one local SparkContext (master ``local[2]``) for the whole test run, built
the way undertow builds one (:func:`undertow.deploy.spark_session.get_spark_context`), so every
test on the ``spark`` target reuses it instead of paying Spark's start each time.
``spark_session``: a SparkSession on that context, for tests that read with ``spark.read``.
Tests that need another master (several executor JVMs) run their job in a subprocess.
``_isolated_key_file`` (autouse, session): ``XDG_CONFIG_HOME`` points to a temporary directory
for the whole run, so no test reads or writes the checkpoint metadata key under the real home;
subprocesses (jobs on other masters, the CLI) inherit it, and the JobMaster is the only
process that loads the key (workers never need it).
``kafka_broker``: one Kafka broker (tools/kafka_broker.py) for the whole run, started the first
time a test asks for it and stopped at the end; with ``UNDERTOW_KAFKA_BOOTSTRAP`` set, that
running broker is used instead (the fixture is then ``None`` and only ``kafka_bootstrap``, the
address, is known). Tests that restart the broker need the fixture's own broker.

Restores (docs/testing.md, "Controls"): every test runs with ``$UNDERTOW_RESTORE_LOG`` naming
a file of its own, to which every restore appends a line (in this process or a subprocess that
inherits the variable). A test under ``tests/e2e`` or ``tests/cli`` that restored without
``@pytest.mark.restores`` fails. With ``--restore-control=KIND`` (``all`` or a partial kind),
only marked tests run (for a partial kind, those that declare ``catches=[KIND]``), each with
the control in force (``$UNDERTOW_RESTORE_CONTROL``): such a test passes iff it raised
:class:`~undertow.testing.restore_control.RestoreEvidenceMissing` and the control fired.

Deployment targets (docs/testing.md, "What runs where"): an e2e test runs on every target
of its ``target`` fixture, unless ``--target-sample=N`` keeps N targets of each test (the same
test with the same other parameters), chosen with a seed printed last (``$UNDERTOW_TARGET_SEED``
replays it). ``make test`` samples one target per test; ``make soak`` runs them all. A test
marked ``@pytest.mark.sampled("backend", ...)`` has those parameters sampled with the target:
``--target-sample=N`` keeps N of its combinations of target and sampled parameters.
"""

from __future__ import annotations

import importlib.util
import itertools
import os
import random
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NoReturn

import pytest

from undertow.core.config import Configuration
from undertow.testing.restore_control import (
    CONTROL_ENV,
    LOG_ENV,
    ControlKind,
    RestoreEvidenceMissing,
    restore_events,
)

#: Every job a test starts must have ended once it is over (tests/job_leaks.py).
pytest_plugins = ("tests.job_leaks", "pytester")

SPARK_MASTER = "local[2]"
#: Where a restore must be declared (``@pytest.mark.restores``).
MARKED_DIRS = ("tests/e2e/", "tests/cli/")
_RESTORE_LOG = pytest.StashKey[Path]()
_ITEM_CONTROL = pytest.StashKey[ControlKind]()
#: ``--restore-control=each-partial``: every partial control in one run.
EACH_PARTIAL = "each-partial"
_SAMPLE_SEED = pytest.StashKey[int]()
#: Replays a sampled restore-control run (``--restore-control-sample``).
SAMPLE_SEED_ENV = "UNDERTOW_CONTROL_SEED"
_TARGET_SEED = pytest.StashKey[int]()
#: Where --target-sample samples (the e2e suite's ``target`` fixture); the PyFlink corpus runs
#: every program on both of its targets (issue 26 asks for both in every run).
SAMPLED_DIRS = ("tests/e2e/",)
#: Replays a run that sampled deployment targets (``--target-sample``).
TARGET_SEED_ENV = "UNDERTOW_TARGET_SEED"
#: Preferred targets of --restore-control-one-target: worker processes first (a control's
#: worker-side half runs where the state files are read).
CONTROL_TARGETS = ("local", "local-threads", "spark")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--restore-control", choices=[k.value for k in ControlKind] + [EACH_PARTIAL],
        default=None,
        help="run only tests marked 'restores' (for a partial kind, those declaring "
        "catches=[KIND]) with this restore control in force; each passes iff it raised "
        "RestoreEvidenceMissing and the control fired (docs/testing.md, Controls). "
        f"{EACH_PARTIAL!r}: every partial kind in one run, each over tests that declare it "
        "(with --restore-control-sample=N, N different tests per kind)",
    )  # fmt: skip
    parser.addoption(
        "--restore-control-sample", type=int, default=0, metavar="N",
        help="under --restore-control, run N of the selected tests, one per test module first, "
        f"chosen with a seed printed in the header (${SAMPLE_SEED_ENV} replays it); 0: all",
    )  # fmt: skip
    parser.addoption(
        "--target-sample", type=int, default=0, metavar="N",
        help="run each test parametrized by 'target' on N of its deployment targets, chosen "
        f"per test with a seed printed at the end (${TARGET_SEED_ENV} replays it); 0: all",
    )  # fmt: skip
    parser.addoption(
        "--restore-control-one-target", action="store_true",
        help="under --restore-control, run each marked test on one deployment target only "
        f"(the first of {list(CONTROL_TARGETS)} it is parametrized with)",
    )  # fmt: skip


def _control(item: pytest.Item) -> ControlKind | None:
    """The control this test runs under (chosen at collection), None if none."""
    return item.stash.get(_ITEM_CONTROL, None)


def catches(item: pytest.Item) -> set[str]:
    """The partial controls a marked test declares it catches (``catches=[...]``)."""
    marker = item.get_closest_marker("restores")
    return set() if marker is None else set(marker.kwargs.get("catches", ()))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    per_test = config.getoption("--target-sample")
    if per_test > 0:
        _deselect(config, items, _sample_targets(items, per_test, config.stash[_TARGET_SEED]))
    name = config.getoption("--restore-control")
    if name is None:
        return
    for item in items:
        for declared in catches(item):
            ControlKind.parse(declared)  # a typo in catches=[...] fails the run
    if name == EACH_PARTIAL:
        _deselect(config, items, _each_partial(config, items))
        return
    kind = ControlKind(name)
    keep = [
        item for item in items
        if item.get_closest_marker("restores") is not None
        and (kind is ControlKind.ALL or kind.value in catches(item))
    ]  # fmt: skip
    if config.getoption("--restore-control-one-target"):
        keep = _one_target_each(keep)
    sample = config.getoption("--restore-control-sample")
    if sample > 0:
        if "not soak" in (config.option.markexpr or ""):  # deselected after this hook anyway
            keep = [item for item in keep if item.get_closest_marker("soak") is None]
        keep = _sample(keep, sample, config.stash[_SAMPLE_SEED])
    for item in keep:
        item.stash[_ITEM_CONTROL] = kind
    _deselect(config, items, keep)


def _each_partial(config: pytest.Config, items: list[pytest.Item]) -> list[pytest.Item]:
    """Per partial kind, the marked tests that declare it (one target each, soak tests left
    out under ``-m "not soak"``), N of them under ``--restore-control-sample=N`` (drawn with
    the control seed), all otherwise; a test serves one kind only, and each is assigned its
    kind. A kind that
    no test declares fails the run: each partial control must be caught in every run."""
    marked = [item for item in items if item.get_closest_marker("restores") is not None]
    marked = _one_target_each(marked)
    if "not soak" in (config.option.markexpr or ""):
        marked = [item for item in marked if item.get_closest_marker("soak") is None]
    sample = config.getoption("--restore-control-sample")
    taken: set[int] = set()
    partial = [kind for kind in ControlKind if kind is not ControlKind.ALL]
    # the kinds fewest tests declare choose first, so that each gets a test of its own
    for kind in sorted(partial, key=lambda k: sum(k.value in catches(i) for i in marked)):
        declaring = [i for i in marked if kind.value in catches(i) and id(i) not in taken]
        if not declaring:
            raise pytest.UsageError(f"--restore-control={EACH_PARTIAL}: no selected test "
                                    f"declares catches=[{kind.value!r}]")  # fmt: skip
        seed = f"{config.stash[_SAMPLE_SEED]}:{kind.value}"
        chosen = _sample(declaring, sample, seed) if sample > 0 else declaring
        for item in chosen:
            item.stash[_ITEM_CONTROL] = kind
            taken.add(id(item))
    return [item for item in items if id(item) in taken]


def _deselect(config: pytest.Config, items: list[pytest.Item], keep: list[pytest.Item]) -> None:
    """Narrow ``items`` to ``keep`` (in place), reporting the rest as deselected."""
    kept = {id(item) for item in keep}
    dropped = [item for item in items if id(item) not in kept]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
    items[:] = [item for item in items if id(item) in kept]


def pytest_configure(config: pytest.Config) -> None:
    for key, env in ((_SAMPLE_SEED, SAMPLE_SEED_ENV), (_TARGET_SEED, TARGET_SEED_ENV)):
        given = os.environ.get(env)
        config.stash[key] = int(given) if given else random.randrange(1 << 31)
        # pytest-xdist's workers start after this and inherit the environment: each of them
        # then samples the same tests as the controller, which prints the seed
        os.environ[env] = str(config.stash[key])


def pytest_itemcollected(item: pytest.Item) -> None:
    """Under pytest-xdist (``make test``'s ``-n``), the tests that share a resource of one
    process run on one worker: everything on the suite's Spark context (``spark``), the Kafka
    broker's tests (``kafka``: one of them restarts it), the network namespaces of
    tests/cluster (``netns``); any other test runs with its module (module fixtures such as
    the PyFlink corpus's one run per target are then paid once)."""
    item.add_marker(pytest.mark.xdist_group(_xdist_group(item)))


def _xdist_group(item: pytest.Item) -> str:
    names = set(getattr(item, "fixturenames", ()))  # pytest's attribute, on test functions
    callspec = getattr(item, "callspec", None)
    params = {} if callspec is None else callspec.params
    if names & {"spark_context", "spark_session"} or params.get("target") == "spark":
        return "spark"  # tests with a target fixture ask for the context when they run
    if names & {"kafka_broker", "kafka_bootstrap", "new_topic"}:
        return "kafka"
    if item.nodeid.startswith("tests/cluster/"):
        return "netns"
    return item.nodeid.split("::", 1)[0]


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    """The samples' seeds, last (also under -q), so a sampled run can be replayed."""
    if config.getoption("--target-sample") > 0:
        seed = config.stash[_TARGET_SEED]
        terminalreporter.write_line(
            f"deployment targets (and sampled parameters): {config.getoption('--target-sample')} "
            f"per test, seed {seed} "
            f"(replay: {TARGET_SEED_ENV}={seed}; all targets: --target-sample=0)"
        )
    if config.getoption("--restore-control") is None or (
        config.getoption("--restore-control-sample") <= 0
    ):
        return
    seed = config.stash[_SAMPLE_SEED]
    terminalreporter.write_line(
        f"restore control {config.getoption('--restore-control')} sample: seed {seed} "
        f"(replay: {SAMPLE_SEED_ENV}={seed})"
    )


def _target_group(item: pytest.Item) -> tuple[str, str, str] | None:
    """(test function, its other parameters, target) of an item parametrized by ``target``."""
    return _group(item, {"target"})


def _sampled_group(item: pytest.Item) -> tuple[str, str, str] | None:
    """(test function, its other parameters, its sampled parameters' values) of an item
    parametrized by ``target`` or by a parameter its ``sampled`` markers name."""
    names = {"target"}
    for marker in item.iter_markers("sampled"):
        names.update(str(name) for name in marker.args)
    return _group(item, names)


def _group(item: pytest.Item, names: set[str]) -> tuple[str, str, str] | None:
    """Split an item's parameters into those in ``names`` (their values, joined with ``/`` in
    name order) and the others; None if it has none of ``names``."""
    callspec = getattr(item, "callspec", None)  # pytest's own attribute, on parametrized items
    if callspec is None or not names & set(callspec.params):
        return None
    params = dict(callspec.params)
    chosen = "/".join(str(params.pop(name)) for name in sorted(names & set(params)))
    return item.nodeid.split("[", 1)[0], repr(sorted(params.items(), key=str)), chosen


def _sample_targets(items: list[pytest.Item], per_test: int, seed: int) -> list[pytest.Item]:
    """Per test (function and other parameters), ``per_test`` of its targets (with its other
    sampled parameters: combinations of them). The choice for a test depends only on the seed
    and the test's name and combinations, so running a subset of the suite with the same seed
    picks the same ones; items without a sampled parameter are all kept."""
    groups: dict[tuple[str, str], list[str]] = {}
    for item in items:
        group = _sampled_group(item) if item.nodeid.startswith(SAMPLED_DIRS) else None
        if group is not None:
            groups.setdefault(group[:2], []).append(group[2])
    chosen = {
        key: set(
            random.Random(f"{seed}:{key}").sample(sorted(targets), k=min(per_test, len(targets)))
        )
        for key, targets in groups.items()
    }
    keep: list[pytest.Item] = []
    for item in items:
        group = _sampled_group(item) if item.nodeid.startswith(SAMPLED_DIRS) else None
        if group is None or group[2] in chosen[group[:2]]:
            keep.append(item)
    return keep


def _sample(items: list[pytest.Item], count: int, seed: int | str) -> list[pytest.Item]:
    """``count`` of ``items``: one of each test module first (in a seeded random order), then
    the rest at random; the run order is kept."""
    rng = random.Random(seed)
    shuffled = rng.sample(items, len(items))
    chosen: list[pytest.Item] = []
    modules: set[str] = set()
    for item in shuffled:
        module = item.nodeid.split("::", 1)[0]
        if module not in modules:
            modules.add(module)
            chosen.append(item)
    rest = [item for item in shuffled if item not in chosen]
    chosen = chosen[:count] + rest[: max(0, count - len(chosen))]
    picked = {id(item) for item in chosen}
    return [item for item in items if id(item) in picked]


def _one_target_each(items: list[pytest.Item]) -> list[pytest.Item]:
    """Per test function and parameters other than ``target``: the item on the first target
    of :data:`CONTROL_TARGETS` (items without a target are all kept)."""
    best: dict[tuple[str, str], tuple[int, pytest.Item]] = {}
    keep: list[pytest.Item] = []
    for item in items:
        group = _target_group(item)
        if group is None or group[2] not in CONTROL_TARGETS:
            keep.append(item)
            continue
        rank = CONTROL_TARGETS.index(group[2])
        held = best.get(group[:2])
        if held is None or rank < held[0]:
            best[group[:2]] = (rank, item)
    chosen = {id(item) for item in keep} | {id(item) for _, item in best.values()}
    return [item for item in items if id(item) in chosen]


@pytest.fixture(autouse=True)
def _restore_record(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[None]:
    """The restore log of this test, the control in force (if any), and the meta-check."""
    log = tmp_path_factory.mktemp("restores", numbered=True) / "restores.log"
    request.node.stash[_RESTORE_LOG] = log
    kind = _control(request.node)
    previous = {name: os.environ.get(name) for name in (LOG_ENV, CONTROL_ENV)}
    os.environ[LOG_ENV] = str(log)
    if kind is not None:
        os.environ[CONTROL_ENV] = kind.value
    try:
        yield
    finally:
        for name, value in previous.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
    restored = restore_events(log).restored
    where = request.node.nodeid
    if (
        restored
        and where.startswith(MARKED_DIRS)
        and request.node.get_closest_marker("restores") is None
    ):
        pytest.fail(
            f"{where} restored (checkpoints {list(restored)}) but is not marked "
            "@pytest.mark.restores: mark it, so that the restore controls run it"
        )


@pytest.hookimpl(wrapper=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> Iterator[None]:
    """Under a restore control, a marked test passes iff it raised RestoreEvidenceMissing and
    the control fired; anything else is a failure of the control, saying what happened."""
    kind = _control(pyfuncitem)
    if kind is None or pyfuncitem.get_closest_marker("restores") is None:
        return (yield)
    what = f"restore control {kind.value}: {pyfuncitem.nodeid}"
    try:
        yield
    except RestoreEvidenceMissing as caught:
        events = restore_events(pyfuncitem.stash[_RESTORE_LOG])
        if not events.dropped:
            _control_failed(
                f"{what} raised RestoreEvidenceMissing but the control dropped "
                f"nothing (restores {list(events.restored)}): {caught!s:.500}"
            )
        _report(f"[control] {what}: caught ({'; '.join(events.dropped)[:300]}): {caught!s:.300}")
        return None
    except (pytest.skip.Exception, KeyboardInterrupt):
        raise
    except BaseException as other:
        events = restore_events(pyfuncitem.stash[_RESTORE_LOG])
        _control_failed(f"{what} failed with {type(other).__name__}, not RestoreEvidenceMissing "
                        f"(restores {list(events.restored)}, dropped {list(events.dropped)}): "
                        f"{other!s:.800}")  # fmt: skip
    events = restore_events(pyfuncitem.stash[_RESTORE_LOG])
    _control_failed(f"{what} passed although the control dropped {list(events.dropped)} of "
                    f"restores {list(events.restored)}")  # fmt: skip


def _report(line: str) -> None:
    """One verdict line: printed (captured with the test) and appended to
    ``$UNDERTOW_CONTROL_REPORT`` if set (a run's verdicts as they happen)."""
    print(line)
    report = os.environ.get("UNDERTOW_CONTROL_REPORT")
    if report:
        with open(report, "a", encoding="utf-8") as out:
            out.write(line.replace("\n", " ") + "\n")


def _control_failed(message: str) -> NoReturn:
    _report(f"[control] FAILED {message}")
    pytest.fail(message, pytrace=False)


@pytest.fixture(scope="session", autouse=True)
def _isolated_key_file(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    config_home = tmp_path_factory.mktemp("xdg-config")
    previous = os.environ.get("XDG_CONFIG_HOME")
    os.environ["XDG_CONFIG_HOME"] = str(config_home)
    yield
    if previous is None:
        del os.environ["XDG_CONFIG_HOME"]
    else:
        os.environ["XDG_CONFIG_HOME"] = previous


@pytest.fixture(scope="session")
def spark_context() -> Iterator[Any]:
    from undertow.deploy.spark_session import get_spark_context

    context = get_spark_context(
        Configuration({"spark.master": SPARK_MASTER, "undertow.spark.log-level": "ERROR"})
    )
    yield context
    context.stop()


@pytest.fixture(scope="session")
def spark_session(spark_context: Any) -> Any:
    from pyspark.sql import SparkSession

    return SparkSession(spark_context)


def _load_kafka_broker_module() -> Any:
    path = Path(__file__).resolve().parents[1] / "tools" / "kafka_broker.py"
    spec = importlib.util.spec_from_file_location("undertow_tools_kafka_broker", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def kafka_broker() -> Iterator[Any]:
    if os.environ.get("UNDERTOW_KAFKA_BOOTSTRAP"):
        yield None
        return
    broker = _load_kafka_broker_module().KafkaBroker()
    broker.start()
    print(f"\nKafka broker at {broker.bootstrap_servers} started in {broker.start_seconds:.1f} s")
    try:
        yield broker
    finally:
        broker.stop()


@pytest.fixture(scope="session")
def kafka_bootstrap(kafka_broker: Any) -> str:
    """The bootstrap servers of the test broker (``host:port``)."""
    if kafka_broker is None:
        return os.environ["UNDERTOW_KAFKA_BOOTSTRAP"]
    return str(kafka_broker.bootstrap_servers)


_topic_numbers = itertools.count()


@pytest.fixture
def new_topic(kafka_bootstrap: str, request: pytest.FixtureRequest) -> Callable[..., str]:
    """``new_topic(partitions=1)``: create a topic with a fresh name on the test broker."""
    from undertow.testing.kafka_topics import create_topic

    def make(partitions: int = 1) -> str:
        base = "".join(c if c.isalnum() else "-" for c in request.node.name)[:60]
        name = f"{base}-{os.getpid()}-{next(_topic_numbers)}"
        create_topic(kafka_bootstrap, name, partitions)
        return name

    return make


@pytest.hookimpl(tryfirst=True, optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """The long test groups go out first (tests/xdist_schedule.py)."""
    from tests.xdist_schedule import make_scheduler

    return make_scheduler(config, log)
