"""How a job's driver process ended, in the words of the job's failure cause ("Spark's JVM
exited with signal 9 (SIGKILL)."): what the restart strategy records and the job's end
shows.
"""

from __future__ import annotations

import signal
from dataclasses import dataclass

from flinkish_cli.runtime.restart import EXIT_JVM_LOST


@dataclass
class DriverExit:
    """How a driver process ended."""

    returncode: int
    reported: bool  # the driver wrote the job's status (it started)
    hung: bool = False  # killed by the supervisor: no heartbeat for heartbeat.timeout
    client: bool = False  # a session cluster job's client process (Python only)

    def cause(self) -> str:
        code = self.returncode
        if self.hung:
            return "The job's driver stopped sending heartbeats and was killed by its supervisor."
        if self.client:
            if code < 0:
                return (
                    f"The job's client process was killed by signal {-code} "
                    f"({_signal_name(-code)})."
                )
            return f"The job's client process exited with status {code} without an end."
        if code < 0:
            return f"Spark's JVM exited with signal {-code} ({_signal_name(-code)})."
        if code == EXIT_JVM_LOST:
            return "Spark's JVM exited while the job ran."
        if code > 128:
            return (
                f"The job's Python driver was killed by signal {code - 128} "
                f"({_signal_name(code - 128)}); Spark's JVM exited with status {code}."
            )
        return f"The job's driver exited with status {code} without recording an end."


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"
