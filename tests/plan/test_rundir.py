"""The private run directory: its properties file readable by its owner only, escaped right."""

import stat
from pathlib import Path

from flinkish_cli.plan.job import PLAN_CONF_KEY, Entry, JobPlan
from flinkish_cli.plan.rundir import (
    make_run_dir,
    parse_properties,
    properties_text,
    replace_property,
    write_private,
)


def _parse_java_properties(text: str) -> dict[str, str]:
    """A reference reader of java.util.Properties' escapes (for the forms we write)."""
    result = {}
    for line in text.splitlines():
        key, value, current, escaped, in_key = [], [], None, False, True
        current = key
        for char in line:
            if escaped:
                current.append({"n": "\n", "r": "\r", "t": "\t"}.get(char, char))
                escaped = False
            elif char == "\\":
                escaped = True
            elif in_key and char == "=":
                in_key, current = False, value
            else:
                current.append(char)
        decoded = "".join(value)
        while "\\u" in decoded:  # not produced for ASCII
            break
        result["".join(key)] = decoded
    return result


def test_values_with_special_characters_survive() -> None:
    values = {
        "spark.a": "x=y:z#!",
        "spark.b": " leading space",
        "spark.c": "back\\slash",
        "spark.d": "new\nline\ttab",
        "spark.flinkish.plan": "eyJqb2JfaWQiOiAiYWJjIn0=",
    }
    assert _parse_java_properties(properties_text(values)) == values


def test_non_ascii_is_unicode_escaped() -> None:
    assert properties_text({"k": "é"}) == "k=\\u00e9\n"


def test_run_dir_and_private_file_modes(tmp_path: Path) -> None:
    run_dir = make_run_dir(tmp_path / "log", "f" * 32)
    assert stat.S_IMODE(run_dir.stat().st_mode) == 0o700
    secret = run_dir / "spark.properties"
    write_private(secret, "spark.hadoop.fs.s3a.secret.key=abc\n")
    assert stat.S_IMODE(secret.stat().st_mode) == 0o600


def test_properties_round_trip_and_the_plan_is_replaced() -> None:
    plan = JobPlan(
        job_id="a" * 32,
        name="job",
        entry=Entry("file", "/x/job.py"),
        checkpoint_root="/tmp/c",
        flink_conf={},
        master="local[2]",
    )
    values = {
        "spark.hadoop.fs.s3a.secret.key": "se=cr:et #1\\ ünï",
        PLAN_CONF_KEY: plan.encode(),
        "spark.app.name": " leading space",
    }
    text = properties_text(values)
    assert parse_properties(text) == values
    plan.attempt = 3
    replaced = parse_properties(replace_property(text, PLAN_CONF_KEY, plan.encode()))
    assert JobPlan.decode(replaced[PLAN_CONF_KEY]).attempt == 3
    assert replaced["spark.hadoop.fs.s3a.secret.key"] == values["spark.hadoop.fs.s3a.secret.key"]
