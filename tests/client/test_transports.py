"""One client, two transports: every job action prints the same lines, the same errors and
exits with the same status whether it reads the registry in storage or goes through
``flinkish web`` (``-m host:port``), as Flink's CLI goes through its JobManager.

One ``flinkish web`` serves the module's registry on local disk; each job is a
:class:`~tests.fixtures.fake_driver.FakeDriver` (a driver reduced to its control channel), so
no Spark starts. Each row of :data:`TABLE` runs twice, once each way, on jobs of its own, and
the two outcomes must be equal once JobIDs, trigger ids, savepoint names and times are
written the same. Then: the endpoint answers the registry's truth at once (a status changed
behind its back), ``-m`` that cannot be used is one error and exit 1 (nothing listening,
another HTTP server, the ``flinkish web`` of another registry, the token refused), the
configuration's ``rest.address`` is used when its server answers and storage read when not,
and Apache Flink 2.3's own CLI lists the same jobs as flinkish's through the endpoint.
"""

from __future__ import annotations

import contextlib
import http.server
import re
import secrets
import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from flinkish_cli.cli.main import main
from flinkish_cli.cli.options import VERBOSE
from flinkish_cli.registry.history import SavepointHistory, SavepointRecord, SavepointState, Trigger
from flinkish_cli.registry.jobid import new_job_id
from flinkish_cli.registry.status import JobState
from flinkish_cli.registry.store import JobRegistry
from flinkish_cli.savepoints.create import take_savepoint
from flinkish_cli.storage import LocalStorage
from tests.fixtures.fake_driver import FakeDriver
from tests.fixtures.flink_cli import run_flink
from tests.fixtures.flinkish_env import FlinkishEnv
from tests.fixtures.web_server import WebServer, running_web
from tests.savepoints.checkpoints import fake_checkpoint

#: The server's token (web.submit.enable needs one), in the configuration by reference.
TOKEN = "transports-token-0123456789abcdef"


@dataclass
class Outcome:
    code: int
    out: list[str]
    err: list[str]


@dataclass
class World:
    """The module's registry, its ``flinkish web`` and the jobs the rows made."""

    env: FlinkishEnv
    web: WebServer
    registry: JobRegistry
    drivers: list[FakeDriver] = field(default_factory=list)

    def job(self, answering: bool = True) -> str:
        driver = FakeDriver(self.registry, new_job_id(), answer=answering)
        self.drivers.append(driver)
        return driver.job_id

    def ended(self, state: JobState = JobState.FINISHED) -> str:
        driver = FakeDriver(self.registry, new_job_id(), answer=False)
        driver.end(state)
        return driver.job_id

    def settle(self) -> None:
        """No job of a row stays running into the next row (the lists would differ)."""
        for driver in self.drivers:
            driver.close()
            current = self.registry.find(driver.job_id)
            if current is not None and not current.state.is_terminal:
                driver.end(JobState.CANCELED)
        self.drivers.clear()


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    env = FlinkishEnv.under(tmp_path_factory.mktemp("transports"))
    env.logs.mkdir()
    (env.root / "job.py").write_text("print('a new program')\n")
    # it takes programs (an upgrade goes there), for a session cluster that is not there;
    # that needs a token, which the CLI's configuration names as the server's does
    token = env.root / "web-token"
    token.write_text(TOKEN)
    token.chmod(0o600)
    env.write_conf({"flinkish.web.auth-token": f"${{file:{token}}}"})
    takes_programs = ["-D", "web.submit.enable=true", "-D", "flinkish.web.submit.warm-runner=false"]
    takes_programs += ["-D", f"flinkish.web.session-cluster=sc://127.0.0.1:{_free_port()}"]
    with running_web(env, *takes_programs) as web:
        web.token = TOKEN
        yield World(env, web, JobRegistry.open(str(env.checkpoints)))


@pytest.fixture
def cli(
    world: World, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> Iterator[Callable[..., Outcome]]:
    """``flinkish ARGS`` in this process, as the console script runs it."""
    for name, value in world.env.environ().items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("FLINKISH_VERBOSE", raising=False)
    monkeypatch.chdir(world.env.root)

    def run(*args: str) -> Outcome:
        capsys.readouterr()
        VERBOSE["on"] = False
        try:
            main(list(args))
            code = 0
        except SystemExit as exit_:
            code = exit_.code if isinstance(exit_.code, int) else 1
        captured = capsys.readouterr()
        return Outcome(code, captured.out.splitlines(), captured.err.splitlines())

    yield run
    world.settle()


# -- the table ---------------------------------------------------------------------------------
def _history(world: World, job: str) -> None:
    history = SavepointHistory(world.registry)
    for number, state in enumerate((SavepointState.COMPLETED, SavepointState.DISPOSED)):
        history.record(
            SavepointRecord(
                job, Trigger.MANUAL, state, f"{world.env.savepoints}/savepoint-{job[:6]}-{number}",
                time=1_700_000_000.123 + number, size=1000 + number, batches={"counts": 4},
            )
        )  # fmt: skip


def _log(world: World, job: str) -> None:
    (world.env.logs / f"flinkish-{job}.log").write_text("one\ntwo\nthree: ünïcode\n")


def _savepoint(world: World, job: str) -> str:
    """A real savepoint of ``job`` (made without Spark), to dispose of."""
    checkpoint = fake_checkpoint(world.env.root / "cp-src" / job / "q", committed=1)
    storage = LocalStorage(str(world.env.root))
    target = str(world.env.root / "to-dispose")
    return take_savepoint(storage, {"q": str(checkpoint)}, storage, target, job, "j", "4.3.0")


@dataclass(frozen=True)
class Row:
    """A command line (``{job}``: the row's job, ``{other}``: an ended job, ``{sp}``: a
    savepoint of the job, ``{dir}``: a private directory), what its job is, its status."""

    args: str
    #: running, silent (does not answer), ended, unknown, none; shared: one running job for
    #: both ways (a list must see one registry)
    job: str = "running"
    code: int = 0
    prepare: Callable[[World, str], Any] | None = None

    def __str__(self) -> str:
        return self.args


TABLE = [
    Row("list", job="shared"),
    Row("list -r -s", job="shared"),
    Row("list -a", job="shared"),
    Row("list -a --output json", job="shared"),
    Row("cancel {job}"),
    Row("cancel --output json {job}"),
    Row("cancel -s {job}"),
    Row("cancel -s {dir}/cancel-sp {job}"),
    Row("stop {job}"),
    Row("stop -p {dir}/stop-sp {job}"),
    Row("stop -p -d {job}"),
    Row("stop --output json {job}"),
    Row("stop -detached {job}", job="silent"),
    Row("savepoint {job}"),
    Row("savepoint {job} {dir}/named"),
    Row("savepoint -type native {job} relative-dir"),
    Row("savepoint -detached {job}", job="silent"),
    Row("stop -detached -p relative-sp {job}", job="silent"),
    Row("savepoint -detached {job} ftp://host/sp", job="silent", code=1),
    Row("savepoint -detached {job} ftp://host/sp", job="unknown", code=1),
    Row("savepoint --output json {job}"),
    Row("savepoint -d {sp}", prepare=_savepoint),
    Row("savepoint -d {dir}", job="none", code=1),
    Row("checkpoint {job}"),
    Row("checkpoint --output json {job}"),
    Row("info {job}"),
    Row("info {job} --output json"),
    Row("logs {job}", prepare=_log),
    Row("logs -n 1 {job}", prepare=_log),
    Row("savepoint list {job}", prepare=_history),
    Row("savepoint list --output json {job}", prepare=_history),
    Row("savepoint list", job="shared", prepare=_history),
    # refusals: the same message, hint and status
    Row("cancel not-a-jobid", job="none", code=1),
    Row("stop -p 0123", job="none", code=1),
    Row("cancel {job}", job="unknown", code=1),
    Row("stop {job}", job="unknown", code=1),
    Row("savepoint {job}", job="unknown", code=1),
    Row("savepoint -detached {job}", job="unknown", code=1),
    Row("checkpoint {job}", job="unknown", code=1),
    Row("info {job}", job="unknown", code=1),
    Row("logs {job}", job="unknown", code=1),
    Row("savepoint list {job}", job="unknown", code=1),
    Row("cancel {job}", job="ended", code=1),
    Row("stop -detached {job}", job="ended", code=1),
    Row("savepoint {job}", job="ended", code=1),
    Row("checkpoint {job}", job="ended", code=1),
    Row("logs {job}", job="ended", code=1),
    # upgrade's refusals, before the old job is touched: the server carries it out
    Row("upgrade {job} {dir}/job.py", job="unknown", code=1),
    Row("upgrade {job} {dir}/job.py", job="ended", code=1),
    Row("upgrade --output json {job} {dir}/missing.py", code=1),
    Row("upgrade -s {dir}/sp {job} {dir}/job.py", code=1),
    Row("upgrade not-a-jobid {dir}/job.py", job="none", code=1),
]


def _run_row(
    world: World, cli: Callable[..., Outcome], row: Row, m: list[str], shared: str
) -> Outcome:
    jobs = {
        "shared": lambda: shared,
        "running": lambda: world.job(),
        "silent": lambda: world.job(answering=False),
        "ended": lambda: world.ended(),
        "unknown": new_job_id,
        "none": lambda: "",
    }
    job = jobs[row.job]()
    sp = row.prepare(world, job) if row.prepare and not shared else None
    args = row.args.format(job=job, dir=world.env.root, sp=sp).split()
    outcome = cli(args[0], *m, *args[1:])
    return _normal(outcome, job)


def _normal(outcome: Outcome, job: str) -> Outcome:
    """The outcome with what differs between two runs of one row written the same."""

    def same(line: str) -> str:
        if job:
            line = line.replace(job, "<JOB>").replace(f"-{job[:6]}-", "-<JOB6>-")
        line = re.sub(r"savepoint-<JOB6>-[0-9a-f]{12}", "savepoint-<JOB6>-<N>", line)
        line = re.sub(r"\b[0-9a-f]{32}\b", "<ID>", line)
        line = re.sub(r"\d\d\.\d\d\.\d{4} \d\d:\d\d:\d\d", "<TIME>", line)
        line = re.sub(r'"record_id": "[^"]+"', '"record_id": "<R>"', line)
        return re.sub(r'("(start|end)-time"|"created"|"time"|"measured"): \d+', r"\1: <T>", line)

    return Outcome(outcome.code, [same(x) for x in outcome.out], [same(x) for x in outcome.err])


@pytest.mark.parametrize("row", TABLE, ids=str)
def test_the_same_lines_through_the_endpoint_and_from_storage(
    world: World, cli: Callable[..., Outcome], row: Row
) -> None:
    shared = world.job() if row.job == "shared" else ""
    if shared and row.prepare:
        row.prepare(world, shared)
    from_storage = _run_row(world, cli, row, [], shared)
    if not shared:
        world.settle()
    through_web = _run_row(world, cli, row, ["-m", world.web.address], shared)
    assert from_storage.code == row.code, from_storage
    assert through_web == from_storage
    assert from_storage.out or from_storage.err
    assert not any("Traceback" in line for line in from_storage.err)


def test_the_endpoint_answers_the_registrys_truth_not_a_cache(
    world: World, cli: Callable[..., Outcome]
) -> None:
    """A status changed behind the server's back (the file rewritten, the same size) is
    what the endpoint answers at once; a job directory removed is a job gone."""
    job = world.job(answering=False)
    m = ["-m", world.web.address]
    assert any(line.endswith(f"{job} : counts_job (RUNNING)") for line in cli("list", *m).out)
    for state in (JobState.FAILED, JobState.CANCELED, JobState.FINISHED):
        status = world.registry.get(job)
        status.state = state  # one state name as long as the other: the same size
        world.registry.write(status)
        shown = cli("list", "-a", *m).out
        assert any(line.endswith(f"{job} : counts_job ({state.value})") for line in shown)
    import shutil

    shutil.rmtree(world.env.checkpoints / job)
    gone = cli("cancel", job, *m)
    assert gone.code == 1 and f"No job with JobID {job} under local directory" in gone.err[0]


def test_a_waiting_command_withdraws_what_the_job_did_not_start(
    world: World, cli: Callable[..., Outcome], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A savepoint through the endpoint that the job never answers: the command gives up
    at its time-out, withdraws the request (the job will never carry it out) and says so,
    as it does over storage; the request it sent expired then, not a day later."""
    import flinkish_cli.registry.protocol as protocol

    monkeypatch.setattr(protocol, "SAVEPOINT_TIMEOUT", 1.0)
    job = world.job(answering=False)
    started = time.time()
    result = cli("savepoint", job, "-m", world.web.address)
    assert result.code == 1
    assert result.err[0] == (
        f"ERROR: Job {job} did not answer the savepoint request within 1 s; the request was "
        "withdrawn."
    )
    control = world.env.checkpoints / job / "_flinkish" / "control"
    assert not control.exists() or not list(control.iterdir())
    assert time.time() - started < 10


# -- -m that cannot be used, and the configuration's endpoint ------------------------------------
def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@contextlib.contextmanager
def _another_http_server() -> Iterator[str]:
    """A plain HTTP server of the standard library (another program's REST endpoint)."""

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            return

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Quiet)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_an_endpoint_that_cannot_serve_is_one_error_never_storage(
    world: World, cli: Callable[..., Outcome], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    job = world.job()
    closed = f"127.0.0.1:{_free_port()}"
    (tmp_path / "other").mkdir()
    other = FlinkishEnv.under(tmp_path / "other")
    monkeypatch.setenv("WEB_TOKEN", secrets.token_hex(16))
    token = ["-D", "flinkish.web.auth-token=${env:WEB_TOKEN}"]
    tokenless = tmp_path / "conf-without-token"  # the module's names the world's token
    tokenless.mkdir()
    lines = (world.env.conf_dir / "flink-conf.yaml").read_text().splitlines()
    kept = [line for line in lines if not line.startswith("flinkish.web.auth-token")]
    (tokenless / "flink-conf.yaml").write_text("\n".join(kept) + "\n")
    monkeypatch.setenv("FLINK_CONF_DIR", str(tokenless))
    with (
        _another_http_server() as foreign,
        running_web(other) as other_web,
        running_web(world.env, *token, environ={"WEB_TOKEN": "right"}) as guarded,
    ):
        refusals = {
            closed: ([], f"ERROR: Nothing answers at {closed} (Connection refused)."),
            foreign: (
                [],
                f"ERROR: {foreign} answers HTTP 404 to /flinkish/cluster: it is not flinkish "
                "web's REST endpoint.",
            ),
            other_web.address: (
                [],
                f"ERROR: flinkish web at {other_web.address} serves the registry "
                f"file://{other.checkpoints}, not this configuration's "
                f"file://{world.env.checkpoints} (execution.checkpointing.dir).",
            ),
            guarded.address: ([], f"ERROR: flinkish web at {guarded.address} needs its token."),
            f"{guarded.address} ": (
                token,
                f"ERROR: flinkish web at {guarded.address} refuses this configuration's token.",
            ),
        }
        for address, (extra, message) in refusals.items():
            m = ["-m", address.strip(), *extra]
            program = str(world.env.root / "job.py")  # its arguments would follow it: -m first
            for command in (["list", *m], ["cancel", *m, job], ["savepoint", *m, job],
                            ["upgrade", *m, job, program]):  # fmt: skip
                result = cli(*command)
                assert result.code == 1, (address, result)
                assert result.err[0] == message, (address, result)
                assert len(result.err) == 2 and not result.out, result  # the error, its hint
        assert world.registry.get(job).state is JobState.RUNNING
        assert monkeypatch  # the right token passes
        monkeypatch.setenv("WEB_TOKEN", "right")
        through = cli("list", "-m", guarded.address, *token)
        assert through.code == 0 and any(job in line for line in through.out), through


def test_an_upgrade_never_falls_back_from_an_endpoint_that_takes_no_programs(
    world: World, cli: Callable[..., Outcome]
) -> None:
    """``upgrade -m`` to a flinkish web of this registry without ``web.submit.enable``: the
    server cannot carry it out, and the CLI says so instead of upgrading from storage."""
    job = world.job()
    with running_web(world.env) as plain:
        result = cli("upgrade", "-m", plain.address, job, str(world.env.root / "job.py"))
    assert result.code == 1 and not result.out, result
    assert result.err == [
        f"ERROR: flinkish web at {plain.address} takes no programs (web.submit.enable is "
        "false there), so it cannot carry out 'upgrade'.",
        "Set web.submit.enable: true for that flinkish web, or give -m the session cluster's "
        "Connect server (-m sc://host:port) to upgrade from this machine.",
    ]
    assert world.registry.get(job).state is JobState.RUNNING


def test_hostile_upgrade_requests_are_refused_before_anything_starts(
    world: World, tmp_path: Path
) -> None:
    """The upgrade route, asked as no flinkish CLI asks: a body that is not JSON, an upload
    that does not exist, a bad JobID, and a configuration of another registry (an upgrade
    must not act on a registry this server does not serve). Each is refused with Flink's
    errors and the job client's own error; the job runs on, untouched."""
    import base64
    import io
    import zipfile

    job = world.job()
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("job.py", "print('new')\n")
    upload = {"name": "job.py", "archive": base64.b64encode(buffer.getvalue()).decode()}
    uploaded = world.web.request("POST", "/flinkish/jars/upload", body=upload).json()["filename"]
    ours = {"execution.checkpointing.dir": str(world.env.checkpoints)}
    theirs = {"execution.checkpointing.dir": str(tmp_path / "another-registry")}

    def asked(config: dict[str, str], job_id: str = job) -> dict[str, Any]:
        run = {"entryClass": "job.py", "flinkConfiguration": config}
        return {"jobId": job_id, "upgradeMode": "savepoint", "run": run}

    refusals = [
        (uploaded, None, b"{not json", 400, "Request did not match expected format"),
        ("0" * 32, asked(ours), None, 409, "There is no upload"),
        (uploaded, asked(ours, "../../etc"), None, 409, "is not a valid JobID"),
        (uploaded, {**asked(ours), "upgradeMode": "hot"}, None, 400, "upgradeMode must be"),
        (uploaded, asked(theirs), None, 409, "not the upgrade's file://"),
    ]
    for upload_id, body, raw, status, words in refusals:
        path = f"/flinkish/jars/{upload_id}/upgrade"
        reply = world.web.request("POST", path, body=body, raw=raw)
        assert reply.status == status, (words, reply.status, reply.body[:300])
        assert words in reply.json()["errors"][0], reply.json()
    assert world.registry.get(job).state is JobState.RUNNING
    assert not world.registry.get(job).upgraded_to


def test_the_configurations_endpoint_when_it_answers_and_storage_when_not(
    world: World, cli: Callable[..., Outcome]
) -> None:
    job = world.job()
    host, port = world.web.address.rsplit(":", 1)
    used = cli("list", "-v", "-D", f"rest.address={host}", "-D", f"rest.port={port}")
    assert used.code == 0 and any(job in line for line in used.out)
    assert f"INFO: Using flinkish web at {world.web.address} (rest.address, rest.port)." in (
        used.err
    )
    closed = _free_port()
    read = cli("savepoint", job, "-v", "-D", f"rest.address={host}", "-D", f"rest.port={closed}")
    assert read.code == 0 and read.out[-2].startswith("Savepoint completed. Path: ")
    assert (
        f"INFO: Reading the registry in storage (local directory {world.env.checkpoints}): "
        f"Nothing answers at {host}:{closed} (Connection refused)."
    ) in read.err
    plain = cli("list", "-v")
    assert "INFO: Reading the registry in storage (local directory " in plain.err[-1]
    assert plain.err[-1].endswith("no REST endpoint is configured (rest.address).")


def test_flinks_cli_and_flinkishs_list_the_same_jobs_through_the_endpoint(
    world: World, cli: Callable[..., Outcome], flink: Any
) -> None:
    world.job()
    world.ended(JobState.CANCELED)
    m = ("-m", world.web.address)
    headers = {"FLINK_REST_CLIENT_HEADERS": f"Authorization:Bearer {TOKEN}"}
    theirs = run_flink(flink, "list", "-a", *m, environ=headers)
    assert theirs.returncode == 0, theirs.stdout + theirs.stderr
    ours = cli("list", "-a", *m)

    listed = re.compile(r"^\d\d\.\d\d\.\d{4} .* : [0-9a-f]{32} : ")

    def jobs(lines: list[str]) -> list[str]:
        return [line for line in lines if listed.match(line)]

    assert ours.code == 0
    assert jobs(theirs.stdout.splitlines()) == jobs(ours.out)
    assert len(jobs(ours.out)) >= 2
    headers = [line for line in ours.out if line.startswith("---") and "Jobs" in line]
    assert [line for line in theirs.stdout.splitlines() if line in headers] == headers


def test_logs_follow_through_the_endpoint_until_the_job_ends(world: World) -> None:
    """``logs -f`` streams the log from the server's machine as it grows, and ends when the
    job ends, as it does reading the file itself."""
    job = world.job(answering=False)
    log = world.env.logs / f"flinkish-{job}.log"
    log.write_text("first\n")
    follower = world.env.popen("logs", "-f", "-m", world.web.address, job)
    try:
        assert follower.stdout is not None
        assert follower.stdout.readline() == "first\n"
        with log.open("a") as more:
            more.write("second: ünï\n")
        assert follower.stdout.readline() == "second: ünï\n"
        world.settle()  # the job ends
        out, err = follower.communicate(timeout=60)
    finally:
        if follower.poll() is None:
            follower.kill()
    assert follower.returncode == 0 and out == "" and err == "", (out, err)


def test_a_damaged_status_says_the_same_both_ways(
    world: World, cli: Callable[..., Outcome]
) -> None:
    """A job whose status file is damaged: listed UNKNOWN with the same warning, refused
    with the same message, whichever way the command went."""
    import shutil

    damaged = new_job_id()
    status = world.env.checkpoints / damaged / "_flinkish" / "status.json"
    status.parent.mkdir(parents=True)
    status.write_text("{ damaged")
    try:
        for args in (["list", "-a"], ["list", "-a", "--output", "json"], ["cancel", damaged]):
            from_storage = _normal(cli(*args), damaged)
            through_web = _normal(cli(args[0], "-m", world.web.address, *args[1:]), damaged)
            assert through_web == from_storage
            assert any("unreadable" in line for line in from_storage.out + from_storage.err)
    finally:
        shutil.rmtree(world.env.checkpoints / damaged)
