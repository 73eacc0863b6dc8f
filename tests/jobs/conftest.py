"""Fixtures of the example jobs' tests: ONE local Spark session and a streaming job runner.

The jobs import their helper package ``common`` from their own directory (``jobs/``), as they
do when flinkish runs them; the session ships that directory to its Python workers the way
flinkish does (a zip of its ``.py`` files, ``addPyFile``), so a UDF that calls a helper works
only if the shipping does.
"""

from __future__ import annotations

import json
import sys
import threading
import time
import zipfile
from collections.abc import Callable, Iterator, Sequence
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from tests.fixtures.local_spark import stop_spark

ROOT = Path(__file__).resolve().parents[2]
JOBS_DIR = ROOT / "jobs"
SCRIPTS_DIR = ROOT / "scripts"
for _path in (JOBS_DIR, SCRIPTS_DIR):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))


def zip_jobs(dest: Path) -> Path:
    """Zip the ``.py`` files of ``jobs/`` (the job's root) as flinkish ships them."""
    archive_path = dest / "jobs.zip"
    with zipfile.ZipFile(archive_path, "w") as archive:
        for path in sorted(JOBS_DIR.rglob("*.py")):
            if "__pycache__" not in path.parts:
                archive.write(path, path.relative_to(JOBS_DIR).as_posix())
    return archive_path


@pytest.fixture(scope="package")
def spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """The one SparkSession of the jobs' tests: local[1], no UI, one shuffle partition. Its
    JVM ends with the package's last test (the package's modules run on one worker, one
    after the other: tests/conftest.py's groups)."""
    from pyspark.sql import SparkSession

    work = tmp_path_factory.mktemp("spark")
    session = (
        SparkSession.builder.master("local[1]")
        .appName("flinkish-jobs-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "1")
        .config("spark.sql.warehouse.dir", str(work / "warehouse"))
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    session.sparkContext.addPyFile(str(zip_jobs(work)))
    yield session
    for query in session.streams.active:
        query.stop()
    stop_spark(session)


def read_json_dir(path: Path) -> list[dict[str, Any]]:
    """The rows of the JSON part files under ``path`` (any depth), decimals exact."""
    rows: list[dict[str, Any]] = []
    for part in sorted(path.rglob("part-*.json")):
        if any(piece.startswith((".", "_")) for piece in part.relative_to(path).parts):
            continue
        with open(part, encoding="utf-8") as handle:
            rows.extend(json.loads(line, parse_float=Decimal) for line in handle if line.strip())
    return rows


def _file_log_offset(progress: Any) -> int | None:
    """The file source's log offset (the number of file batches minus one) in ``progress``."""
    if not progress or not progress["sources"]:
        return None
    offset = progress["sources"][0]["endOffset"]
    if isinstance(offset, str):
        offset = json.loads(offset)
    return None if offset is None else int(offset["logOffset"])


class StreamingRun:
    """Runs a job's ``main(argv)`` in a thread, as flinkish would, with the test's checkpoints.

    The checkpoint base goes into ``spark.sql.streaming.checkpointLocation``: Spark then puts
    each named query's checkpoint in ``<base>/<query name>``, the layout flinkish uses.
    ``process(files)`` waits until every query has processed the first ``files`` files.
    """

    def __init__(
        self,
        spark: Any,
        main: Callable[[Sequence[str]], None],
        argv: Sequence[str],
        checkpoints: Path,
        names: set[str],
        timeout: float = 120.0,
    ) -> None:
        self.spark = spark
        self.main = main
        self.argv = list(argv)
        self.checkpoints = checkpoints
        self.names = names
        self.timeout = timeout
        self.error: BaseException | None = None
        self.thread: threading.Thread | None = None

    def _run(self) -> None:
        try:
            self.main(self.argv)
        except BaseException as error:
            self.error = error

    def queries(self) -> dict[str, Any]:
        return {q.name: q for q in self.spark.streams.active if q.name in self.names}

    def __enter__(self) -> StreamingRun:
        self.spark.streams.resetTerminated()
        self.spark.conf.set("spark.sql.streaming.checkpointLocation", str(self.checkpoints))
        self.thread = threading.Thread(target=self._run, name="job-main", daemon=True)
        self.thread.start()
        deadline = time.monotonic() + self.timeout
        while set(self.queries()) != self.names:
            if self.error is not None:
                raise self.error
            if not self.thread.is_alive():
                raise AssertionError(f"main() returned before starting {sorted(self.names)}")
            if time.monotonic() > deadline:
                raise AssertionError(f"queries {sorted(self.names)} did not start")
            time.sleep(0.1)
        return self

    def process(self, files: int) -> None:
        """Wait until each query has processed the first ``files`` files of its input.

        The tests write one file at a time and call this after each, so each file is one
        micro-batch, and the file source's log offset counts them (from 0).
        """
        deadline = time.monotonic() + self.timeout
        for name, query in self.queries().items():
            while True:
                query.processAllAvailable()
                seen = _file_log_offset(query.lastProgress)
                if seen is not None and seen >= files - 1:
                    assert seen == files - 1, f"query {name} is at file {seen + 1} of {files}"
                    break
                if time.monotonic() > deadline:
                    raise AssertionError(f"query {name} processed {seen} of {files} files")
                time.sleep(0.2)

    def __exit__(self, *exc: object) -> None:
        for query in self.queries().values():
            query.stop()
        assert self.thread is not None
        self.thread.join(self.timeout)
        assert not self.thread.is_alive(), "main() did not return after its queries stopped"
        if self.error is not None and exc[0] is None:
            raise self.error


@pytest.fixture
def run_job(spark: Any, tmp_path: Path) -> Callable[..., StreamingRun]:
    """``run_job(main, argv, names)``: a :class:`StreamingRun` with checkpoints in tmp_path."""

    def make(
        main: Callable[[Sequence[str]], None],
        argv: Sequence[str],
        names: set[str],
        checkpoints: Path | None = None,
    ) -> StreamingRun:
        return StreamingRun(spark, main, argv, checkpoints or tmp_path / "checkpoints", names)

    return make
