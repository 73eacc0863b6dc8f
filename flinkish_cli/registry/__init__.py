"""The job registry: who a job is and what state it is in, kept beside its checkpoints.

There is no daemon. Each job's driver writes ``<execution.checkpointing.dir>/<JobID>/_flinkish/
status.json`` on every heartbeat and every completed micro-batch; any shell with the same
configuration reads those files to list jobs, and writes control requests next to them to
cancel, stop or snapshot a job (see :mod:`flinkish_cli.registry.control`, and the typed
commands of :mod:`flinkish_cli.registry.protocol`). Each job's savepoint history is kept
beside its status (:mod:`flinkish_cli.registry.history`). Every write of a status file is one
of the named transitions of :mod:`flinkish_cli.registry.status_writer` (submitted, the
driver's heartbeat, the supervisor's, an upgrade's link). What each query's checkpoint takes
on storage, part by part, and which parts grow with age, is :mod:`flinkish_cli.registry.footprint`
(the driver measures it into the status); the JVMs a job runs on (Flink's JobManager and
TaskManagers) and their task slots, as its driver last measured them, are
:mod:`flinkish_cli.registry.jvm` (``jvm.json``, beside the status).
"""

from flinkish_cli.registry.jobid import new_job_id, parse_job_id
from flinkish_cli.registry.status import JobState, JobStatus, QueryStatus
from flinkish_cli.registry.store import JobRegistry

__all__ = [
    "JobRegistry",
    "JobState",
    "JobStatus",
    "QueryStatus",
    "new_job_id",
    "parse_job_id",
]
