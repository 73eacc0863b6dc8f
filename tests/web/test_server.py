"""Where ``flinkish web`` listens, with Flink's port keys: ``rest.bind-port`` falls back to
``rest.port``, and both take a list or a range, of which the first free port is bound. A
Flink user's ``flink-conf.yaml`` brings the server up where their tools already point, and
Apache Flink's own CLI reaches it there."""

from __future__ import annotations

import contextlib
import re
import socket
from collections.abc import Iterator

import pytest

from flinkish_cli.registry.store import JobRegistry
from tests.fixtures.fake_driver import FakeDriver
from tests.fixtures.flink_cli import run_flink
from tests.fixtures.flinkish_env import FlinkishEnv
from tests.fixtures.web_server import running_web

JOB = "7b" * 16


@pytest.fixture
def env(tmp_path) -> FlinkishEnv:
    return FlinkishEnv.under(tmp_path, conf=False)  # each test writes its own ports


@contextlib.contextmanager
def _held_ports(count: int) -> Iterator[list[int]]:
    """``count`` consecutive free ports, the first ``count - 1`` of them held (busy)."""
    for _attempt in range(50):
        probe = socket.socket()
        probe.bind(("127.0.0.1", 0))
        first = probe.getsockname()[1]
        probe.close()
        held: list[socket.socket] = []
        try:
            for port in range(first, first + count):
                sock = socket.socket()
                sock.bind(("127.0.0.1", port))
                held.append(sock)
        except OSError:
            for sock in held:
                sock.close()
            continue
        held.pop().close()  # the last one is free
        for sock in held:
            sock.listen(1)
        try:
            yield list(range(first, first + count))
        finally:
            for sock in held:
                sock.close()
        return
    raise AssertionError("no run of free ports found")


def test_rest_port_alone_brings_the_server_up_there_and_flinks_cli_reaches_it(
    env: FlinkishEnv, flink
) -> None:
    driver = FakeDriver(JobRegistry.open(str(env.checkpoints)), JOB)
    try:
        with _held_ports(1) as [port]:
            env.write_conf({"rest.port": port})
            with running_web(env, bind_port=None) as web:
                assert web.address == f"127.0.0.1:{port}"
                listed = run_flink(flink, "list", "-m", f"127.0.0.1:{port}")
        assert listed.returncode == 0, listed.stderr
        assert re.search(rf" : {JOB} : counts_job \(RUNNING\)$", listed.stdout, re.M)
    finally:
        driver.close()


@pytest.mark.parametrize("form", ["{0},{1},{2}", "{0}-{2}", "{0}, {1}-{2}"])
def test_a_list_or_a_range_binds_the_first_free_port(env: FlinkishEnv, form: str) -> None:
    with _held_ports(3) as ports:
        env.write_conf({"rest.bind-port": form.format(*ports), "rest.port": ports[0]})
        with running_web(env, bind_port=None) as web:
            assert web.address == f"127.0.0.1:{ports[2]}"
            assert web.get("/config").status == 200


def test_rest_bind_port_wins_over_rest_port(env: FlinkishEnv) -> None:
    with _held_ports(2) as ports:
        env.write_conf({"rest.port": ports[0], "rest.bind-port": ports[1]})
        with running_web(env, bind_port=None) as web:
            assert web.address == f"127.0.0.1:{ports[1]}"


def test_ports_all_busy_or_malformed_are_one_line_and_exit_1(env: FlinkishEnv) -> None:
    with _held_ports(3) as ports:
        env.write_conf({"rest.bind-port": f"{ports[0]}-{ports[1]}"})
        busy = env.run("web", check=False)
    assert busy.returncode == 1 and "Traceback" not in busy.stderr
    assert f"cannot listen on 127.0.0.1 port {ports[0]}, {ports[1]}" in busy.stderr
    for value, problem in [
        ("80a", "not a port"),
        ("9000-8000", "ends below its start"),
        ("70000", "above the highest port"),
    ]:
        env.write_conf({"rest.bind-port": value})
        refused = env.run("web", check=False)
        assert refused.returncode == 1 and "rest.bind-port" in refused.stderr, refused.stderr
        assert problem in refused.stderr and "Traceback" not in refused.stderr
