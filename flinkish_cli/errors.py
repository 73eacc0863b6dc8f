"""The exceptions flinkish raises for problems a user can fix.

Every error meant for a user derives from :class:`FlinkishError`. The command line prints
such an error as one message (plus an optional hint on how to fix it) and exits with
:attr:`FlinkishError.exit_code`; it shows a Python traceback only with ``--verbose``.
Anything that is not a :class:`FlinkishError` is a bug in flinkish and is reported as such.
"""

from __future__ import annotations


class FlinkishError(Exception):
    """A problem the user can fix: a message naming what is wrong, and a hint how to fix it."""

    exit_code: int = 1

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return self.message if not self.hint else f"{self.message}\n{self.hint}"


class ConfigError(FlinkishError):
    """Configuration that cannot be read or is invalid (file, key, value)."""


class UsageError(FlinkishError):
    """Command-line arguments that do not fit together (exit status 1, as Flink's CLI)."""


class JobError(FlinkishError):
    """A job that cannot be found, started or controlled."""


class RequestInterruptedError(FlinkishError):
    """The user interrupted (Ctrl-C, SIGTERM) a command that was waiting for a job's answer;
    the message says whether the request was withdrawn. Exit status 130, as for any
    interrupted command."""

    exit_code = 130


class JobFailedError(FlinkishError):
    """A job that ran and failed; the message is its failure cause."""


class JobCanceledError(FlinkishError):
    """An attached job that ended CANCELED (exit status 1, as Flink's client)."""


class StorageError(FlinkishError):
    """A file system (local, S3, HDFS) that cannot be reached or refused an operation."""


class KafkaError(FlinkishError):
    """A Kafka source that cannot be read as the job asks: its broker does not answer, a
    topic does not exist, or a savepoint's offsets are no longer in its topic."""


class SavepointError(FlinkishError):
    """A savepoint that cannot be taken, read, restored or disposed of."""


class StateError(FlinkishError):
    """State that cannot be read: what was named is not a savepoint, a checkpoint or a job
    with state, an operator or store it does not have, a damaged state file, or an export
    target that cannot take the state."""


class StateNotFoundError(StateError):
    """A query, operator or store that what was named does not have."""
