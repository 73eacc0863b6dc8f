"""Reading a job's driver log, where its status says it is."""

from __future__ import annotations

import os
import socket
import time
from collections import deque
from collections.abc import Iterator

from flinkish_cli.errors import JobError
from flinkish_cli.registry.store import JobRegistry


def stream_log(
    registry: JobRegistry, job_id: str, follow: bool = False, last_lines: int | None = None
) -> Iterator[str]:
    """Yield the log's content; with ``follow``, keep yielding until the job has ended."""
    status = registry.get(job_id)
    path = status.log_path
    if not path or not os.path.exists(path):
        remote = status.host and status.host != socket.gethostname()
        where = f" on host {status.host}" if remote else ""
        raise JobError(
            f"The log of job {job_id} is not on this machine (it was {path or 'not recorded'}"
            f"{where}).",
            "Logs stay on the machine that ran the driver (env.log.dir); run this there.",
        )
    with open(path, encoding="utf-8", errors="replace") as handle:
        if last_lines is not None:
            yield "".join(deque(handle, maxlen=last_lines))
        else:
            yield from iter(lambda: handle.read(65536), "")
        while follow:
            chunk = handle.read(65536)
            if chunk:
                yield chunk
                continue
            current = registry.find(job_id)
            if current is None or current.effective_state().is_terminal:
                yield handle.read()
                return
            time.sleep(0.3)
