"""``python -m flinkish_cli.runtime.flavours.offline_repartition``: a stopped query's state
repartitioned offline by Spark's own checkpoint manager, in a local classic Spark of its own.

Spark 4.3 repartitions a RocksDB query's state offline only from a classic session
(``StreamingCheckpointManager.repartition``: ``spark._streamingCheckpointManager``); a Spark
Connect session has no such call. So a session-cluster job's client, which talks to its
cluster through Spark Connect, runs the repartition here, in a child process with a local
Spark (:func:`repartition_offline`), before its query starts again at the new parallelism:
``run -s <savepoint> -p N -m sc://...`` and a session job's in-place rescale.

The child runs on the client's machine: the checkpoint must be readable and writable from
there with the job's Hadoop settings (a local directory the cluster shares, HDFS, or S3 with
Hadoop's S3A connector on the classpath). When it is not, the child's failure is the
repartition's failure: the restore refuses to start, and an in-place rescale is rolled back.

The request is one JSON object on standard input (never on the command line: the Hadoop
settings carry credentials)::

    {"checkpoint": <the query's checkpoint>, "partitions": <N>,
     "conf": {<spark.hadoop.* and the driver's JVM options>}, "class_data_sharing": <bool>}

The answer is one JSON line on standard output: ``{"ok": true}``, or ``{"ok": false,
"failure": <Spark's cause, one line>}``. Spark's own output goes to standard error
(:mod:`flinkish_cli.plan.child`, which also bounds the child in time on both sides).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from typing import Any

from flinkish_cli.plan.child import run_child, serve

#: How long the child may take: a local Spark's start and one repartition job.
TIMEOUT = 600.0
#: Variables of a Connect client's environment that would make the child's session a
#: Connect session too: the child's must be classic.
_CONNECT_VARIABLES = ("SPARK_REMOTE", "SPARK_CONNECT_MODE_ENABLED", "SPARK_LOCAL_REMOTE")


def repartition_offline(
    checkpoint: str, partitions: int, flink_conf: Mapping[str, str], timeout: float = TIMEOUT
) -> None:
    """Repartition the stopped query's state in ``checkpoint`` to ``partitions``, in a child
    process (see the module's docstring); ``flink_conf`` is the job's configuration, whose
    Hadoop settings the child takes. Raises :class:`~flinkish_cli.errors.SavepointError`
    with the child's cause when it fails."""
    from flinkish_cli.config import Configuration
    from flinkish_cli.errors import SavepointError
    from flinkish_cli.state.api import spark_conf

    config = Configuration.from_flat(dict(flink_conf))
    request = {
        "checkpoint": checkpoint,
        "partitions": partitions,
        "conf": spark_conf(config),
        "class_data_sharing": bool(config.get("env.java.class-data-sharing")),
    }
    env = {k: v for k, v in os.environ.items() if k not in _CONNECT_VARIABLES}
    env["PYSPARK_PYTHON"] = sys.executable
    ended = run_child(__name__, request, timeout, env)
    if ended.timed_out:
        raise SavepointError(
            f"The offline repartition of {checkpoint} did not end within {timeout:.0f} s."
        )
    answer = ended.answer or {}
    if answer.get("ok") is True:
        return
    failure = answer.get("failure") or ended.last_line() or f"exit status {ended.returncode}"
    raise SavepointError(
        f"Spark could not repartition the state in {checkpoint} to {partitions} partitions "
        f"(offline, in a local Spark on this machine: Spark Connect cannot): {failure}",
        "The checkpoint must be readable and writable from the job's client machine with the "
        "job's Hadoop settings; otherwise keep the savepoint's parallelism.",
    )


def repartition_here(request: Mapping[str, Any]) -> dict[str, Any]:
    """Carry out one request in this process (a local Spark session); the answer, whose
    ``failure`` is Spark's cause alone (the caller names the checkpoint)."""
    from flinkish_cli.savepoints.restore import repartition
    from flinkish_cli.spark.failures import spark_cause
    from flinkish_cli.spark.local import local_session

    settings = {"spark.sql.session.timeZone": "UTC", **request.get("conf", {})}
    sharing = bool(request.get("class_data_sharing"))
    try:
        with local_session("local[*]", settings, class_data_sharing=sharing) as spark:
            repartition(spark, str(request["checkpoint"]), int(request["partitions"]))
    except Exception as error:  # Spark's refusal (a SavepointError around it), or its start
        return {"ok": False, "failure": spark_cause(error.__cause__ or error)}
    return {"ok": True}


def main() -> int:
    return 0 if serve(repartition_here)["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
