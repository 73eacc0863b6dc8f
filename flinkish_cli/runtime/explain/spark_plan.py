"""Spark's physical plan as its explain text tells it: the tree (:func:`parse_plan`), and what
each operator's line says (keys, exchanges, watermarks, a stateful operator's ``state info``).
Spark's record of a stateful operator in its checkpoint is :mod:`flinkish_cli.state.metadata`'s.

The text is ``StreamingQuery.explain()``'s, the same from a classic driver (py4j) and from a
Spark Connect server (gRPC): ``== Physical Plan ==`` then one operator a line, its children
below it, indented by three characters a level and marked ``+- `` (the last child) or ``:- ``
(the others); whole-stage code generation prefixes ``*(n) ``. Attribute names carry Spark's
expression ids (``adId#2L``) and, after a watermark, its delay (``-T10000ms``): what a user
reads has them removed (:func:`readable`). No Spark here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from flinkish_cli.registry.graph import BROADCAST, GLOBAL, HASH, RANGE, REBALANCE

_PREFIX = re.compile(r"^((?:   |:  )*)([+:]- )?(.*)$")
_CODEGEN = re.compile(r"^\*\(\d+\) ")
_NAME = re.compile(r"[A-Za-z_][\w$]*")
_STATE_INFO = re.compile(r"opId = (\d+), ver = \d+, numPartitions = (\d+)")
#: Joins of streams that keep no state (a stream with a static table, ...).
JOINS = (
    "BroadcastHashJoin",
    "ShuffledHashJoin",
    "SortMergeJoin",
    "BroadcastNestedLoopJoin",
    "CartesianProduct",
)
_ATTRIBUTE = re.compile(r"#\d+L?(?:-T\d+ms)?")


@dataclass
class PlanNode:
    """One line of Spark's plan tree: its operator's name, its text and its children."""

    name: str
    text: str
    children: list[PlanNode] = field(default_factory=list)

    def preorder(self) -> list[PlanNode]:
        found = [self]
        for child in self.children:
            found += child.preorder()
        return found


def parse_plan(text: str) -> PlanNode | None:
    """The physical plan tree in Spark's explain text (its ``== Physical Plan ==`` part);
    None when there is no plan in it."""
    lines = text.splitlines()
    starts = [i for i, line in enumerate(lines) if line.startswith("== Physical Plan ==")]
    if not starts:
        return None
    lines = lines[starts[0] + 1 :]
    stack: list[tuple[int, PlanNode]] = []
    root: PlanNode | None = None
    for line in lines:
        if not line.strip():
            if root is not None:
                break
            continue
        if line.startswith("== ") and root is not None:
            break
        match = _PREFIX.match(line)
        assert match is not None  # the pattern matches every line
        depth = len(match.group(1)) // 3 + (1 if match.group(2) else 0)
        body = _CODEGEN.sub("", match.group(3)).lstrip("!")
        name = _NAME.match(body)
        node = PlanNode(name.group(0) if name else body.split(" ", 1)[0], body)
        if root is None:
            if depth:
                return None  # not a tree's first line
            root = node
            stack = [(0, node)]
            continue
        while stack and stack[-1][0] >= depth:
            stack.pop()
        if not stack:
            break  # a second tree (Spark's subqueries): not the query's
        stack[-1][1].children.append(node)
        stack.append((depth, node))
    return root


def path_of(description: str) -> str | None:
    """The directory of a file source's description (``FileStreamSource[file:/in]``)."""
    match = re.match(r"FileStreamSource\[(.*)\]$", description)
    if not match:
        return None
    return match.group(1).rstrip("/")


def exchange_of(plan: PlanNode) -> tuple[str, tuple[str, ...], int | None]:
    if plan.name == "BroadcastExchange":
        return BROADCAST, (), None
    text = plan.text
    for word, strategy in (
        ("hashpartitioning(", HASH),
        ("rangepartitioning(", RANGE),
        ("roundrobinpartitioning(", REBALANCE),
    ):
        if word in text:
            inside = balanced(text[text.index(word) + len(word) :])
            parts = split_top(inside)
            partitions = int(parts[-1]) if parts and parts[-1].strip().isdigit() else None
            keys = parts[:-1] if strategy != REBALANCE else []
            return strategy, tuple(readable(k) for k in keys), partitions
    if "SinglePartition" in text:
        return GLOBAL, (), 1
    return HASH, (), None


def balanced(text: str) -> str:
    """``text`` up to the parenthesis closing one already open."""
    depth = 0
    for index, char in enumerate(text):
        if char in "([":
            depth += 1
        elif char in ")]":
            if depth == 0:
                return text[:index]
            depth -= 1
    return text


def split_top(text: str) -> list[str]:
    """``text`` split at its top-level commas."""
    parts, depth, start = [], 0, 0
    for index, char in enumerate(text):
        if char in "([":
            depth += 1
        elif char in ")]":
            depth -= 1
        elif char == "," and depth == 0:
            parts.append(text[start:index].strip())
            start = index + 1
    tail = text[start:].strip()
    return [*parts, tail] if tail else parts


def readable(text: str) -> str:
    """Spark's text without its expression ids (``adId#2L`` → ``adId``, the watermark's
    ``-T10000ms`` suffix too), cut to a readable length."""
    text = _ATTRIBUTE.sub("", text)
    return text if len(text) <= 300 else text[:299] + "…"


def first_list(text: str) -> list[str]:
    """The items of the first ``[...]`` of ``text``."""
    if "[" not in text:
        return []
    return split_top(balanced(text[text.index("[") + 1 :]))


def join_type(text: str) -> str | None:
    for how in ("LeftOuter", "RightOuter", "FullOuter", "LeftSemi", "LeftAnti", "Inner", "Cross"):
        if re.search(rf"(?:^|, ){how}(?:,|$)", text):
            return how
    return None


def join_keys(text: str) -> str:
    """``left keys = right keys`` of a join's text."""
    body = text.split(" ", 1)[1] if " " in text else ""
    parts = split_top(body)
    lists = [p for p in parts[:2] if p.startswith("[")]
    if len(lists) < 2:
        return ""
    left, right = (split_top(balanced(p[1:])) for p in lists)
    return ", ".join(f"{a} = {b}" for a, b in zip(left, right, strict=False))


def state_info(plan: PlanNode) -> tuple[int | None, int | None]:
    """A stateful operator's id and state partitions, from its ``state info [...]``."""
    info = _STATE_INFO.search(plan.text)
    return (int(info.group(1)), int(info.group(2))) if info else (None, None)


def stateful_description(plan: PlanNode) -> str:
    text = plan.text
    if plan.name == "StreamingSymmetricHashJoin":
        described = join_keys(text)
        condition = re.search(r"full = (.*?) \], state info", text)
        if condition and condition.group(1) != "null":
            described += f"; condition {condition.group(1)}"
        return readable(described)
    mode = next(
        (m for m in ("Append", "Update", "Complete") if re.search(rf", {m}(?:,|$)", text)), None
    )
    if plan.name.startswith(("FlatMapGroups", "TransformWithState")):
        function = text.split(" ", 1)[1].split("(", 1)[0] if " " in text else ""
        keys = first_list(text.split(")", 1)[1]) if ")" in text else []
        described = f"{function} by {', '.join(keys)}" if keys else function
    else:
        keys = first_list(text)
        described = f"by {', '.join(keys)}" if keys else ""
        if plan.name.startswith("SessionWindow"):
            column = split_top(text.split("], ", 1)[1])[0] if "], " in text else ""
            described += f"; session window {column.split(':', 1)[0]}" if column else ""
    if mode:
        described += f" ({mode} mode)" if described else f"{mode} mode"
    return readable(described)


def watermark_of(text: str) -> str:
    """``impressionTime, delay 10 seconds`` from ``EventTimeWatermark <id>, t#3: timestamp,
    10 seconds``."""
    parts = split_top(text.split(" ", 1)[1] if " " in text else "")
    if len(parts) >= 3:
        column = parts[1].split(":", 1)[0]
        return readable(f"{column}, delay {parts[2]}")
    return readable(text)


def short_kind(description: str) -> str:
    """A source's or sink's kind from Spark's description: ``RateStreamV2[...]`` →
    ``RateStreamV2``, ``org.apache...ConsoleTable$@1f`` → ``ConsoleTable``."""
    kind = description.split("[", 1)[0].split("@", 1)[0].rstrip("$")
    return kind.rsplit(".", 1)[-1] if kind else ""
