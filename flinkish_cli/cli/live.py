"""The live view of an attached job on a terminal (rich): one row per query."""

from __future__ import annotations

from typing import Any


def job_table(status: Any) -> Any:
    """A rich table of the job's queries and their latest completed batch."""
    from rich.table import Table

    state = status.effective_state().value
    table = Table(
        title=f"{status.name} ({status.job_id}) {state}", title_justify="left", expand=False
    )
    for column in (
        "query",
        "batch",
        "input rows/s",
        "processed rows/s",
        "state rows",
        "watermark",
        "last committed",
    ):
        table.add_column(column, justify="left" if column in ("query", "watermark") else "right")
    latest = status.latest_batches()
    for name, query in status.queries.items():
        last = latest.get(name)
        table.add_row(
            name,
            str(last.batch_id) if last else "-",
            f"{last.input_rows_per_second:.1f}" if last else "-",
            f"{last.processed_rows_per_second:.1f}" if last else "-",
            str(last.state_rows) if last else "-",
            (last.watermark or "-") if last else "-",
            str(query.last_committed_batch) if query.last_committed_batch is not None else "-",
        )
    return table
