"""The live view of an attached job, rendered as a terminal would show it."""

from rich.console import Console

from flinkish_cli.cli.commands.run import format_batch
from flinkish_cli.cli.live import job_table
from flinkish_cli.registry.status import JobState, JobStatus, Progress, QueryStatus


def _status() -> JobStatus:
    status = JobStatus(job_id="f" * 32, name="orders", state=JobState.RUNNING)
    status.pid = 1
    query = QueryStatus(name="orders", checkpoint="/c/orders")
    query.record(
        Progress(
            batch_id=4,
            timestamp="2026-11-21T10:00:00.000Z",
            input_rows=120,
            input_rows_per_second=60.0,
            processed_rows_per_second=240.5,
            state_rows=17,
            watermark="2026-11-21T09:59:30.000Z",
        )
    )
    status.queries["orders"] = query
    status.queries["idle"] = QueryStatus(name="idle", checkpoint="/c/idle")
    return status


def test_live_table_shows_each_query() -> None:
    console = Console(record=True, width=160, color_system=None)
    console.print(job_table(_status()))
    text = console.export_text()
    assert "orders (" + "f" * 32 + ") RUNNING" in text
    row = next(line for line in text.splitlines() if line.strip().startswith("│ orders"))
    for value in ("4", "60.0", "240.5", "17", "2026-11-21T09:59:30.000Z"):
        assert value in row
    assert any(line.strip().startswith("│ idle") for line in text.splitlines())


def test_plain_batch_line_is_stable() -> None:
    progress = _status().queries["orders"].recent[0]
    assert format_batch("orders", progress) == (
        "2026-11-21T10:00:00.000Z query=orders batch=4 inputRows=120 inputRowsPerSecond=60.0 "
        "processedRowsPerSecond=240.5 stateRows=17 watermark=2026-11-21T09:59:30.000Z"
    )
