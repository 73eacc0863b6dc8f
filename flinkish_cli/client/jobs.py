"""The job client: every action on flinkish's jobs, as Flink's ``ClusterClient`` is for Flink.

The CLI's commands call it, and so do ``flinkish web``'s REST API and upgrades: they parse
and present, the client acts. Each method takes plain arguments and returns plain results or
raises a :class:`~flinkish_cli.errors.FlinkishError` that says what went wrong.

This client reads and writes the registry in storage. Its twin,
:class:`~flinkish_cli.client.rest.RestJobClient`, does the same through ``flinkish web``;
:func:`~flinkish_cli.client.connect.job_client` picks one of them for a command. What both
do alike (the interface, the waiting actions, :func:`resolve_local`, :func:`savepoint_target`)
is :mod:`.base`'s.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Generator
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from flinkish_cli.client.asking import (
    Channel,
    Lookup,
    ask,
    late_response,
    refused_end,
    send_detached,
    wait_until_ended,
)
from flinkish_cli.client.base import (
    JobClientBase,
    TriggerResult,
    resolve_local,
    savepoint_target,
)
from flinkish_cli.client.state_actions import StateActions
from flinkish_cli.errors import FlinkishError
from flinkish_cli.registry.control import (
    ControlChannel,
    ControlResponse,
    answer_poll_interval,
    new_request_id,
)
from flinkish_cli.registry.history import SavepointHistory, SavepointRecord
from flinkish_cli.registry.jobid import parse_job_id
from flinkish_cli.registry.protocol import (
    CANCEL_TIMEOUT,
    Cancel,
    Rescale,
    TriggerCheckpoint,
    TriggerSavepoint,
)
from flinkish_cli.registry.rescales import RescaleHistory
from flinkish_cli.registry.status import JobState, JobStatus
from flinkish_cli.registry.store import (
    JobRegistry,
    RegistryIdentity,
    UnreadableJob,
    registry_for,
)
from flinkish_cli.rest.wire import error_document, error_from_document

if TYPE_CHECKING:
    from flinkish_cli.client.state_reads import StateReads
    from flinkish_cli.registry.graph import JobGraph
    from flinkish_cli.registry.jvm import JvmRecord
    from flinkish_cli.registry.series import Series
    from flinkish_cli.submission.run import Presenter
    from flinkish_cli.submission.submit import RunRequest


class JobClient(StateActions, JobClientBase):
    """Every action on the jobs of one configuration's registry, in storage."""

    def __init__(self, config: Any, keep_reads: bool = False) -> None:
        super().__init__(config)
        #: a long-running process (flinkish web) keeps what it read and revalidates it
        self.keep_reads = keep_reads
        self._registry: JobRegistry | None = None
        self._state_reads: StateReads | None = None

    def open(self) -> JobClient:
        """Open the registry now, so that a storage that cannot be used fails here."""
        _ = self.registry
        return self

    @property
    def registry(self) -> JobRegistry:
        """The registry the configuration names (opened on first use)."""
        if self._registry is None:
            self._registry = registry_for(self.config, keep_reads=self.keep_reads)
        return self._registry

    def identity(self) -> RegistryIdentity:
        """Which registry this client acts on (no I/O): ``flinkish web`` serves it, and the
        CLI compares it before it goes through an endpoint."""
        return self.registry.identity()

    # -- starting a job --------------------------------------------------------------------
    def submit(self, request: RunRequest, presenter: Presenter) -> JobStatus:
        """Run a job from this machine (``flinkish run`` without a flinkish web that takes
        programs: :func:`flinkish_cli.client.connect.submit` chooses): prepare, start, and
        follow it or detach; what the user sees goes through ``presenter``. The job's status
        when it ran, or ended."""
        from flinkish_cli.submission.run import submit_and_follow

        return submit_and_follow(request, self.config, presenter)

    # -- reading ---------------------------------------------------------------------------
    def list_jobs(self) -> tuple[list[JobStatus], list[UnreadableJob]]:
        """Every job, newest first, and the jobs whose status could not be read."""
        return self.registry.scan()

    def find(self, job_id: str) -> JobStatus | None:
        """The job's status; None when the registry has no such job."""
        return self.registry.find(parse_job_id(job_id))

    def get(self, job_id: str) -> JobStatus:
        """The job's status; a :class:`JobError` naming where it looked when there is none."""
        return self.registry.get(parse_job_id(job_id))

    def status_document(self, job_id: str) -> str:
        """The job's status file as the registry holds it (JSON text); the errors of
        :meth:`get`."""
        return self.registry.status_text(parse_job_id(job_id))

    def job_listing(self) -> tuple[list[dict[str, Any]], list[UnreadableJob]]:
        """Every job's status document without its recent progress, newest first, and the
        unreadable jobs (:meth:`~flinkish_cli.registry.store.JobRegistry.listing`)."""
        return self.registry.listing()

    def log(
        self,
        job_id: str,
        follow: bool = False,
        last_lines: int | None = None,
        ticks: bool = False,
    ) -> Generator[str, None, None]:
        """The job's driver log in chunks of text; ``follow`` keeps reading while it runs
        (with ``ticks``, an empty chunk whenever a look found nothing new: ``flinkish web``
        stops between them when its client has gone or it is stopping)."""
        from flinkish_cli.registry.logs import stream_log

        status = self.registry.get(parse_job_id(job_id))
        if status.yarn_application:
            from flinkish_cli.client.yarn_logs import driver_log

            return driver_log(self.registry, status, follow, last_lines, ticks)
        log_dir = str(self.config.get("env.log.dir"))
        return stream_log(
            self.registry,
            parse_job_id(job_id),
            log_dir,
            follow=follow,
            last_lines=last_lines,
            ticks=ticks,
        )

    # -- the transport (RestJobClient answers these through flinkish web) ------------------
    def _lookup(self) -> Lookup:
        """Where the waiting actions read jobs."""
        return self.registry

    def _channel(self, job_id: str) -> Channel:
        """How a request reaches the job and its answer comes back."""
        return ControlChannel(self.registry, job_id)

    def _pause(self) -> float:
        """Seconds between looks for a request's answer."""
        return answer_poll_interval(self.registry.storage)

    def _end_pause(self) -> float:
        """Seconds between looks for a job's end."""
        return 0.2

    def _target(self, given: str | None) -> str:
        """The directory a savepoint goes to (:func:`savepoint_target`)."""
        return savepoint_target(self.config, given)

    # -- ending a job ----------------------------------------------------------------------
    def cancel(self, job_id: str, timeout: float | None = None, wait: bool = True) -> JobStatus:
        """Cancel a running job at once; its final status (without ``wait``: its status once
        its driver accepted, as Flink's REST API answers before the job has ended)."""
        timeout = CANCEL_TIMEOUT if timeout is None else timeout
        status = self._running(job_id, "cancel")
        response = ask(self.registry, status.job_id, Cancel(), timeout)
        if not response.ok:
            raise refused_end(self.registry, status.job_id, "cancel", response)
        if not wait:
            return self.registry.get(status.job_id)
        ended = wait_until_ended(self.registry, status.job_id, timeout)
        if ended.yarn_application:
            from flinkish_cli.spark import yarn

            # the application ends too, as Flink's cancel of an application-mode job does
            # (its driver has stopped the queries and recorded CANCELED already)
            yarn.kill(ended.yarn_application)
        return ended

    def stop_detached(
        self,
        job_id: str,
        target: str | None,
        drain: bool,
        format_type: str = "CANONICAL",
        end_state: JobState = JobState.FINISHED,
        trigger_id: str | None = None,
        ttl: float | None = None,
    ) -> str:
        """Ask a running job to stop with a savepoint without waiting; the trigger id (the
        caller's, when it chose one: see :func:`~flinkish_cli.client.asking.send_detached`).
        The job carries it out within ``ttl`` seconds (:data:`DETACHED_TTL` without one), or
        never."""
        job_id, command = self._stop_command(job_id, target, drain, end_state, format_type)
        detached = dataclasses.replace(command, detached=True)
        return send_detached(self.registry, job_id, detached, ttl, trigger_id)

    # -- savepoints and checkpoints --------------------------------------------------------
    def savepoint_detached(
        self,
        job_id: str,
        target: str | None,
        format_type: str = "CANONICAL",
        trigger_id: str | None = None,
        ttl: float | None = None,
    ) -> str:
        """Ask a running job for a savepoint without waiting; the trigger id."""
        status = self._running(job_id, "take a savepoint of")
        command = TriggerSavepoint(
            savepoint_target(self.config, target),
            format_type,
            detached=True,
            explicit_target=target is not None,
        )
        return send_detached(self.registry, status.job_id, command, ttl, trigger_id)

    def checkpoint_detached(
        self, job_id: str, trigger_id: str | None = None, ttl: float | None = None
    ) -> str:
        """Ask a running job for its next checkpoint without waiting; the trigger id."""
        status = self._running(job_id, "checkpoint")
        return send_detached(self.registry, status.job_id, TriggerCheckpoint(), ttl, trigger_id)

    def rescale_detached(
        self,
        job_id: str,
        parallelism: int,
        reason: str = "Asked for by user.",
        trigger_id: str | None = None,
        ttl: float | None = None,
    ) -> str:
        """Ask a running job to rescale in place to ``parallelism`` without waiting (Flink's
        resource requirements over REST); the trigger id, whose :meth:`trigger_result` is
        the rescale's savepoint once the old driver has stopped with it."""
        status = self._running(job_id, "rescale")
        command = Rescale(parallelism, reason)
        return send_detached(self.registry, status.job_id, command, ttl, trigger_id)

    # -- a request's answer, for the REST client's waiting commands -------------------------
    def trigger_answer(self, job_id: str, trigger_id: str) -> tuple[ControlResponse | None, bool]:
        """The job's answer to a request (None while it has none) and whether its driver
        has claimed the request."""
        channel = ControlChannel(self.registry, parse_job_id(job_id))
        response = channel.response(trigger_id)
        return response, response is not None or channel.claimed(trigger_id)

    def withdraw(self, job_id: str, trigger_id: str) -> bool:
        """Take a request back: True when the job will never carry it out, False when its
        driver had claimed it already."""
        return ControlChannel(self.registry, parse_job_id(job_id)).withdraw(trigger_id)

    def forget(self, job_id: str, trigger_id: str) -> None:
        """Remove an answered request, its claim and its answer."""
        ControlChannel(self.registry, parse_job_id(job_id)).forget(trigger_id)

    def trigger_result(self, job_id: str, trigger_id: str) -> TriggerResult | None:
        """Where a detached trigger of the job stands; None when the job has no such trigger
        (never sent, or answered and forgotten)."""
        job_id = parse_job_id(job_id)
        channel = ControlChannel(self.registry, job_id)
        response = channel.response(trigger_id)
        if response is None:
            if channel.state_of(trigger_id) is None:
                return None
            status = self.registry.find(job_id)
            if status is None or not status.effective_state().is_terminal:
                return TriggerResult(False)
            response = late_response(channel, trigger_id)  # answered as it ended?
            if response is None:
                state = status.effective_state().value
                return TriggerResult(True, False, error=f"Job {job_id} ended {state} first.")
        return TriggerResult(True, response.ok, dict(response.result), response.error)

    def rescale_history(self, job_id: str) -> RescaleHistory:
        """The job's rescale history: the autoscaler's latest evaluation and its rescales."""
        return RescaleHistory.read(self.registry, parse_job_id(job_id))

    def rescale_histories(self, statuses: list[JobStatus]) -> dict[str, RescaleHistory]:
        """The rescale histories of the jobs that are not over (for ``/metrics``)."""
        return {
            status.job_id: RescaleHistory.read(self.registry, status.job_id)
            for status in statuses
            if not status.effective_state().is_terminal
        }

    def dispose_savepoint(self, path: str) -> None:
        """Delete a savepoint (and refuse anything else); its record in its job's history,
        when this registry has one, becomes DISPOSED."""
        from flinkish_cli.savepoints.dispose import dispose
        from flinkish_cli.storage import open_for_config

        path = resolve_local(path).rstrip("/")
        manifest = dispose(open_for_config(path, self.config), path)
        try:
            SavepointHistory(self.registry).mark_disposed(manifest.job_id, path)
        except FlinkishError:  # another registry's job, or one whose directory is gone
            return

    def dispose_detached(self, path: str) -> str:
        """Dispose of a savepoint now and keep the outcome in the registry under a new
        trigger id (Flink's asynchronous disposal): the trigger id."""
        from flinkish_cli.registry import operations

        trigger_id = new_request_id()
        try:
            self.dispose_savepoint(path)
        except FlinkishError as error:
            operations.record(
                self.registry, trigger_id, False, error.message, error_document(error)
            )
        else:
            operations.record(self.registry, trigger_id, True, None)
        return trigger_id

    def disposal_result(self, trigger_id: str) -> TriggerResult | None:
        """The outcome of :meth:`dispose_detached`; None for an unknown trigger id."""
        from flinkish_cli.registry import operations

        outcome = operations.result(self.registry, trigger_id)
        if outcome is None:
            return None
        ok, error, detail = outcome
        return TriggerResult(True, ok, error=error, failure=error_from_document(detail))

    def job_configuration(self, job_id: str) -> dict[str, str]:
        """The configuration the job runs with (never a secret: the kept program's, see
        :mod:`flinkish_cli.registry.program`); empty for a job submitted by an older flinkish."""
        from flinkish_cli.registry import program

        try:
            return dict(program.load(self.registry, parse_job_id(job_id)).conf)
        except FlinkishError:
            return {}

    def graph(self, job_id: str) -> JobGraph:
        """The job's graph as its driver recorded it: each query's plan as operators and the
        exchanges between them, as the query started (:mod:`flinkish_cli.registry.graph`)."""
        from flinkish_cli.registry import graph

        return graph.read(self.registry, parse_job_id(job_id))

    def graph_view(self, status: JobStatus) -> dict[str, Any]:
        """The job's graph with each node's latest figures
        (:func:`flinkish_cli.registry.graph_view.job_view`)."""
        from flinkish_cli.registry.graph_view import job_view

        return job_view(status, self.graph(status.job_id))

    def job_info(self, job_id: str) -> dict[str, Any]:
        """``flinkish info <JobID>``: per query, what its checkpoint takes on storage, by part,
        as the job's driver last measured it (:func:`flinkish_cli.registry.graph_view.job_summary`),
        and its graph with its latest figures (``graph``: the query's part of
        :meth:`graph_view`)."""
        from flinkish_cli.registry.graph_view import job_summary

        status = self.registry.get(parse_job_id(job_id))
        document = job_summary(status)
        graphs = self.graph_view(status)["queries"]
        for name, query in document["queries"].items():
            query["graph"] = graphs.get(name)
        return document

    def series(self, status: JobStatus) -> Series:
        """The job's figures over time, for charts: the kept series with the status's newest
        batches folded in (:mod:`flinkish_cli.registry.series`)."""
        from flinkish_cli.registry import series

        return series.read(self.registry, status.job_id).with_recent(status)

    def jvm_records(self, statuses: list[JobStatus]) -> dict[str, JvmRecord]:
        """The JVMs each job runs on, as its driver last measured them
        (:mod:`flinkish_cli.registry.jvm`), for the jobs that are not over and have a recent
        record (read in parallel: one small file per job)."""
        from flinkish_cli.registry import jvm

        now = time.time()
        live = [s.job_id for s in statuses if not s.effective_state(now).is_terminal]
        if not live:
            return {}
        with ThreadPoolExecutor(max_workers=min(16, len(live))) as pool:
            records = pool.map(lambda job_id: jvm.read(self.registry, job_id), live)
            found = dict(zip(live, records, strict=True))
        return {job_id: r for job_id, r in found.items() if r is not None and r.fresh(now)}

    def savepoint_history(self, job_id: str | None = None) -> list[SavepointRecord]:
        """The savepoints of one job, and of the jobs it was upgraded from (every job's
        without a JobID), newest first."""
        history = SavepointHistory(self.registry)
        if job_id is None:
            return history.all()
        return history.of_lineage(self.registry.get(parse_job_id(job_id)).job_id)

    def last_savepoint(self, job_id: str) -> SavepointRecord | None:
        """The job's last savepoint: the newest completed one of its history (see
        :meth:`~flinkish_cli.registry.history.SavepointHistory.last_completed`)."""
        return SavepointHistory(self.registry).last_completed(parse_job_id(job_id))

    def last_savepoints(self, job_ids: list[str]) -> dict[str, SavepointRecord | None]:
        """:meth:`last_savepoint` of every job of a job list, by JobID, read in parallel."""
        if not job_ids:
            return {}
        with ThreadPoolExecutor(max_workers=min(16, len(job_ids))) as pool:
            return dict(zip(job_ids, pool.map(self.last_savepoint, job_ids), strict=True))
