"""A WebHDFS read cut short, as when the file is replaced while it streams (a job's status
file is, every few seconds): read again, and after :data:`SHORT_READS` short reads one clear
error. The NameNode here is a small HTTP server on loopback that cuts its answers short."""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator

import pytest

from flinkish_cli.errors import StorageError
from flinkish_cli.storage.settings import StorageSettings
from flinkish_cli.storage.webhdfs import SHORT_READS, WebHdfsStorage

BODY = b'{"state": "RUNNING", "job_id": "b22eb774584c418aa63973d5846f57f1"}'


class _CutsShort(http.server.BaseHTTPRequestHandler):
    """Answers ``op=OPEN`` with the whole length announced but, for its first ``short``
    requests, only part of the body before it closes the connection."""

    short = 0
    served = 0

    def do_GET(self) -> None:
        type(self).served += 1
        cut = type(self).served <= type(self).short
        self.send_response(200)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Length", str(len(BODY)))
        self.end_headers()
        self.wfile.write(BODY[:7] if cut else BODY)
        self.close_connection = True

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def namenode() -> Iterator[tuple[type[_CutsShort], int]]:
    handler = type("Handler", (_CutsShort,), {"short": 0, "served": 0})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield handler, server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


def _storage(port: int) -> tuple[WebHdfsStorage, str]:
    root = f"hdfs://127.0.0.1:{port}/flinkish"
    settings = StorageSettings(hadoop_conf={"dfs.namenode.http-address": f"127.0.0.1:{port}"})
    return WebHdfsStorage(root, settings), f"{root}/job/_flinkish/status.json"


def test_a_read_cut_short_is_read_again(namenode: tuple[type[_CutsShort], int]) -> None:
    handler, port = namenode
    handler.short = SHORT_READS - 1
    storage, path = _storage(port)
    assert storage.read_bytes(path) == BODY
    assert handler.served == SHORT_READS


def test_reads_cut_short_every_time_end_in_one_clear_error(
    namenode: tuple[type[_CutsShort], int],
) -> None:
    handler, port = namenode
    handler.short = SHORT_READS
    storage, path = _storage(port)
    with pytest.raises(StorageError) as failed:
        storage.read_bytes(path)
    assert handler.served == SHORT_READS
    assert "IncompleteRead" in str(failed.value) and path in str(failed.value)
