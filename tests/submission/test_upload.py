"""Programs submitted to a session cluster through ``flinkish web`` (``web.submit.enable``).

The fast tests check the exchange's two sides without Spark (the run request, the upload's
directory, the job's environment, what the endpoint refuses); one module-scoped session
cluster (the ``connect_server`` fixture, a real Spark Connect server) with a ``flinkish web``
of this test's registry in front of it runs the submitted jobs: ``run -d`` prints Flink's line
from a CLI process that imports neither pyspark nor pandas, the job starts in the server's
warm runner (and so does the next, in the spare that replaced it), the program does not see
the server's secret environment, an upgrade is carried out by the server (and a failing new
program rolled back there) for a CLI that touches no storage, and an attached BATCH run ends
as a session-cluster run does.
"""

from __future__ import annotations

import base64
import io
import json
import re
import subprocess
import sys
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from flinkish_cli.errors import UsageError
from flinkish_cli.submission import upload
from flinkish_cli.submission.submit import RunRequest
from tests.fixtures.flinkish_env import FlinkishEnv, job_id_of
from tests.fixtures.web_server import WebServer, running_web

#: The submitting servers' token (web.submit.enable needs one).
TOKEN = "submit-token-0123456789abcdef"

JOB = """
import os, sys
from pyspark.sql import SparkSession

spark = SparkSession.builder.getOrCreate()
out = sys.argv[1]
with open(out, "w") as handle:
    handle.write(os.environ.get("SERVER_SECRET", "<unset>"))
rows = spark.readStream.format("rate").option("rowsPerSecond", 5).load()
query = rows.writeStream.format("noop").queryName("rate").start()
query.awaitTermination()
print("count", spark.range(7).count())
"""

#: A program that starts its query, then fails in its first batch.
FAILING = """
from pyspark.sql import SparkSession

spark = SparkSession.builder.getOrCreate()


def fail(batch, batch_id):
    raise RuntimeError("the new program fails")


rows = spark.readStream.format("rate").option("rowsPerSecond", 5).load()
rows.writeStream.foreachBatch(fail).queryName("rate").start().awaitTermination()
"""


# -- without Spark ---------------------------------------------------------------------------
def test_the_run_request_round_trips_and_refuses_bad_fields() -> None:
    run = upload.UploadedRun("job.py", ["--x", "1"], {"parallelism.default": "2"}, True, 3)
    run.origin = "/home/me/job.py"
    assert upload.UploadedRun.from_json(json.loads(json.dumps(run.to_json()))) == run
    for body, word in (
        ([], "not a JSON object"),
        ({}, "names no program"),
        ({"entryClass": "j.py", "programArgsList": [1]}, "programArgsList"),
        ({"entryClass": "j.py", "flinkConfiguration": {"a": 1}}, "flinkConfiguration"),
        ({"entryClass": "j.py", "parallelism": 0}, "parallelism"),
        ({"entryClass": "j.py", "savepointPath": 3}, "savepointPath"),
    ):
        with pytest.raises(UsageError, match=word):
            upload.UploadedRun.from_json(body)


def _zip(files: dict[str, str]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, text in files.items():
            archive.writestr(name, text)
    return buffer.getvalue()


def test_an_upload_is_private_and_never_leaves_its_directory(tmp_path: Path) -> None:
    upload_id = upload.unpack(_zip({"job.py": "print(1)", "pkg/mod.py": ""}), tmp_path)
    found = upload.upload_dir(tmp_path, upload_id)
    assert (found / "pkg" / "mod.py").is_file() and found.stat().st_mode & 0o777 == 0o700
    with pytest.raises(UsageError, match="outside its directory"):
        upload.unpack(_zip({"../evil.py": "x"}), tmp_path)
    with pytest.raises(UsageError, match="not a zip"):
        upload.unpack(b"no zip", tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == [found.name]  # nothing left over
    with pytest.raises(Exception, match="no upload"):
        upload.upload_dir(tmp_path, "../x")
    run = upload.UploadedRun("../job.py")
    with pytest.raises(Exception, match="holds no program"):
        upload.run_request(found, run, "sc://127.0.0.1:1")


def test_a_submitted_job_keeps_none_of_the_servers_secrets() -> None:
    kept = upload.job_environment(
        {"PATH": "/bin", "LC_ALL": "C", "AWS_SECRET_ACCESS_KEY": "s", "FLINKISH_WEB_TOKEN": "t"}
    )
    assert kept == {"PATH": "/bin", "LC_ALL": "C"}


def test_options_that_do_not_travel_are_refused_with_the_alternative(tmp_path: Path) -> None:
    script = tmp_path / "job.py"
    script.write_text("print(1)\n")
    with pytest.raises(UsageError, match="-pyfs cannot be submitted") as refused:
        upload.program_archive(RunRequest(script=str(script), py_files=[str(tmp_path)]))
    assert "sc://host:port" in (refused.value.hint or "")
    data, entry = upload.program_archive(RunRequest(script=str(script)))
    assert entry == "job.py" and zipfile.ZipFile(io.BytesIO(data)).namelist() == ["job.py"]


def test_uploads_are_refused_while_web_submit_enable_is_off(flinkish_env: FlinkishEnv) -> None:
    body = {"name": "job.py", "archive": base64.b64encode(_zip({})).decode()}
    with running_web(flinkish_env, "-D", "flinkish.web.session-cluster=sc://127.0.0.1:1") as web:
        reply = web.request("POST", "/flinkish/jars/upload", body=body)
        assert reply.status == 404 and "web.submit.enable" in reply.json()["errors"][0]
        assert web.get("/flinkish/cluster").json()["submit"] is False


# -- a real session cluster ------------------------------------------------------------------
@pytest.fixture(scope="module")
def submitting_web(
    tmp_path_factory: pytest.TempPathFactory, connect_server: str
) -> Iterator[tuple[FlinkishEnv, WebServer]]:
    env = FlinkishEnv.under(tmp_path_factory.mktemp("submit"))
    # web.submit.enable needs a token: the CLI's configuration names it as the server's does
    token = env.root / "web-token"
    token.write_text(TOKEN)
    token.chmod(0o600)
    env.write_conf({"flinkish.web.auth-token": f"${{file:{token}}}"})
    options = ["-D", f"flinkish.web.session-cluster={connect_server}"]
    options += ["-D", "web.submit.enable=true"]
    with running_web(env, *options, environ={"SERVER_SECRET": "s3cr3t"}) as web:
        web.token = TOKEN
        yield env, web


def _importtime(env: FlinkishEnv, *args: str) -> tuple[subprocess.CompletedProcess[str], set]:
    result = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "flinkish_cli", *args],
        env=env.environ(), cwd=env.root, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    imported = {line.split("|")[-1].strip() for line in result.stderr.splitlines() if "|" in line}
    return result, imported | {name.split(".")[0] for name in imported}


def _started_warm(env: FlinkishEnv, job_id: str) -> bool:
    """Whether the job's first client was the warm runner's spare (its log says so)."""
    from flinkish_cli.registry.logs import log_path

    text = Path(log_path(str(env.logs), job_id)).read_text()
    return re.search(r"Driver attempt 0: process \d+ \(a warm client\)\.", text) is not None


@pytest.mark.spark
def test_run_through_the_endpoint_starts_the_program_there(
    submitting_web: tuple[FlinkishEnv, WebServer],
) -> None:
    env, web = submitting_web
    job = env.root / "prog" / "job.py"
    job.parent.mkdir()
    job.write_text(JOB)
    seen = env.root / "seen-detached"
    started = time.monotonic()
    result, imported = _importtime(env, "run", "-d", "-m", web.address, str(job), str(seen))
    took = time.monotonic() - started
    assert result.returncode == 0, result.stderr[-3000:]
    job_id = job_id_of(result.stdout)
    assert result.stdout.splitlines()[0] == f"Job has been submitted with JobID {job_id}"
    assert not imported & {"pyspark", "pandas", "pyarrow", "grpc"}, sorted(imported)
    print(f"run -d through flinkish web: {took:.2f} s to its JobID line (with -X importtime)")
    assert _started_warm(env, job_id), "the job did not start in the warm runner's spare"

    # upgrade through the endpoint: the new program is uploaded and the server carries the
    # upgrade out (the CLI touches no storage); the new job runs from the savepoint
    upgraded, imported = _importtime(env, "upgrade", "-m", web.address, job_id, str(job), str(seen))
    assert upgraded.returncode == 0, upgraded.stderr[-3000:]
    assert not imported & {"pyspark", "boto3", "flinkish_cli.storage.local"}, sorted(imported)
    assert "Savepoint completed. Path: " in upgraded.stdout, upgraded.stdout
    new_id = job_id_of(upgraded.stdout.split("Savepoint completed.", 1)[1])
    assert f"Upgrade of job {job_id} completed: job {new_id} ({job})" in upgraded.stdout
    assert env.job(new_id)["upgraded_from"] == job_id
    assert seen.read_text() == "<unset>"  # the server's SERVER_SECRET never reached it
    assert _started_warm(env, new_id), "the next spare did not take the upgrade's job"

    # an upgrade to a program that fails once it runs is rolled back by the server: the
    # previous program (its kept code) resumes from the upgrade's savepoint; exit status 1
    failing = env.root / "prog" / "failing.py"
    failing.write_text(FAILING)
    rolled = env.run("upgrade", "-m", web.address, new_id, str(failing))
    assert rolled.returncode == 1, rolled.stdout + rolled.stderr[-3000:]
    assert f"Upgrade of job {new_id} rolled back: job " in rolled.stdout, rolled.stdout
    submitted = re.findall(r"Job has been submitted with JobID ([0-9a-f]{32})", rolled.stdout)
    assert len(submitted) == 2, rolled.stdout  # the failing program's job, then the rollback's
    assert f"job {submitted[1]} runs the previous program ({job})" in rolled.stdout
    assert "Rolling back: cancelling job " in rolled.stderr
    assert env.job(submitted[1])["state"] == "RUNNING"
    env.run("cancel", "-m", web.address, submitted[1], check=True)

    # attached, BATCH: Flink's lines, the job's end; the program saw its own environment
    seen_attached = env.root / "seen-attached"
    attached = env.run(
        "run", "-m", web.address, "-D", "execution.runtime-mode=BATCH", str(job),
        str(seen_attached),
    )  # fmt: skip
    assert attached.returncode == 0, attached.stderr[-3000:]
    lines = attached.stdout.splitlines()
    other = job_id_of(attached.stdout)
    assert lines[0] == f"Job has been submitted with JobID {other}"
    assert "Program execution finished" in lines
    assert f"Job with JobID {other} has finished." in lines
    assert seen_attached.read_text() == "<unset>"
    listed = env.run("list", "-a", "--output", "json", check=True).stdout
    states = {j["jid"]: j["state"] for j in json.loads(listed)["jobs"]}
    assert states[other] == "FINISHED" and job_id in states

    # a program that fails: exit 1, Flink's failure, as a session-cluster run
    bad = env.root / "prog" / "bad.py"
    bad.write_text("import sys\nsys.exit(3)\n")
    failed = env.run("run", "-m", web.address, str(bad))
    assert failed.returncode == 1 and "failed" in failed.stderr, failed.stderr


#: A program that never becomes stable: it starts no query within any readiness timeout.
NEVER_STABLE = """
import time
from pyspark.sql import SparkSession

spark = SparkSession.builder.getOrCreate()
time.sleep(3600)
"""


@pytest.mark.spark
def test_an_upgrade_goes_on_without_its_cli_and_a_stopping_server_finishes_it(
    submitting_web: tuple[FlinkishEnv, WebServer], connect_server: str
) -> None:
    """The CLI that asked is killed once the new job started, then the flinkish web carrying
    the upgrade out gets SIGTERM: the server finishes the upgrade before it exits (here a
    rollback: the new program never becomes stable), so no job is left half upgraded."""
    env, web = submitting_web
    programs = env.root / "stopped-server"
    programs.mkdir()
    job, never = programs / "job.py", programs / "never.py"
    job.write_text(JOB)
    never.write_text(NEVER_STABLE)
    started = env.run("run", "-d", "-m", web.address, str(job), str(programs / "seen"), check=True)
    job_id = job_id_of(started.stdout)
    options = ["-D", f"flinkish.web.session-cluster={connect_server}"]
    options += ["-D", "web.submit.enable=true", "-D", "flinkish.web.submit.warm-runner=false"]
    with running_web(env, *options) as other:
        other.token = TOKEN
        upgrading = subprocess.Popen(
            [sys.executable, "-m", "flinkish_cli", "upgrade", "-m", other.address,
             "--upgrade-mode", "stateless", "-D", "flinkish.upgrade.readiness.timeout=4 s",
             job_id, str(never)],
            env=env.environ(), cwd=env.root, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            text=True,
        )  # fmt: skip
        assert upgrading.stdout is not None
        first = upgrading.stdout.readline()  # the new job started: the old one is gone
        assert first.startswith("Job has been submitted with JobID "), first
        new_id = job_id_of(first)
        upgrading.kill()
        upgrading.wait(timeout=30)
        other.process.terminate()
        other.process.wait(timeout=180)  # once the upgrade has ended
        assert env.job(job_id)["upgraded_to"] == new_id
        assert env.job(new_id)["state"] in ("CANCELED", "FAILED")
        rollback = env.job(new_id)["upgraded_to"]  # the rollback job, started before the exit
        assert rollback and env.job(rollback)["rolled_back"] is True
        assert env.job(rollback)["state"] == "RUNNING"
        # the new program never reached its first wait: cancelled, it ended at once, without
        # the grace a program gets to return after its wait
        log = env.run("logs", new_id, check=True).stdout
        assert "The job ended before its program's first wait" in log, log[-2000:]
    env.run("cancel", "-m", web.address, rollback, check=True)
