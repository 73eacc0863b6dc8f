"""The dry run of a job's program: it runs in a local Spark session with the job's
configuration, under the same hooks as a real run, and ``start()`` records each query
instead of starting it (it returns a query that never runs; the program's waits return at
once). Nothing is read from a source or written to a sink.

Two users: ``flinkish info`` (:func:`plan_queries`: each recorded query's DataFrame
explained, Spark's ``explain``) and the state check before a restore
(:mod:`.state_check`, which plans each query against the savepoint's state).
"""

from __future__ import annotations

import contextlib
import io
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from flinkish_cli.plan.job import Entry
from flinkish_cli.runtime.queries import hooks
from flinkish_cli.runtime.queries.identity import is_generated


@dataclass
class QueryPlan:
    """One query: its identity, Spark's extended explain output, and a note on generated
    identities (an unnamed query is known by its order of start)."""

    name: str
    plan: str
    generated: bool = False
    note: str | None = None


class _Planner:
    """A :class:`~flinkish_cli.runtime.queries.hooks.QueryStarter` that starts nothing."""

    dry_run = True
    stopped = False

    def configure(self, writer: Any, query: Any, spark: Any) -> None:
        return None

    def started(self, query: Any, handle: Any) -> None:
        return None

    def first_wait(self) -> None:
        return None

    def listener_added(self, manager: Any, listener: Any) -> None:
        return None

    def session_stopped(self) -> None:
        return None


@contextlib.contextmanager
def dry_run(
    entry: Entry, spark_conf: dict[str, str], master: str, class_data_sharing: bool = False
) -> Iterator[tuple[Any, hooks.QueryController]]:
    """Run ``entry`` to its end without starting a query: the session (mapping the drivers'
    class-data sharing archive with ``class_data_sharing``) and the controller that recorded
    each query's writer (``controller.writers``, identity -> writer, in the order of start).
    A :class:`~flinkish_cli.errors.JobError` when the program fails."""
    from flinkish_cli.errors import FlinkishError, JobError
    from flinkish_cli.runtime.driver.program import run_program
    from flinkish_cli.runtime.flavours.flavour import CLASSIC, by_name
    from flinkish_cli.spark.failures import short_cause
    from flinkish_cli.spark.local import local_session

    def stop(spark: Any) -> None:  # the script's stop() is patched to keep the session
        hooks.stop_session(by_name(CLASSIC), spark)

    with local_session(master, spark_conf, stop, class_data_sharing) as spark:
        controller = hooks.QueryController(_Planner(), by_name(CLASSIC))
        hooks.install(controller)
        try:
            with contextlib.redirect_stdout(io.StringIO()):
                run_program(entry)
        except SystemExit as exit_:
            if exit_.code not in (None, 0):
                raise JobError(f"The job's program exited with status {exit_.code}.") from None
        except FlinkishError:
            raise
        except Exception as error:
            raise JobError(
                f"The job's program failed while being planned: {short_cause(error, entry.target)}"
            ) from error
        yield spark, controller


def generated_note(name: str, writer: Any) -> str | None:
    """What ``info`` says of a query whose identity was generated (None for a named one)."""
    if not (is_generated(name) and getattr(writer, "_flinkish_name", None) is None):
        return None
    return (
        f"This query has no name: '{name}' is generated from the order in which the "
        "program starts its unnamed queries. Name it with .queryName('...') so that "
        "its state survives changes to the program."
    )


def plan_queries(
    entry: Entry, spark_conf: dict[str, str], master: str, class_data_sharing: bool = False
) -> list[QueryPlan]:
    """Run ``entry`` in dry-run mode and explain every query it would start (the session maps
    the drivers' class-data sharing archive with ``class_data_sharing``)."""
    with dry_run(entry, spark_conf, master, class_data_sharing) as (_spark, controller):
        plans = []
        for name, writer in controller.writers.items():
            buffer = io.StringIO()
            with contextlib.redirect_stdout(buffer):
                writer._df.explain(extended=True)
            note = generated_note(name, writer)
            plans.append(
                QueryPlan(
                    name=name,
                    plan=buffer.getvalue().rstrip(),
                    generated=note is not None,
                    note=note,
                )
            )
        return plans
