"""Failure causes: a few lines of the real message, never a Java stack trace."""

from flinkish_cli.spark.failures import short_cause


class StreamingQueryException(Exception):
    """Stands in for pyspark's exception type of the same name (only the name matters)."""


def test_java_stack_lines_are_dropped() -> None:
    error = StreamingQueryException(
        "[STREAM_FAILED] Query [id = 1] terminated with exception: boom\n"
        "\tat org.apache.spark.Foo.bar(Foo.scala:1)\n"
        "\tat org.apache.spark.Foo.baz(Foo.scala:2)\n"
        "JVM stacktrace:\norg.apache.spark.SparkException: boom"
    )
    cause = short_cause(error)
    assert "boom" in cause
    assert "at org.apache" not in cause
    assert "JVM stacktrace" not in cause


def test_python_udf_error_names_the_python_exception() -> None:
    error = StreamingQueryException(
        "An exception was thrown from the Python worker.\n"
        "Traceback (most recent call last):\n"
        '  File "job.py", line 3, in f\n'
        "ValueError: negative price\n"
    )
    cause = short_cause(error)
    assert "Caused by (Python): ValueError: negative price" in cause


def test_script_error_points_at_the_script_line(tmp_path) -> None:
    script = tmp_path / "job.py"
    script.write_text("def main():\n    raise KeyError('missing column')\nmain()\n")
    try:
        exec(compile(script.read_text(), str(script), "exec"), {})
    except KeyError as error:
        cause = short_cause(error, str(script))
    assert cause.startswith("KeyError: 'missing column'")
    assert f"{script}:2" in cause


def test_python_udf_error_inside_a_spark_message() -> None:
    error = StreamingQueryException(
        "[STREAM_FAILED] Query [id = 1] terminated with exception: [PYTHON_EXCEPTION] An "
        "exception was thrown from the Python worker: Traceback (most recent call last):\n"
        '  File "/jobs/x.py", line 10, in explode_on\n'
        '    raise ValueError(f"negative price: {value}")\n'
        "ValueError: negative price: 0\n"
        "\n"
        "~WriteToMicroBatchDataSourceV1 FileSink[file:/out], Append\n"
    )
    cause = short_cause(error)
    assert "Caused by (Python): ValueError: negative price: 0" in cause
    assert "FileSink" not in cause


def test_foreach_batch_error_keeps_no_traceback_header() -> None:
    error = StreamingQueryException(
        "[STREAM_FAILED] Query [id = 1] terminated with exception: "
        "[FOREACH_BATCH_USER_FUNCTION_ERROR] An error occurred in the user provided function in "
        "foreach batch sink. Reason: An exception was raised by the Python Proxy. Return "
        "Message: Traceback (most recent call last):\n"
        '  File "/jobs/sink.py", line 26, in write\n'
        "RuntimeError: sink unavailable\n"
    )
    cause = short_cause(error)
    assert "Traceback" not in cause
    assert cause.splitlines()[0].endswith("raised by the Python Proxy.")
    assert "Caused by (Python): RuntimeError: sink unavailable" in cause


def test_a_udf_error_raised_again_in_foreach_batch_names_the_udfs_exception() -> None:
    error = StreamingQueryException(
        "[STREAM_FAILED] Query [id = 1] terminated with exception: "
        "[FOREACH_BATCH_USER_FUNCTION_ERROR] An error occurred in the user provided function in "
        "foreach batch sink. Reason: An exception was raised by the Python Proxy. Return "
        "Message: Traceback (most recent call last):\n"
        '  File "/jobs/tags.py", line 40, in write\n'
        "    batch.write.json(out)\n"
        "pyspark.errors.exceptions.captured.PythonException: An exception was thrown from the "
        "Python worker: Traceback (most recent call last):\n"
        '  File "/jobs/tags.py", line 12, in tag\n'
        '    raise RuntimeError("version 3 cannot tag")\n'
        "RuntimeError: version 3 cannot tag\n"
    )
    cause = short_cause(error)
    assert "Caused by (Python): RuntimeError: version 3 cannot tag" in cause
    assert "Traceback" not in cause


def test_a_wrapper_whose_inner_traceback_was_cut_off_is_still_named() -> None:
    error = StreamingQueryException(
        "[STREAM_FAILED] Reason: Return Message: Traceback (most recent call last):\n"
        '  File "/jobs/tags.py", line 40, in write\n'
        "pyspark.errors.exceptions.captured.PythonException: An exception was thrown from the "
        "Python worker. Please see the stack trace below.\n"
    )
    cause = short_cause(error)
    assert cause.splitlines()[-1].startswith("Caused by (Python): pyspark.errors")
