"""The attempts of a job's program inside its driver, and what their failures were.

:class:`Attempts` runs the program once per attempt (:meth:`Attempts.run`), as
``spark-submit`` would, until its queries end; keeps which failure ended an attempt (the
program's, a query's, a checkpoint rule's or the health check's) and which query it came
from; records each failure for the restart strategy
(:func:`~flinkish_cli.runtime.restart.record_failure`) and clears what a failed attempt left
before the next. The driver (:mod:`.driver`) loops over
attempts; the job's state machine (:mod:`.job`) ends it.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable
from typing import Any

from flinkish_cli.plan.job import JobPlan
from flinkish_cli.runtime.driver.jvm_watch import JvmWatch, lost_gateway
from flinkish_cli.runtime.driver.program import forget_job_modules, run_program
from flinkish_cli.runtime.flavours.flavour import Flavour
from flinkish_cli.runtime.queries import hooks
from flinkish_cli.runtime.queries.checkpoint_rules import BatchWatcher
from flinkish_cli.runtime.queries.queries import JobQueries
from flinkish_cli.runtime.queries.stopping import is_active, stop_between_batches
from flinkish_cli.runtime.restart import Decision, record_failure
from flinkish_cli.runtime.status_keeper import StatusKeeper
from flinkish_cli.spark.failures import short_cause

log = logging.getLogger("flinkish.runtime")


class SparkLostError(Exception):
    """Spark's JVM (classic) is gone: nothing in this process can run the job any more."""


class NoCheckpointProgress(RuntimeError):
    """The health check's failure: a query had work and committed nothing in the window."""


class CheckpointsFailed(RuntimeError):
    """More consecutive failed checkpoints than ``tolerable-failed-checkpoints``."""


class Attempts:
    """Runs the job's program, an attempt at a time."""

    def __init__(
        self,
        plan: JobPlan,
        flavour: Flavour,
        queries: JobQueries,
        keeper: StatusKeeper,
        rule_watcher: BatchWatcher,
        jvm: JvmWatch,
        ending: Callable[[], bool],
    ) -> None:
        self.plan = plan
        self.flavour = flavour
        self.queries = queries
        self.keeper = keeper
        self.rule_watcher = rule_watcher
        self.jvm = jvm
        self.ending = ending  # a cancel or stop has been asked for
        self.failure: BaseException | None = None  # a checkpoint rule or the health check
        self.failed_query: str | None = None  # the query whose exception failed the attempt
        self._recorded: BaseException | None = None  # the failure last in the history

    def fail(self, failure: BaseException) -> bool:
        """Fail the running attempt with ``failure``; False when one already failed it."""
        if self.failure is not None:
            return False
        self.failure = failure
        return True

    def run(self) -> BaseException | None:
        """Run the job's program once, until its queries end; the failure, if any.

        As under ``spark-submit``, the job ends when its program returns: in STREAMING mode
        queries still running then are stopped (between batches); in BATCH mode, where every
        query is bounded, the job waits for them to process the input available.
        """
        controller = hooks.QueryController(self.queries, self.flavour)
        hooks.install(controller)
        self.queries.new_attempt()
        self.failure = None
        self.failed_query = None
        self.rule_watcher.reset()
        try:
            try:
                run_program(self.plan.entry)
            except SystemExit as exit_:
                if exit_.code not in (None, 0):
                    raise RuntimeError(
                        f"The job's program exited with status {exit_.code}."
                    ) from None
            except hooks.ProgramEnded:  # a wait begun after the runtime stopped the queries
                pass
            controller.wait_point()
            if self.plan.runtime_mode != "BATCH" and not self.ending():
                self._stop_what_the_program_left()
            return self.wait_for_queries()
        except BaseException as error:  # the script's failure is the job's failure
            if self.jvm.lost(confirm=lost_gateway(error)):
                return SparkLostError("Spark's JVM exited while the job ran.")
            if self.failure is not None:
                return self.failure
            self.failed_query = self.failed_query or self.queries.failed_query()
            log.error("The job's program failed.", exc_info=error)
            return error

    def _stop_what_the_program_left(self) -> None:
        running = self.queries.all_active()
        if running:
            log.info(
                "The job's program returned while %d quer%s still ran: stopping them between "
                "micro-batches (the job ends with its program, as under spark-submit).",
                len(running),
                "y" if len(running) == 1 else "ies",
            )
            for handle in running:
                with contextlib.suppress(Exception):
                    stop_between_batches(handle)

    def wait_for_queries(self) -> BaseException | None:
        """Wait until every query has ended; the first query failure, if any."""
        while True:
            if self.failure is not None:
                return self.failure
            if self.jvm.lost():
                return SparkLostError("Spark's JVM exited while the job ran.")
            active = False
            for name, query in list(self.queries.handles.items()):
                if is_active(query):
                    active = True
                    continue
                error = query.exception()
                if error is not None and not self.ending():
                    self.failed_query = name
                    return error
            if not active:
                return None
            time.sleep(0.2)

    def record_failure(self, config: Any, error: BaseException, program: str | None) -> Decision:
        """Record the failed attempt and decide
        (:func:`~flinkish_cli.runtime.restart.record_failure`); a restart is written to the
        registry at once."""
        cause = short_cause(error, program)
        with self.keeper.lock:
            decision = record_failure(
                config, self.keeper.status, cause, time.time(), self.failed_query
            )
        self._recorded = error
        if decision.restart:
            log.warning("Job failed: %s. Restarting in %.1f s.", cause, decision.delay)
            self.keeper.flush()
        return decision

    def remember_end(self, error: BaseException, cause: str, history_size: int) -> None:
        """The failure that ends the job, in its exception history unless a restart decision
        has already recorded it."""
        if error is self._recorded:
            return
        with self.keeper.lock:
            self.keeper.status.remember_failure(cause, time.time(), history_size, self.failed_query)

    def restart_after(self, delay: float) -> bool:
        """Clear what the failed attempt left, wait ``delay``; False if the job was
        cancelled meanwhile."""
        self.queries.clear_attempt()
        forget_job_modules()  # the next attempt imports the job's own modules afresh
        deadline = time.monotonic() + delay
        while time.monotonic() < deadline:
            if self.ending():
                return False
            time.sleep(0.1)
        return not self.ending()
