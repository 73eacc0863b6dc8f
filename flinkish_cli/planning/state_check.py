"""``python -m flinkish_cli.planning.state_check``: a new program planned against the state it
is about to restore, without running a batch, in a process of its own (the CLI never starts
a JVM in its own process for it; :mod:`flinkish_cli.submission.restore_check` runs this one).

The request is one JSON object on standard input (never on the command line: it carries the
Spark configuration, secrets included)::

    {"entry": {"kind", "target", "args", "archive_name"}, "path": [<dirs or zips for
     sys.path>], "conf": {<Spark key>: <value>}, "master": "local[*]",
     "class_data_sharing": <map the drivers' archive (env.java.class-data-sharing)>,
     "queries": [{"name", "batch", "copy": <local directory or null>, "offsets": <the
                  offset log's metadata line, JSON>}]}

``queries`` are the saved state's; ``copy`` holds a copy of a stateful query's state
*metadata* (``state/<id>/_metadata``, the schema files: never the state itself). The answer
is one JSON object on standard output: ``{"ok": true, "queries": [...], "failure": null}``,
each query a :class:`~.compatibility.PlannedQuery`, or ``failure`` saying why the program
could not be planned. Anything else the program or Spark prints goes to standard error.

How, on Spark 4.3 (through py4j, in a classic local session):

1. The program runs dry (:func:`.planner.dry_run`): every ``start()`` is recorded, none runs.
2. Each query the saved state has is planned as Spark plans a restarted query's first batch:
   an ``IncrementalExecution`` of the query's DataFrame at batch C + 1 (C: its last committed
   batch), with the saved offset log's settings applied to the session as Spark applies them
   on restart (``OffsetSeqMetadata.setSessionConf``: state format versions, shuffle
   partitions, state store provider) and the copy as its state location. The plan gives the
   query's stateful operators (Spark's ``StateStoreWriter`` nodes: id, name, partitions) and
   its explain text what each one is (keys, mode).
3. Spark's own first-batch rule (``IncrementalExecution.StateSchemaAndOperatorMetadataRule``:
   ``StateSchemaCompatibilityChecker`` for key and value schemas, the operator metadata) is
   applied to each operator against the copy, so that each refusal names its operator; then
   the whole plan is planned as a first batch (Spark's checks of the query as a whole).
   Operators the saved state has beyond the planned ones are first removed from the copy:
   what a restore with ``-n`` leaves out (:attr:`~.compatibility.Verdict.leave_out`).

Nothing runs: no source is read, no sink written, no batch executed; only the copy (the
caller's temporary directory) is written to. Spark cannot tell without running when the
program fails, exits or blocks in the dry run (the caller's timeout), or when a query cannot
be planned this way: the answer says why (``failure``, or a query's ``unknown``).
"""

from __future__ import annotations

import os
import shutil
import sys
from typing import Any

from flinkish_cli.plan.child import serve
from flinkish_cli.planning.compatibility import Operator, PlannedQuery, SparkRefusal
from flinkish_cli.state.model import operator_kind

_PACKAGE = "org.apache.spark.sql.execution.streaming"
_STATE_STORE_WRITER = f"{_PACKAGE}.operators.stateful.StateStoreWriter"


def plan_all(request: dict[str, Any]) -> dict[str, Any]:
    """Carry out one request (see the module's docstring); the answer document."""
    from flinkish_cli.errors import FlinkishError
    from flinkish_cli.plan.job import Entry
    from flinkish_cli.planning.planner import dry_run

    for item in reversed(request.get("path") or []):
        sys.path.insert(0, str(item))
    entry = Entry(**request["entry"])
    saved = {str(q["name"]): q for q in request.get("queries") or []}
    try:
        conf, master = dict(request.get("conf") or {}), str(request["master"])
        sharing = bool(request.get("class_data_sharing"))
        with dry_run(entry, conf, master, sharing) as (spark, controller):
            queries = [
                _plan_query(spark, controller.flavour, identity, writer, saved.get(identity))
                for identity, writer in controller.writers.items()
            ]
    except FlinkishError as error:
        return {"ok": True, "queries": [], "failure": error.message}
    return {"ok": True, "queries": [q.to_dict() for q in queries], "failure": None}


def _plan_query(
    spark: Any, flavour: Any, identity: str, writer: Any, saved: dict[str, Any] | None
) -> PlannedQuery:
    from flinkish_cli.runtime.queries.identity import QueryShape

    name = getattr(writer, "_flinkish_name", None)
    shape = QueryShape(flavour.sink_of(writer), flavour.sources_of(writer))
    query = PlannedQuery(identity, str(name) if name else None, shape.to_text())
    if saved is None or int(saved.get("batch", -1)) < 0:
        return query  # a new query, or one without a committed batch: nothing to check
    try:
        _plan(spark, writer, saved, query)
        query.planned = True
    except Exception as error:
        query.operators, query.refusals = [], []
        query.unknown = f"Spark could not plan it without running: {_first_line(error)}"
    return query


def _plan(spark: Any, writer: Any, saved: dict[str, Any], query: PlannedQuery) -> None:
    """Plan the query against the saved state; fills its operators and Spark's refusals."""
    jvm = spark._jvm
    session = spark._jsparkSession
    metadata_class = _java(jvm, f"{_PACKAGE}.checkpointing.OffsetSeqMetadata")
    metadata = metadata_class.apply(str(saved.get("offsets") or "{}"))
    metadata_class.setSessionConf(metadata, session.sessionState().conf())
    copy = saved.get("copy")
    state = os.path.join(str(copy), "state") if copy else "<unknown>"
    batch = int(saved.get("batch", -1)) + 1
    logical = writer._df._jdf.queryExecution().analyzed()
    mode = str(getattr(writer, "_flinkish_output_mode", None) or "append").lower()

    def planning(first_batch: bool) -> Any:
        execution = _java(jvm, f"{_PACKAGE}.runtime.IncrementalExecution")
        defaults = [getattr(execution, f"$lessinit$greater$default${n}")() for n in range(12, 17)]
        propagator = _java(jvm, f"{_PACKAGE}.runtime.WatermarkPropagator$")
        output = jvm.org.apache.spark.sql.streaming.OutputMode
        return execution(
            session,
            logical,
            {"update": output.Update, "complete": output.Complete}.get(mode, output.Append)(),
            state,
            jvm.java.util.UUID.randomUUID(),
            jvm.java.util.UUID.randomUUID(),
            batch,
            jvm.scala.Option.empty(),
            metadata,
            getattr(propagator, "MODULE$").noop(),
            first_batch,
            *defaults,
        )

    plan = planning(False).executedPlan()
    nodes = _stateful_nodes(spark, plan)
    described = _described(str(plan.toString()))
    for node in nodes:
        info = node.getStateInfo()
        operator_id = int(info.operatorId())
        spark_name = str(node.shortName())
        query.operators.append(
            Operator(
                operator_id,
                spark_name,
                operator_kind(spark_name),
                int(info.numPartitions()),
                described.get(operator_id, ""),
            )
        )
    if not copy or int(saved.get("batch", -1)) < 0:
        return  # no saved state to check against
    saved_ids = _saved_operator_ids(str(state))
    if len(nodes) > len(saved_ids) or any(
        n.shortName() != _saved_name(str(copy), i) for i, n in zip(saved_ids, nodes, strict=False)
    ):
        return  # the structure differs: compare() says how, Spark's check adds nothing
    for extra in saved_ids[len(nodes) :]:  # what -n leaves out of the restore
        shutil.rmtree(os.path.join(str(state), str(extra)), ignore_errors=True)
    check = planning(True)
    rule = check.StateSchemaAndOperatorMetadataRule().rule()
    for node, operator in zip(nodes, query.operators, strict=True):
        try:
            rule.apply(node)
        except Exception as error:
            query.refusals.append(_refusal(operator.operator_id, error))
    if not query.refusals:
        try:
            check.executedPlan()
        except Exception as error:
            query.refusals.append(_refusal(None, error))


def _java(jvm: Any, name: str) -> Any:
    """The JVM class (or Scala object, ``Name$``) called ``name``, through py4j."""
    found = jvm
    for part in name.split("."):
        found = getattr(found, part)
    return found


def _stateful_nodes(spark: Any, plan: Any) -> list[Any]:
    """The plan's StateStoreWriter nodes, in operator id order."""
    loader = spark._jsparkSession.getClass().getClassLoader()
    writer = spark._jvm.java.lang.Class.forName(_STATE_STORE_WRITER, False, loader)
    found: list[Any] = []

    def walk(node: Any) -> None:
        if writer.isInstance(node):
            found.append(node)
        children = node.children()
        for index in range(children.size()):
            walk(children.apply(index))

    walk(plan)
    return sorted(found, key=lambda n: int(n.getStateInfo().operatorId()))


def _described(plan_text: str) -> dict[int, str]:
    """What the explain text says of each stateful operator (keys, mode), by its id."""
    from flinkish_cli.runtime.explain.graph_builder import STATEFUL_OPERATORS
    from flinkish_cli.runtime.explain.spark_plan import parse_plan, state_info, stateful_description

    root = parse_plan("== Physical Plan ==\n" + plan_text)
    described: dict[int, str] = {}
    for node in root.preorder() if root is not None else []:
        if node.name in STATEFUL_OPERATORS:
            operator_id, _ = state_info(node)
            if operator_id is not None:
                described.setdefault(operator_id, stateful_description(node))
    return described


def _saved_operator_ids(state: str) -> list[int]:
    if not os.path.isdir(state):
        return []
    return sorted(int(name) for name in os.listdir(state) if name.isdigit())


def _saved_name(copy: str, operator_id: int) -> str | None:
    """Spark's name of a saved operator, from its metadata in the copy
    (:func:`flinkish_cli.state.metadata.read_metadata`); None without one."""
    from flinkish_cli.state.metadata import read_metadata

    found = read_metadata(copy, operator_id)
    return found.name if found is not None else None


def saved_operator(copy: str, operator_id: int, partitions: int) -> Operator:
    """A saved operator as the copy of its query's state metadata (``<copy>/state/...``)
    tells it: Spark's name and what a user calls it."""
    spark_name = _saved_name(copy, operator_id)
    return Operator(operator_id, spark_name, operator_kind(spark_name), partitions)


#: Where a query's checkpoint keeps what Spark checks a restored operator against: the
#: operator metadata and the state schemas (a path holds one of these as a directory).
METADATA_DIRECTORIES = ("_metadata", "_stateSchema")


def is_state_metadata(relative: str) -> bool:
    """Whether ``relative`` (a path in a query's checkpoint) is state metadata the check
    copies: under ``state/``, in a metadata or schema directory, not a checksum or a file
    being written."""
    parts = relative.split("/")
    name = parts[-1]
    return (
        parts[0] == "state"
        and any(p in METADATA_DIRECTORIES for p in parts[1:-1])
        and not name.startswith(".")
        and not name.endswith((".crc", ".tmp"))
    )


def _refusal(operator_id: int | None, error: BaseException) -> SparkRefusal:
    """Spark's error as its condition, parameters and first line."""
    condition = _ask(error, "getCondition")
    parameters = _ask(error, "getMessageParameters") or {}
    return SparkRefusal(
        operator_id,
        str(condition) if condition else None,
        {str(k): str(v) for k, v in dict(parameters).items()},
        _first_line(error),
    )


def _ask(error: BaseException, method: str) -> Any:
    try:
        return getattr(error, method)()
    except Exception:
        return None


def _first_line(error: BaseException) -> str:
    from flinkish_cli.spark.failures import message_lines

    lines = [line for line in message_lines(str(error)) if line.strip()]
    line = lines[0] if lines else type(error).__name__
    if line.startswith("[") and "] " in line:
        line = line.split("] ", 1)[1]
    return line[:400]


def main() -> None:
    serve(plan_all)


if __name__ == "__main__":
    main()
