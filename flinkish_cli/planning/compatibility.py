"""Whether a program fits the state it is about to restore: the saved queries and stateful
operators against the new program's, as Spark planned them. Plain data, no Spark here.

The two sides:

- :class:`SavedQuery`: a query of the savepoint (or of a job's checkpoints): its name, its
  last committed batch, its shape when its identity was generated, and its stateful
  operators as Spark recorded them in its checkpoint (``state/<id>/_metadata``: id, Spark's
  name, partitions).
- :class:`PlannedQuery`: a query of the new program as the state check planned it in a local
  Spark session without running a batch (:mod:`flinkish_cli.planning.state_check`): its
  identity and shape, its stateful operators as Spark planned them (id, Spark's name, what
  the plan says of it), and Spark's own answer for each operator whose saved state it would
  refuse (its error condition and parameters), or why Spark could not tell.

:func:`compare` gives a :class:`Verdict`, with Flink's rules in Spark's terms:

- **State the new program no longer has** is refused, unless ``-n/--allowNonRestoredState``
  (as Flink refuses state without an operator): a query the program does not start, an
  unnamed query whose identity now names another kind of query (its state is skipped and
  the query starts empty), and stateful operators removed from the end of a query (their
  state is left out of the restore, :attr:`Verdict.leave_out`).
- **New state starts empty**, as a new operator does in Flink: a query the savepoint does not
  have.
- **What Spark cannot restore** is refused, and ``-n`` does not change it: Spark numbers a
  query's stateful operators by their order in its plan and checks each against the
  operator its checkpoint recorded under that number, so an operator added to a query
  that has state (or to one that ran without), an operator of another kind at a position,
  and an operator removed before others (which shifts them) cannot be restored. Such a query
  starts empty under a new name (its ``queryName``), with ``-n`` for the old name's state.
- **Key and value schemas** are Spark's business: its own compatibility rules (those it
  applies when a restarted query plans its first batch), asked by the state check; flinkish
  only words Spark's refusal (:func:`readable_schema`). Spark compares the types of the
  fields, in order, not their names: a renamed grouping column, or a ``count`` replaced by
  a ``sum`` of the same type, is accepted by Spark and so passes.

Each problem names the query, the operator (its id, kind and what the plan says of it) and
what differs; :meth:`Verdict.refusal` makes them one message.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from typing import Any

from flinkish_cli.runtime.queries.identity import QueryShape

#: Spark's error conditions when a restored operator's state does not fit.
KEY_SCHEMA = "STATE_STORE_KEY_SCHEMA_NOT_COMPATIBLE"
VALUE_SCHEMA = "STATE_STORE_VALUE_SCHEMA_NOT_COMPATIBLE"

#: What the user can do about each kind of problem (the hint of a refusal).
RENAME = (
    "Keep the query's stateful operators as they were, or give the query a new name "
    "(.queryName('...')) so that it starts with empty state, and pass -n/"
    "--allowNonRestoredState to drop the old name's state."
)
SCHEMA = (
    "Keep the key and state of its stateful operators as they were (Spark compares the "
    "types of their fields, in order), or give the query a new name (.queryName('...')) so "
    "that it starts with empty state, and pass -n/--allowNonRestoredState to drop the old "
    "name's state."
)
#: How -n reads in a hint (Flink's meaning).
DROP = (
    "or pass -n/--allowNonRestoredState to drop its state (Flink's meaning: state the new "
    "program no longer has is skipped)."
)


@dataclass
class Operator:
    """A stateful operator of a query: its id (Spark's order in the query's plan), Spark's
    name for it (``stateStoreSave``, ``dedupe``... None when its metadata could not be read),
    what a user calls it, its state partitions, and what the plan says of it (keys...)."""

    operator_id: int
    spark_name: str | None
    kind: str
    partitions: int | None = None
    description: str = ""

    def label(self) -> str:
        """``operator 0 (aggregation by key)``."""
        about = f"{self.kind} {self.description}".strip() if self.description else self.kind
        return f"operator {self.operator_id} ({about})"


@dataclass
class SavedQuery:
    """A query of the state being restored."""

    name: str
    batch: int  # the last committed batch; -1: none, so nothing of its state is restored
    operators: list[Operator] = field(default_factory=list)
    shape: str | None = None  # QueryShape text, for a generated identity

    @property
    def stateful(self) -> bool:
        return bool(self.operators) and self.batch >= 0


@dataclass
class SparkRefusal:
    """Spark's own refusal of an operator's saved state (``operator_id`` None: of the query's
    plan as a whole): its error condition, parameters and message's first line."""

    operator_id: int | None
    condition: str | None
    parameters: dict[str, str] = field(default_factory=dict)
    message: str = ""


@dataclass
class PlannedQuery:
    """A query of the new program, as the state check planned it."""

    identity: str
    spark_name: str | None = None
    shape: str | None = None  # QueryShape text
    #: False: not planned (a query the saved state does not have), or Spark could not
    #: plan it (``unknown`` says why)
    planned: bool = False
    operators: list[Operator] = field(default_factory=list)
    refusals: list[SparkRefusal] = field(default_factory=list)
    unknown: str | None = None

    @property
    def generated(self) -> bool:
        return self.spark_name is None

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PlannedQuery:
        return cls(
            identity=str(data["identity"]),
            spark_name=data.get("spark_name"),
            shape=data.get("shape"),
            planned=bool(data.get("planned")),
            operators=[Operator(**o) for o in data.get("operators") or []],
            refusals=[SparkRefusal(**r) for r in data.get("refusals") or []],
            unknown=data.get("unknown"),
        )

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Problem:
    """One way the program does not fit the state: the query, what differs, the hint, and
    whether ``-n`` skips that state instead."""

    query: str
    text: str
    hint: str
    skippable: bool = False


@dataclass
class Verdict:
    """What :func:`compare` found."""

    #: what is refused (with -n, the skippable ones are in ``skipped`` instead)
    problems: list[Problem] = field(default_factory=list)
    #: state -n skips, said as notes
    skipped: list[str] = field(default_factory=list)
    #: query -> ids of its operators whose state the restore leaves out (-n)
    leave_out: dict[str, list[int]] = field(default_factory=dict)
    #: queries the saved state does not have: they start with empty state
    fresh: list[str] = field(default_factory=list)
    #: where Spark could not tell without running (the new job's start will)
    unknown: list[str] = field(default_factory=list)
    #: queries Spark checked and found fitting
    checked: list[str] = field(default_factory=list)

    def refusal(self) -> tuple[str, str] | None:
        """The problems as one message and its hint; None when there are none."""
        if not self.problems:
            return None
        first = self.problems[0]
        message = first.text
        if len(self.problems) > 1:
            rest = "; ".join(p.text.rstrip(".") for p in self.problems[1:])
            message += f" Also: {rest}."
        return message, first.hint


def compare(
    saved: list[SavedQuery], planned: list[PlannedQuery], allow_non_restored: bool
) -> Verdict:
    """The new program's queries (``planned``, in its order of start) against ``saved``."""
    verdict = Verdict()
    by_identity = {q.identity: q for q in planned}
    for query in saved:
        new = by_identity.get(query.name)
        if new is None:
            _problem(verdict, allow_non_restored, _removed(query))
            continue
        if _shape_changed(query, new):
            _problem(verdict, allow_non_restored, _reshaped(query, new))
            continue
        if query.batch < 0:
            continue  # it committed no batch: Spark starts it from its first, checking nothing
        if not new.planned:
            if new.unknown:
                verdict.unknown.append(f"query '{query.name}': {new.unknown}")
            continue
        before = len(verdict.problems) + len(verdict.skipped)
        _compare_operators(verdict, query, new, allow_non_restored)
        if before == len(verdict.problems) + len(verdict.skipped):
            verdict.checked.append(query.name)
    names = {q.name for q in saved}
    verdict.fresh = [q.identity for q in planned if q.identity not in names]
    return verdict


def _problem(verdict: Verdict, allow_non_restored: bool, problem: Problem) -> None:
    if problem.skippable and allow_non_restored:
        verdict.skipped.append(problem.text)
    else:
        verdict.problems.append(problem)


def _describe_state(query: SavedQuery) -> str:
    if not query.stateful:
        return "its source offsets"
    kinds = ", ".join(o.label() for o in query.operators)
    return f"its source offsets and the state of {kinds}"


def _removed(query: SavedQuery) -> Problem:
    return Problem(
        query.name,
        f"the saved state has query '{query.name}' ({_describe_state(query)}), which the "
        "new program does not start.",
        f"Start query '{query.name}' as before (the same queryName; an unnamed query in the "
        f"same order), {DROP}",
        skippable=True,
    )


def _shape_changed(query: SavedQuery, new: PlannedQuery) -> bool:
    """A generated identity that now names another kind of query."""
    if not new.generated:
        return False
    before = QueryShape.from_text(query.shape)
    now = QueryShape.from_text(new.shape)
    return before is not None and now is not None and not before.matches(now)


def _reshaped(query: SavedQuery, new: PlannedQuery) -> Problem:
    before = QueryShape.from_text(query.shape)
    now = QueryShape.from_text(new.shape)
    assert before is not None and now is not None
    return Problem(
        query.name,
        f"the new program's unnamed query '{query.name}' ({now.describe()}) is not the "
        f"saved '{query.name}' ({before.describe()}): the program's unnamed queries changed "
        "order or kind.",
        "Unnamed queries are known by their order of start: name them with "
        ".queryName('...') (naming a query 'unnamed-<n>' keeps that state), or pass "
        "-n/--allowNonRestoredState to start it without the saved state.",
        skippable=True,
    )


def _compare_operators(
    verdict: Verdict, query: SavedQuery, new: PlannedQuery, allow_non_restored: bool
) -> None:
    saved_ops = query.operators if query.stateful else []
    planned_ops = new.operators
    where = f"query '{query.name}'"
    for old, now in zip(saved_ops, planned_ops, strict=False):
        if old.spark_name and now.spark_name and old.spark_name != now.spark_name:
            verdict.problems.append(
                Problem(
                    query.name,
                    f"{where}, operator {old.operator_id}: the saved state is of "
                    f"{old.label()}, the new program has {now.label()} there (Spark numbers "
                    "a query's stateful operators by their order, and cannot restore one "
                    "kind's state into another).",
                    RENAME,
                )
            )
            return
    if len(planned_ops) > len(saved_ops):
        added = ", ".join(o.label() for o in planned_ops[len(saved_ops) :])
        had = (
            f"the saved state has {len(saved_ops)} stateful operator"
            f"{'' if len(saved_ops) == 1 else 's'}"
            if saved_ops
            else "the query ran without stateful operators"
        )
        verdict.problems.append(
            Problem(
                query.name,
                f"{where}: the new program adds {added}, and {had}: Spark cannot add "
                "state to a query it restores.",
                RENAME,
            )
        )
        return
    if len(saved_ops) > len(planned_ops):
        gone = saved_ops[len(planned_ops) :]
        _problem(
            verdict,
            allow_non_restored,
            Problem(
                query.name,
                f"{where}: the new program no longer has "
                + ", ".join(o.label() for o in gone)
                + ", whose state is saved.",
                f"Keep the query's last stateful operators, {DROP}",
                skippable=True,
            ),
        )
        if allow_non_restored:
            verdict.leave_out[query.name] = [o.operator_id for o in gone]
    planned_by_id = {o.operator_id: o for o in planned_ops}
    for refusal in new.refusals:
        operator = (
            planned_by_id.get(refusal.operator_id) if refusal.operator_id is not None else None
        )
        verdict.problems.append(
            Problem(query.name, f"{where}{_at(operator)}: {spark_reason(refusal)}", SCHEMA)
        )


def _at(operator: Operator | None) -> str:
    return f", {operator.label()}" if operator is not None else ""


def spark_reason(refusal: SparkRefusal) -> str:
    """Spark's refusal in a user's words: what differs, with both schemas."""
    params = refusal.parameters
    condition = f" [{refusal.condition}]" if refusal.condition else ""
    if refusal.condition == KEY_SCHEMA:
        return (
            f"Spark cannot restore its state with the new key "
            f"{readable_schema(params.get('newKeySchema', '?'))}: the saved key is "
            f"{readable_schema(params.get('storedKeySchema', '?'))}{condition}."
        )
    if refusal.condition == VALUE_SCHEMA:
        return (
            f"Spark cannot restore its state with the new value "
            f"{readable_schema(params.get('newValueSchema', '?'))} (what it keeps per key): "
            f"the saved value is {readable_schema(params.get('storedValueSchema', '?'))}"
            f"{condition}."
        )
    message = refusal.message.rstrip(".") or "no message"
    return f"Spark refuses to restore its state: {message}{condition}."


# -- Spark's StructType.toString, readable --------------------------------------------------
_TYPE_NAMES = {"Long": "bigint", "Integer": "int", "Short": "smallint", "Byte": "tinyint"}


def readable_schema(text: str) -> str:
    """``StructType(StructField(k,StringType,true))`` (Spark's ``toString``, as its errors
    carry schemas) as ``(k: string)``; the text itself when it is not one."""
    try:
        parsed, rest = _parse_type(text.strip())
    except (ValueError, IndexError):
        return text
    if rest.strip():
        return text
    return parsed if not parsed.startswith("struct<") else "(" + parsed[7:-1] + ")"


def _split_args(text: str) -> tuple[list[str], str]:
    """The comma-separated arguments of ``(...)`` at the start of ``text``, and the rest."""
    if not text.startswith("("):
        raise ValueError(text)
    depth, start, args = 0, 1, []
    for index, char in enumerate(text):
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
            if depth == 0:
                if text[start:index].strip():
                    args.append(text[start:index].strip())
                return args, text[index + 1 :]
        elif char == "," and depth == 1:
            args.append(text[start:index].strip())
            start = index + 1
    raise ValueError(text)


_NAME = re.compile(r"^([A-Za-z]+)")


def _parse_type(text: str) -> tuple[str, str]:
    match = _NAME.match(text)
    if not match:
        raise ValueError(text)
    name, rest = match.group(1), text[match.end() :]
    if name == "StructType":
        args, rest = _split_args(rest)
        fields = []
        for arg in args:
            if not arg.startswith("StructField"):
                raise ValueError(arg)
            parts, tail = _split_args(arg[len("StructField") :])
            if tail.strip() or len(parts) < 2:
                raise ValueError(arg)
            field_type, remaining = _parse_type(parts[1])
            if remaining.strip():
                raise ValueError(arg)
            fields.append(f"{parts[0]}: {field_type}")
        return "struct<" + ", ".join(fields) + ">", rest
    if name in ("ArrayType", "MapType"):
        args, rest = _split_args(rest)
        inner = [_parse_type(a)[0] for a in args[: 1 if name == "ArrayType" else 2]]
        return f"{name[:-4].lower()}<{', '.join(inner)}>", rest
    if name == "DecimalType" and rest.startswith("("):
        args, rest = _split_args(rest)
        return f"decimal({','.join(args)})", rest
    if not name.endswith("Type"):
        raise ValueError(text)
    base = name[: -len("Type")]
    if rest.startswith("("):  # StringType(UTF8_LCASE) and the like
        args, rest = _split_args(rest)
        return f"{_TYPE_NAMES.get(base, base.lower())}({','.join(args)})", rest
    return _TYPE_NAMES.get(base, base.lower()), rest


__all__ = [
    "KEY_SCHEMA",
    "VALUE_SCHEMA",
    "Operator",
    "PlannedQuery",
    "Problem",
    "SavedQuery",
    "SparkRefusal",
    "Verdict",
    "compare",
    "readable_schema",
    "spark_reason",
]
