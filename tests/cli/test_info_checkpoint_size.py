"""``flinkish info <JobID>``: what each query's checkpoint takes on storage, as the driver
recorded it in the registry; text for people, ``--output json`` (before or after the JobID)
for scripts, and a JobID with anything else after it is a usage error."""

from __future__ import annotations

import json
import re
import time

from flinkish_cli.registry.footprint import Footprint, PartSize
from flinkish_cli.registry.status import JobState, JobStatus, QueryStatus
from flinkish_cli.registry.store import JobRegistry
from tests.fixtures.flinkish_env import FlinkishEnv

JOB = "12" * 16


def _record(env: FlinkishEnv) -> None:
    measured = Footprint(
        time.time(),
        {"offsets": PartSize(20, 13000), "sources": PartSize(3, 3 << 20)},
    )
    status = JobStatus(
        job_id=JOB,
        name="orders",
        state=JobState.RUNNING,
        queries={
            "raw": QueryStatus(name="raw", checkpoint="/cp/raw", footprint=measured),
            "late": QueryStatus(name="late", checkpoint="/cp/late"),
        },
    )
    JobRegistry.open(str(env.checkpoints)).write(status)


def test_info_of_a_job_shows_each_part_and_what_grows(flinkish_env: FlinkishEnv) -> None:
    _record(flinkish_env)
    text = flinkish_env.run("info", JOB, check=True).stdout
    assert f"Checkpoints of job {JOB} (orders, RUNNING)." in text
    assert "== Query 'raw' (/cp/raw): 3.0 MiB" in text
    assert re.search(r"^sources +3 +3\.0 MiB +with age$", text, re.MULTILINE), text
    assert re.search(r"^offsets +20 +12\.7 KiB +bounded$", text, re.MULTILINE), text
    assert "-- sources grows for as long as the query runs" in text
    assert "What to do: set flinkish.file-source.log.cleanup-delay" in text
    assert "== Query 'late' (/cp/late): not measured yet ==" in text


def test_info_of_a_job_as_json_before_or_after_the_jobid(flinkish_env: FlinkishEnv) -> None:
    _record(flinkish_env)
    for args in (("info", JOB, "--output", "json"), ("info", "-o", "json", JOB)):
        document = json.loads(flinkish_env.run(*args, check=True).stdout)
        raw = document["queries"]["raw"]["footprint"]
        assert raw["parts"]["sources"] == {"bytes": 3 << 20, "files": 3, "grows": "age"}
        assert raw["growing"][0]["part"] == "sources"
        assert document["queries"]["late"]["footprint"] is None


def test_info_of_an_unknown_job_or_with_extra_words_is_one_line(
    flinkish_env: FlinkishEnv,
) -> None:
    _record(flinkish_env)
    unknown = flinkish_env.run("info", "ab" * 16, check=False)
    assert unknown.returncode == 1 and f"No job with JobID {'ab' * 16}" in unknown.stderr
    extra = flinkish_env.run("info", JOB, "--input", "x", check=False)
    assert extra.returncode == 1
    assert "'--input' after a JobID: 'flinkish info <JobID>' takes only -o/--output." in (
        extra.stderr
    )
