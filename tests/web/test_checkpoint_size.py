"""Each query's checkpoint size, as flinkish web serves it: the dashboard's document is the
registry's (what ``info <JobID> --output json`` prints), and ``/metrics`` has one sample per
part, labelled with how the part grows; a query not measured yet has none."""

from __future__ import annotations

from flinkish_cli.registry.footprint import Footprint, PartSize
from flinkish_cli.registry.graph_view import job_summary
from flinkish_cli.registry.status import JobStatus, QueryStatus
from flinkish_cli.web import dashboard, metrics

JOB = "ab" * 16


def _status() -> JobStatus:
    measured = Footprint(
        1.5,
        {"sources": PartSize(2, 300), "state": PartSize(9, 4000), "sink_metadata": PartSize(3, 70)},
    )
    return JobStatus(
        job_id=JOB,
        name="orders",
        queries={
            "raw": QueryStatus(name="raw", checkpoint="/cp/raw", footprint=measured),
            "fresh": QueryStatus(name="fresh", checkpoint="/cp/fresh"),
        },
    )


def test_the_dashboards_document_is_the_registrys() -> None:
    status = _status()
    document = dashboard.checkpoint_size(status)
    assert document == job_summary(status)
    raw = document["queries"]["raw"]
    assert raw["checkpoint"] == "/cp/raw" and raw["footprint"]["bytes"] == 4300
    assert [g["part"] for g in raw["footprint"]["growing"]] == ["sources", "sink_metadata"]
    assert document["queries"]["fresh"]["footprint"] is None


def test_metrics_have_one_sample_per_part_labelled_with_how_it_grows() -> None:
    families = {f.name: f for f in metrics.job_metrics([_status()], 10.0)}
    samples = {
        (s.labels["query"], s.labels["part"], s.labels["grows"]): s.value
        for s in families["flinkish_query_checkpoint_bytes"].samples
    }
    assert samples == {
        ("raw", "sources", "age"): 300,
        ("raw", "state", "state"): 4000,
        ("raw", "sink_metadata", "age"): 70,
    }
    files = families["flinkish_query_checkpoint_files"].samples
    assert sorted(s.value for s in files) == [2, 3, 9]
    (measured,) = families["flinkish_query_checkpoint_measured_timestamp"].samples
    assert measured.value == 1500 and measured.labels["query"] == "raw"
