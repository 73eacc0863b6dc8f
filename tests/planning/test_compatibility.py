"""The comparison of a program with the state it restores, at its seam (no Spark): Flink's
rules for state the program no longer has (-n), what Spark cannot restore, and Spark's own
refusals in a user's words."""

from __future__ import annotations

from flinkish_cli.planning.compatibility import (
    KEY_SCHEMA,
    VALUE_SCHEMA,
    Operator,
    PlannedQuery,
    SavedQuery,
    SparkRefusal,
    compare,
    readable_schema,
)

AGG = Operator(0, "stateStoreSave", "aggregation", 2, "by key (Update mode)")
DEDUP = Operator(1, "dedupe", "deduplication", 2, "by id")


def saved(name: str = "counts", *operators: Operator, batch: int = 4, shape: str | None = None):
    return SavedQuery(name, batch, list(operators), shape)


def planned(name: str = "counts", *operators: Operator, **kwargs) -> PlannedQuery:
    spark_name = kwargs.pop("spark_name", name)
    return PlannedQuery(name, spark_name, planned=True, operators=list(operators), **kwargs)


def test_the_same_queries_and_operators_fit_and_a_new_query_starts_empty() -> None:
    verdict = compare(
        [saved("counts", AGG), saved("raw")],
        [planned("counts", AGG), planned("raw"), PlannedQuery("alerts", "alerts")],
        allow_non_restored=False,
    )
    assert verdict.refusal() is None
    assert verdict.checked == ["counts", "raw"] and verdict.fresh == ["alerts"]


def test_a_removed_query_is_refused_and_skipped_with_n() -> None:
    state = [saved("counts", AGG), saved("raw")]
    program = [planned("counts", AGG)]
    refusal = compare(state, program, allow_non_restored=False).refusal()
    assert refusal is not None
    message, hint = refusal
    assert "query 'raw' (its source offsets)" in message and "does not start" in message
    assert "Start query 'raw' as before" in hint and "-n/--allowNonRestoredState" in hint
    allowed = compare(state, program, allow_non_restored=True)
    assert allowed.refusal() is None and len(allowed.skipped) == 1
    assert "'raw'" in allowed.skipped[0] and allowed.leave_out == {}


def test_removed_trailing_operators_are_left_out_with_n_only() -> None:
    state = [saved("counts", AGG, DEDUP)]
    program = [planned("counts", AGG)]
    message, _ = compare(state, program, allow_non_restored=False).refusal() or ("", "")
    assert "no longer has operator 1 (deduplication by id)" in message
    allowed = compare(state, program, allow_non_restored=True)
    assert allowed.refusal() is None and allowed.leave_out == {"counts": [1]}


def test_what_spark_cannot_restore_is_refused_even_with_n() -> None:
    other = Operator(0, "dedupe", "deduplication", 2, "by key")
    cases = {
        "another kind at 0": ([saved("counts", AGG)], [planned("counts", other)]),
        "an operator added": (
            [saved("counts", AGG)],
            [planned("counts", AGG, Operator(1, "dedupe", "deduplication", 2))],
        ),
        "state added to a stateless query": ([saved("raw")], [planned("raw", AGG)]),
        "the first of two removed": ([saved("counts", AGG, DEDUP)], [planned("counts", other)]),
    }
    for case, (state, program) in cases.items():
        refusal = compare(state, program, allow_non_restored=True).refusal()
        assert refusal is not None, case
        assert "new name" in refusal[1], case
    message = compare(*cases["an operator added"], allow_non_restored=True).refusal()[0]
    assert "adds operator 1 (deduplication)" in message and "cannot add state" in message
    message = compare(*cases["another kind at 0"], allow_non_restored=True).refusal()[0]
    assert "operator 0 (aggregation by key (Update mode))" in message
    assert "operator 0 (deduplication by key)" in message


def test_a_query_without_a_committed_batch_has_nothing_to_check() -> None:
    verdict = compare([saved("counts", batch=-1)], [planned("counts", AGG)], False)
    assert verdict.refusal() is None


def test_spark_refusals_name_the_operator_and_both_schemas() -> None:
    key = SparkRefusal(
        0,
        KEY_SCHEMA,
        {
            "storedKeySchema": "StructType(StructField(key,StringType,true))",
            "newKeySchema": "StructType(StructField(key,LongType,true))",
        },
        "Provided key schema does not match existing state key schema.",
    )
    value = SparkRefusal(
        0,
        VALUE_SCHEMA,
        {
            "storedValueSchema": "StructType(StructField(count,LongType,true))",
            "newValueSchema": "StructType(StructField(count,LongType,true),"
            "StructField(sum,DecimalType(20,2),true))",
        },
    )
    other = SparkRefusal(None, "SOMETHING_ELSE", {}, "Spark says no.")
    for refusal, expected in (
        (key, "new key (key: bigint): the saved key is (key: string)"),
        (value, "new value (count: bigint, sum: decimal(20,2))"),
        (other, "Spark refuses to restore its state: Spark says no [SOMETHING_ELSE]"),
    ):
        program = [planned("counts", AGG, refusals=[refusal])]
        message, hint = compare([saved("counts", AGG)], program, True).refusal() or ("", "")
        assert message.startswith("query 'counts'"), message
        assert expected in message, message
        assert "types of their fields" in hint
    message = compare([saved("counts", AGG)], [planned("counts", AGG, refusals=[key])], True)
    assert (
        "query 'counts', operator 0 (aggregation by key (Update mode)): "
        in (message.refusal() or ("",))[0]
    )


def test_an_unnamed_query_of_another_kind_is_refused_or_starts_fresh_with_n() -> None:
    state = [saved("unnamed-1", shape="sink=console;sources=rate")]
    program = [planned("unnamed-1", spark_name=None, shape="sink=json;sources=rate")]
    refusal = compare(state, program, False).refusal()
    assert refusal is not None and "changed order or kind" in refusal[0]
    assert "sink json, sources rate" in refusal[0] and "sink console" in refusal[0]
    assert compare(state, program, True).refusal() is None
    named = [planned("unnamed-1", spark_name="unnamed-1", shape="sink=json;sources=rate")]
    assert compare(state, named, False).refusal() is None  # pinned by name: its state


def test_what_spark_could_not_tell_is_said_and_not_refused() -> None:
    program = [PlannedQuery("counts", "counts", unknown="Spark could not plan it: boom")]
    verdict = compare([saved("counts", AGG)], program, False)
    assert verdict.refusal() is None
    assert verdict.unknown == ["query 'counts': Spark could not plan it: boom"]


def test_several_problems_are_one_message() -> None:
    state = [saved("counts", AGG), saved("raw"), saved("audit")]
    message, _ = compare(state, [planned("counts", AGG)], False).refusal() or ("", "")
    assert message.count("does not start") == 2 and " Also: " in message


def test_readable_schemas() -> None:
    cases = {
        "StructType(StructField(k,StringType,true))": "(k: string)",
        "StructType(StructField(a,IntegerType,false),StructField(b,ArrayType(LongType,true),"
        "true))": "(a: int, b: array<bigint>)",
        "StructType(StructField(w,StructType(StructField(start,TimestampType,true),"
        "StructField(end,TimestampType,true)),true))": "(w: struct<start: timestamp, "
        "end: timestamp>)",
        "StructType(StructField(m,MapType(StringType,DoubleType,true),true))": (
            "(m: map<string, double>)"
        ),
        "not a schema": "not a schema",
        "StructType(StructField(x,": "StructType(StructField(x,",
    }
    for text, expected in cases.items():
        assert readable_schema(text) == expected, text


def test_the_planned_queries_travel_as_json() -> None:
    query = planned(
        "counts", AGG, refusals=[SparkRefusal(0, KEY_SCHEMA, {"a": "b"}, "m")], shape="s"
    )
    assert PlannedQuery.from_dict(query.to_dict()) == query
