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

Modules not named above:

- :mod:`.batch_figures`: the figures of a query's latest micro-batch per node of its graph, as
  its status records them.
- :mod:`.graph`: the job graph as the registry keeps it.
- :mod:`.graph_view`: the job graph with its figures.
- :mod:`.jobid`: JobIDs (32 lower-case hex characters, as Flink prints them), validated.
- :mod:`.logroll`: rolling a log by size, as Flink's log4j rolling appender rolls its files.
- :mod:`.logs`: reading a job's driver log.
- :mod:`.names`: query identities that become directory names.
- :mod:`.operations`: results of operations that belong to no job.
- :mod:`.program`: what a job ran, kept beside its status so that an upgrade can bring it back.
- :mod:`.rescale_marker`: a rescale under way.
- :mod:`.rescales`: a job's rescale history.
- :mod:`.series`: a job's figures over time, for charts.
- :mod:`.status`: a job's status as its driver records it, and the states it moves through.
- :mod:`.store`: reading and writing the status files on the checkpoint storage, with the status
  index on S3.
- :mod:`.task_time`: Flink's busy, back-pressured and idle time of a task, in a micro-batch
  query's terms.
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
