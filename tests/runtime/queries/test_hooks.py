"""The patches on pyspark's classes (:mod:`flinkish_cli.runtime.queries.hooks`) at their seam:
classes shaped like pyspark's and a starter that records what the hooks call, no Spark.

What a program's waits do: the first one completes the job (Flink's ``execute()``); one begun
after the runtime stopped the queries ends the program, so that a script waiting in a loop
ends with its job instead of spinning until the driver gives up on it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import pytest

from flinkish_cli.runtime.flavours.classic import ClassicFlavour
from flinkish_cli.runtime.queries import hooks


class Query:
    """A StreamingQuery's waits: they return at once, as Spark's do once nothing runs."""

    def __init__(self, during: Any = None) -> None:
        self.during = during  # what happens while the program waits (the runtime's stop)
        self.waits = 0

    def awaitTermination(self, timeout: float | None = None) -> bool:
        self._wait()
        return True

    def processAllAvailable(self) -> None:
        self._wait()

    def _wait(self) -> None:
        self.waits += 1
        if self.during is not None:
            self.during()


class Manager:
    def awaitAnyTermination(self, timeout: float | None = None) -> bool:
        return True

    def addListener(self, listener: Any) -> None:
        return None


def _returns_self(self: Any, *args: Any, **kwargs: Any) -> Any:
    return self


#: DataStreamWriter: the methods the hooks patch (none called here).
Writer = type(
    "Writer",
    (),
    {
        name: _returns_self
        for name in (
            *("option", "options", "queryName", "outputMode", "trigger", "format"),
            *("foreach", "foreachBatch", "start", "toTable"),
        )
    },
)


class Session:
    def stop(self) -> None:
        return None


FLAVOUR = ClassicFlavour(Writer, Query, Manager, Session)


class Starter:
    """The runtime's side of the seam
    (:class:`~flinkish_cli.runtime.queries.queries.JobQueries`)."""

    dry_run = False

    def __init__(self) -> None:
        self.stopped = False
        self.first_waits = 0

    def first_wait(self) -> None:
        self.first_waits += 1


@pytest.fixture
def starter() -> Iterator[Starter]:
    starter = Starter()
    before = hooks.current()
    hooks.install(hooks.QueryController(starter, FLAVOUR))  # type: ignore[arg-type]
    yield starter
    hooks._controller = before


def test_the_first_wait_completes_the_job_once(starter: Starter) -> None:
    query = Query()
    query.processAllAvailable()
    query.awaitTermination(1)
    Manager().awaitAnyTermination()
    assert starter.first_waits == 1 and query.waits == 2


@pytest.mark.parametrize(
    "wait",
    [
        lambda query: query.processAllAvailable(),
        lambda query: query.awaitTermination(1),
        lambda query: query.awaitTermination(),
        lambda query: Manager().awaitAnyTermination(),
    ],
    ids=["processAllAvailable", "awaitTermination(timeout)", "awaitTermination", "any"],
)
def test_a_program_waiting_in_a_loop_ends_once_the_runtime_stopped_its_queries(
    starter: Starter, wait: Any
) -> None:
    """``while True: wait`` with the script's own ``except Exception``: the wait begun after
    the stop ends the program (a cancel of such a script took the driver's 15 s grace)."""
    query = Query()
    ended_at = None
    for wait_number in range(1, 10):  # the script's while True, bounded here
        try:
            with contextlib.suppress(Exception):  # the script's own: it must not hold the end
                wait(query)
        except hooks.ProgramEnded:
            ended_at = wait_number
            break
        if wait_number == 3:
            starter.stopped = True  # a cancel, a stop, a rescale or a failed attempt
    assert ended_at == 4


def test_the_wait_under_way_returns_so_what_follows_it_runs(starter: Starter) -> None:
    query = Query()
    query.during = lambda: setattr(starter, "stopped", True)  # stopped while it waited
    assert query.awaitTermination() is True  # as Spark's returns: the script goes on
    with pytest.raises(hooks.ProgramEnded):
        query.awaitTermination()  # and a wait it begins after that ends it
    assert query.waits == 1


def test_the_controller_asks_at_every_wait(starter: Starter) -> None:
    """Nothing is latched in the hooks: the runtime's next attempt (a restart) clears
    ``stopped``, and its waits are waits again."""
    starter.stopped = True
    with pytest.raises(hooks.ProgramEnded):
        Query().processAllAvailable()
    starter.stopped = False
    query = Query()
    query.processAllAvailable()
    assert query.waits == 1
