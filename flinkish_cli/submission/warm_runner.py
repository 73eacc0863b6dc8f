"""The server's pool of warm runners: ``flinkish web``'s one spare supervisor, started ahead
of a job and replaced after each job it takes.

The protocol, both sides of it (the spare's command lines, the line a spare is handed, the
spare supervisor and its spare client), is :mod:`flinkish_cli.runtime.warm`'s; this module is
the server's side only: :class:`WarmRunner` starts a spare, hands it a job's run directory
(:meth:`WarmRunner.take`, from :func:`flinkish_cli.submission.launcher.launch`), replaces a
spare that dies while it waits, and starts the next one once the job it took has started
(:meth:`WarmRunner.refill_after`).
"""

from __future__ import annotations

import logging
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path

from flinkish_cli.runtime.warm import end_spare, kill_group, send_line, supervisor_command

log = logging.getLogger("flinkish.warm")

#: The next spare starts at the latest this many seconds after a spare was handed a job.
REFILL_TIMEOUT = 60.0
#: How often :meth:`WarmRunner.refill_after` asks whether the job has started.
REFILL_POLL = 0.25
#: How often a waiting spare is checked; one that dies sooner than SHORTEST_LIFE seconds
#: after it started is replaced only when the next job comes.
WATCH_POLL = 1.0
SHORTEST_LIFE = 10.0


class WarmRunner:
    """``flinkish web``'s one spare supervisor, replaced after each job it takes."""

    def __init__(
        self,
        environment: dict[str, str],
        command: list[str] | None = None,
    ) -> None:
        self.environment = dict(environment)
        self.command = command or supervisor_command()
        self.taken = 0  # jobs handed to spares
        self._spare: subprocess.Popen[bytes] | None = None
        self._lock = threading.Lock()
        self._closed = False

    def start(self) -> WarmRunner:
        """Start the first spare now."""
        with self._lock:
            self._ensure_spare()
        return self

    def take(self, run_dir: Path, environment: dict[str, str]) -> subprocess.Popen[bytes] | None:
        """Hand ``run_dir`` (its files written) to the spare; the spare's process, now the
        job's supervisor. None when the job wants another environment, the runner is closed
        or no spare could start: the job starts cold."""
        if environment != self.environment:
            return None
        with self._lock:
            if self._closed:
                return None
            for _ in range(2):  # a spare that just died: one more, at once
                try:
                    spare = self._ensure_spare()
                except OSError as error:
                    log.warning("No warm runner (%s): the job starts cold.", error)
                    return None
                self._spare = None
                if send_line(spare, str(run_dir)):
                    break
                kill_group(spare)
            else:
                return None
            self.taken += 1
        log.info("Job of %s handed to warm runner %d.", run_dir.name, spare.pid)
        return spare

    def refill_after(self, started: Callable[[], bool], timeout: float = REFILL_TIMEOUT) -> None:
        """Start the next spare (when there is none) once ``started()`` holds (the job just
        handed over runs or has ended), at the latest after ``timeout`` seconds; in a thread
        of its own. A ``started`` that raises counts as not yet."""

        def wait() -> None:
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline and not self._closed:
                try:
                    if started():
                        break
                except Exception:
                    pass
                time.sleep(REFILL_POLL)
            with self._lock:
                if not self._closed:
                    self._ensure_spare()

        threading.Thread(target=wait, name="flinkish-warm-refill", daemon=True).start()

    def spare_pid(self) -> int | None:
        """The waiting spare's pid (None while there is none)."""
        with self._lock:
            spare = self._spare
            return spare.pid if spare is not None and spare.poll() is None else None

    def close(self) -> None:
        """Stop the spare (it holds no job); no other spare starts."""
        with self._lock:
            self._closed = True
            spare, self._spare = self._spare, None
        if spare is not None:
            end_spare(spare)

    def _ensure_spare(self) -> subprocess.Popen[bytes]:
        """The waiting spare, a new one when there is none or it died (lock held)."""
        if self._spare is not None and self._spare.poll() is not None:
            log.warning("The warm runner %d died (status %s).", self._spare.pid, self._spare.poll())
            self._spare = None
        if self._spare is None:
            self._spare = subprocess.Popen(
                self.command,
                env=self.environment,
                stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL,
                start_new_session=True,  # it becomes a job's supervisor, which outlives us
            )
            watch = threading.Thread(
                target=self._watch, args=(self._spare,), name="flinkish-warm-watch", daemon=True
            )
            watch.start()
        return self._spare

    def _watch(self, spare: subprocess.Popen[bytes]) -> None:
        """Replace ``spare`` when it dies while it waits (killed, out of memory), unless it
        lived less than :data:`SHORTEST_LIFE` (a spare that cannot start: the next job
        starts one); return once it was handed a job or the runner closed."""
        born = time.monotonic()
        while True:
            try:
                code = spare.wait(timeout=WATCH_POLL)
            except subprocess.TimeoutExpired:
                if self._spare is not spare:
                    return  # handed a job, or closed
                continue
            with self._lock:
                if self._spare is not spare or self._closed:
                    return
                self._spare = None
                lived = time.monotonic() - born
                log.warning("The warm runner %d died (status %s).", spare.pid, code)
                if lived >= SHORTEST_LIFE:
                    self._ensure_spare()
            return
