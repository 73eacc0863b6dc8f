"""The state check before a restore, at its seam (no Spark): what it copies of a savepoint
(the state's metadata only), what it asks the planning process, how it refuses, what it
says, and the planning process ended at its timeout."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from flinkish_cli.config import Configuration
from flinkish_cli.errors import SavepointError
from flinkish_cli.planning.compatibility import KEY_SCHEMA
from flinkish_cli.savepoints.create import take_savepoint
from flinkish_cli.savepoints.restore import open_source
from flinkish_cli.storage import LocalStorage
from flinkish_cli.submission import restore_check
from flinkish_cli.submission.submit import RunRequest
from tests.savepoints.checkpoints import fake_checkpoint

JOB = "3f9c12" + "0" * 26
OPERATOR = "v1\n" + json.dumps(
    {"operatorInfo": {"operatorId": 0, "operatorName": "stateStoreSave"}, "stateStoreInfo": []}
)


@pytest.fixture
def savepoint(tmp_path: Path) -> str:
    counts = fake_checkpoint(tmp_path / "job" / "counts", committed=2)
    (counts / "state" / "0" / "_metadata" / "metadata").write_text(OPERATOR)
    raw = tmp_path / "job" / "raw"
    for name in ("offsets/0", "commits/0", "metadata"):
        (raw / name).parent.mkdir(parents=True, exist_ok=True)
        source = counts / name
        (raw / name).write_text(source.read_text())
    storage = LocalStorage(str(tmp_path))
    queries = {"counts": str(counts), "raw": str(raw)}
    return take_savepoint(storage, queries, storage, str(tmp_path / "sp"), JOB, "job", "4.3.0")


def config(**settings: str) -> Any:
    return Configuration.from_flat({"parallelism.default": "2", **settings})


class Planner:
    """The planning process's stand-in: records the request (and the copy it names, before
    the check deletes it), answers ``answer``."""

    def __init__(self, answer: dict[str, Any]) -> None:
        self.answer = answer
        self.request: dict[str, Any] = {}
        self.copied: dict[str, list[str]] = {}

    def __call__(self, request: dict[str, Any], timeout: float) -> dict[str, Any]:
        self.request, self.timeout = request, timeout
        for query in request["queries"]:
            if query["copy"]:
                root = Path(query["copy"])
                found = [str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()]
                self.copied[query["name"]] = sorted(found)
        return self.answer


def planned(name: str, *operators: dict[str, Any]) -> dict[str, Any]:
    return {"identity": name, "spark_name": name, "planned": True, "operators": list(operators)}


AGG = {"operator_id": 0, "spark_name": "stateStoreSave", "kind": "aggregation", "partitions": 2}


def check(savepoint: str, planner: Planner, notices: list[str], **request: Any) -> Any:
    storage = LocalStorage("/")
    saved = restore_check.of_source(open_source(storage, savepoint), storage)
    return restore_check.check_restore(
        RunRequest(script="job.py", args=["--in", "x"], **request),
        config(),
        saved,
        notices.append,
        "The program job.py",
        "Nothing was started.",
        planner,
    )


def test_it_copies_the_state_metadata_only_and_asks_with_the_saved_settings(
    savepoint: str,
) -> None:
    planner = Planner({"queries": [planned("counts", AGG), planned("raw")], "failure": None})
    notices: list[str] = []
    verdict = check(savepoint, planner, notices)
    assert verdict.refusal() is None and verdict.checked == ["counts", "raw"]
    assert planner.copied == {
        "counts": [
            "state/0/0/_metadata/schema",
            "state/0/1/_metadata/schema",
            "state/0/_metadata/metadata",
        ]
    }
    queries = {q["name"]: q for q in planner.request["queries"]}
    assert queries["raw"]["copy"] is None and queries["counts"]["batch"] == 2
    offsets = json.loads(queries["counts"]["offsets"])
    assert offsets["conf"]["spark.sql.shuffle.partitions"] == "2"
    assert planner.request["entry"]["args"] == ["--in", "x"]
    assert planner.request["entry"]["target"] == os.path.abspath("job.py")
    assert planner.timeout == 120.0
    assert not Path(queries["counts"]["copy"]).exists(), "the copy goes with the check"
    assert notices[0].startswith("Checking the program against the state of savepoint ")
    assert "fits the program" in notices[-1]


def test_a_mismatch_is_refused_in_one_message(savepoint: str) -> None:
    refusal = {
        "operator_id": 0,
        "condition": KEY_SCHEMA,
        "parameters": {
            "storedKeySchema": "StructType(StructField(key,StringType,true))",
            "newKeySchema": "StructType(StructField(key,LongType,true))",
        },
        "message": "Provided key schema does not match existing state key schema.",
    }
    answer = {"queries": [{**planned("counts", AGG), "refusals": [refusal]}, planned("raw")]}
    with pytest.raises(SavepointError) as refused:
        check(savepoint, Planner(answer), [])
    message = refused.value.message
    assert message.startswith(f"The program job.py does not fit the state of savepoint {savepoint}")
    assert "query 'counts', operator 0 (aggregation): " in message
    assert "(key: bigint): the saved key is (key: string)" in message
    assert str(refused.value.hint).endswith("Nothing was started.")


def test_n_skips_a_removed_query_and_says_so(savepoint: str) -> None:
    answer = {"queries": [planned("counts", AGG)]}
    with pytest.raises(SavepointError, match="query 'raw'"):
        check(savepoint, Planner(answer), [])
    notices: list[str] = []
    verdict = check(savepoint, Planner(answer), notices, allow_non_restored_state=True)
    assert verdict.refusal() is None
    assert any(n.startswith("Skipping saved state (-n): ") and "'raw'" in n for n in notices)


def test_what_cannot_be_told_is_said_and_the_start_goes_on(savepoint: str) -> None:
    notices: list[str] = []
    answer = {"queries": [], "failure": "The job's program exited with status 3."}
    verdict = check(savepoint, Planner(answer), notices)
    assert verdict.refusal() is None
    assert notices[-1] == (
        "The state check cannot tell without running: The job's program exited with status "
        "3. The new job's start checks it."
    )


def test_the_check_can_be_turned_off(savepoint: str) -> None:
    planner = Planner({})
    storage = LocalStorage("/")
    verdict = restore_check.check_restore(
        RunRequest(script="job.py"),
        config(**{restore_check.ENABLED: "false"}),
        restore_check.of_source(open_source(storage, savepoint), storage),
        lambda _message: None,
        "The program job.py",
        "Nothing was started.",
        planner,
    )
    assert verdict.refusal() is None and planner.request == {}


def test_the_planning_process_ends_at_its_timeout() -> None:
    answer = restore_check.run_planner({"never": "read"}, timeout=0.01)
    assert "took longer than 0 s" in answer["failure"]
    assert restore_check.TIMEOUT in answer["failure"]
