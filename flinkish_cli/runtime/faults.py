"""Named points where tests kill the job's own processes, to prove recovery from them.

A test sets ``FLINKISH_TEST_FAULT=<point>:<process>`` in the environment of ``flinkish run``
(the driver inherits it); when the job's first driver reaches ``<point>`` it SIGKILLs
``<process>``: ``jvm`` (Spark's JVM, as the OOM killer would) or ``python`` (the driver
itself). A comma-separated list names one fault per driver attempt, in order
(``restore-copied:jvm,restore-repartitioned:python``: the first driver dies at the first
point, its restart at the second); a driver past the list never injects, so the last
restart can succeed. A point named ``<point>@<batch>`` fires only at that batch (a point
that knows its batch: the Kafka sink's), so a query can commit batches before it dies.
Points: ``restore-copied`` (a savepoint's state copied into the job's checkpoint, before it
is repartitioned), ``restore-repartitioned`` (state repartitioned for a new parallelism, not
yet marked restored), ``savepoint-snapshot`` (the driver chose the files of a savepoint,
before copying them), ``rescale-repartitioned`` (an in-place rescale's state repartitioned,
not yet marked done: injected by the rescale's first driver, whatever its attempt), and the
Kafka sink's points of :mod:`~flinkish_cli.runtime.connectors.kafka_sink`
(``kafka-sink-first-record``, ``kafka-sink-between-records`` in an executor's worker, which
also knows ``worker``: the worker itself; ``kafka-sink-committed`` in the driver). Nothing
happens unless the variable names the point.
"""

from __future__ import annotations

import os
import signal

VARIABLE = "FLINKISH_TEST_FAULT"


def wanted(point: str, attempt: int, batch: int | None = None) -> str | None:
    """The process a test asked to kill at ``point`` in driver attempt ``attempt`` (at batch
    ``batch``, for a point that knows it), or None."""
    asked = os.environ.get(VARIABLE, "").split(",")
    if attempt >= len(asked):
        return None
    name, _, process = asked[attempt].partition(":")
    name, at, when = name.partition("@")
    if at and (batch is None or when != str(batch)):
        return None
    return process if name == point else None


def inject(point: str, attempt: int, batch: int | None = None) -> None:
    """Kill the named process if a test asked for a fault at ``point``."""
    process = wanted(point, attempt, batch)
    if process is None:
        return
    import logging

    logging.getLogger("flinkish.runtime").warning("Test fault at %s: killing %s.", point, process)
    logging.shutdown()
    if process == "jvm":
        os.kill(os.getppid(), signal.SIGKILL)
        signal.pause()  # the driver notices its JVM is gone and exits
    os.kill(os.getpid(), signal.SIGKILL)
