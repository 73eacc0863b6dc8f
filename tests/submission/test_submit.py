"""Checks ``run`` makes before anything is written or started."""

from __future__ import annotations

import socket

import pytest

from flinkish_cli.errors import JobError
from flinkish_cli.submission.submit import check_session_cluster


def test_a_session_cluster_that_answers_passes() -> None:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        check_session_cluster(f"sc://127.0.0.1:{server.getsockname()[1]}")  # no error
        server.settimeout(10)
        connection, _ = server.accept()  # the check really connected to this server
        connection.close()


def test_no_session_cluster_is_one_clear_error() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # bound, not listening: refused
        with pytest.raises(JobError, match=f"No session cluster answers at sc://127.0.0.1:{port}"):
            check_session_cluster(f"sc://127.0.0.1:{port}")
