"""``flinkish info``: the plan of each streaming query of a job, without running it.

The job's script runs in a local Spark session with the job's configuration, under the same
hooks as a real run, in dry-run mode: ``start()`` records each query and nothing starts.
Each recorded query's DataFrame is then explained (Spark's ``explain``).
"""

from __future__ import annotations

import contextlib
import io
from dataclasses import dataclass
from typing import Any

from flinkish_cli.plan.job import Entry
from flinkish_cli.runtime import hooks
from flinkish_cli.runtime.identity import is_generated


@dataclass
class QueryPlan:
    """One query: its identity, Spark's extended explain output, and a note on generated
    identities (an unnamed query is known by its order of start)."""

    name: str
    plan: str
    generated: bool = False
    note: str | None = None


class _Planner:
    """A :class:`~flinkish_cli.runtime.hooks.QueryStarter` that starts nothing."""

    dry_run = True

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


def plan_queries(entry: Entry, spark_conf: dict[str, str], master: str) -> list[QueryPlan]:
    """Run ``entry`` in dry-run mode and explain every query it would start."""
    from flinkish_cli.errors import FlinkishError, JobError
    from flinkish_cli.runtime.flavour import classic
    from flinkish_cli.runtime.program import run_program
    from flinkish_cli.spark.failures import short_cause
    from flinkish_cli.spark.local import local_session

    def stop(spark: Any) -> None:  # the script's stop() is patched to keep the session
        hooks.stop_session(classic(), spark)

    with local_session(master, spark_conf, stop):
        controller = hooks.QueryController(_Planner(), classic())
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
        plans = []
        for name, writer in controller.writers.items():
            buffer = io.StringIO()
            with contextlib.redirect_stdout(buffer):
                writer._df.explain(extended=True)
            generated = is_generated(name) and getattr(writer, "_flinkish_name", None) is None
            note = (
                f"This query has no name: '{name}' is generated from the order in which the "
                "program starts its unnamed queries. Name it with .queryName('...') so that "
                "its state survives changes to the program."
                if generated
                else None
            )
            plans.append(
                QueryPlan(
                    name=name, plan=buffer.getvalue().rstrip(), generated=generated, note=note
                )
            )
        return plans
