"""``flinkish logs`` of a yarn-application job: its driver's log, read live from YARN.

The driver runs in the application's ApplicationMaster container; its log is that
container's ``stderr`` on the NodeManager (:func:`flinkish_cli.spark.yarn.driver_log`), the
current attempt's (a new attempt's driver writes a new log). ``follow`` reads it again every
second and yields what is new, until the job has ended and YARN has ended the application.
"""

from __future__ import annotations

import time
from collections.abc import Generator

from flinkish_cli.registry.status import JobStatus
from flinkish_cli.registry.store import JobRegistry
from flinkish_cli.spark import yarn

#: How often a follow reads the log again (seconds).
FOLLOW_EVERY = 1.0
#: YARN's states of an application that has ended.
ENDED = frozenset({"FINISHED", "FAILED", "KILLED"})


def driver_log(
    registry: JobRegistry,
    status: JobStatus,
    follow: bool,
    last_lines: int | None,
    ticks: bool,
) -> Generator[str, None, None]:
    """The driver's log in chunks of text (see the module docstring)."""
    app_id = str(status.yarn_application)
    seen = dict.fromkeys(yarn.DRIVER_LOGS, 0)

    def read() -> str:
        """What is new in each log file since the last read (all of it the first time)."""
        chunk = []
        for name in yarn.DRIVER_LOGS:
            text = yarn.driver_log(app_id, name)
            if len(text) < seen[name]:  # a new attempt's driver: its log from the start
                seen[name] = 0
            chunk.append(text[seen[name] :])
            seen[name] = len(text)
        return "".join(chunk)

    text = read()
    if last_lines is not None:
        lines = text.splitlines(keepends=True)
        yield "".join(lines[-last_lines:] if last_lines else [])
    else:
        yield text
    while follow:
        current = registry.get(status.job_id)
        if current.effective_state().is_terminal and (
            str(yarn.application(app_id).get("state")) in ENDED
        ):
            return
        time.sleep(FOLLOW_EVERY)
        text = read()
        if text or ticks:
            yield text
