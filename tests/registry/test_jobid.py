"""JobIDs: generated well-formed, and validated before they become paths."""

import pytest

from flinkish_cli.errors import JobError
from flinkish_cli.registry.jobid import is_job_id, new_job_id, parse_job_id


def test_new_job_ids_are_32_hex_and_unique() -> None:
    ids = {new_job_id() for _ in range(1000)}
    assert len(ids) == 1000
    assert all(len(i) == 32 and int(i, 16) >= 0 and i == i.lower() for i in ids)


def test_parse_accepts_upper_case_and_whitespace() -> None:
    job_id = new_job_id()
    assert parse_job_id(f"  {job_id.upper()} ") == job_id


@pytest.mark.parametrize(
    "bad",
    ["", "abc", "../../etc/passwd", "0" * 31, "0" * 33, "g" * 32, "0" * 30 + "/x", "a" * 200],
)
def test_parse_rejects_malformed_ids_with_a_clear_message(bad: str) -> None:
    with pytest.raises(JobError) as info:
        parse_job_id(bad)
    assert "is not a valid JobID" in info.value.message
    assert "32 hexadecimal" in (info.value.hint or "")
    assert not is_job_id(bad)
