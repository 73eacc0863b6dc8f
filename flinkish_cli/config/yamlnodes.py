"""A bounded YAML reader for ``config.yaml``: nodes from PyYAML's event stream, built by us.

PyYAML's composer recurses once per nesting level (deep nesting ends in a RecursionError, or
a crash in the C extension), and a walk over its nodes expands every alias, so a few lines of
nested aliases ("billion laughs") would expand to billions of values. This composer works from
the parser's events (libyaml's parser when available: it keeps no Python stack) and refuses,
before anything is expanded:

- nesting deeper than :data:`MAX_DEPTH` (aliases count at the depth they expand to);
- more than :data:`MAX_VALUES` values once aliases are expanded (each node knows its
  expanded size, so a bomb is counted, not expanded);
- an alias to a node that contains it (a recursive alias), an undefined alias, and a second
  YAML document in the file.

Problems raise :class:`YamlLimit` with the line (1-based) they were found on. PyYAML is
imported by :func:`compose`, when a ``config.yaml`` is read: a legacy ``flink-conf.yaml``
needs none of it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = [
    "MAX_DEPTH",
    "MAX_VALUES",
    "Mapping",
    "Node",
    "Scalar",
    "Sequence",
    "YamlLimit",
    "compose",
]

#: Deepest nesting accepted (Flink's configuration nests a handful of levels).
MAX_DEPTH = 64
#: Most values (scalars, lists and maps) a file may hold once its aliases are expanded.
MAX_VALUES = 100_000


class YamlLimit(Exception):
    """A YAML document flinkish refuses to read (see the module docstring)."""

    def __init__(self, line: int, problem: str, hint: str) -> None:
        super().__init__(problem)
        self.line = line
        self.problem = problem
        self.hint = hint


@dataclass(eq=False)
class Node:
    """A YAML node: its 1-based line, its expanded size and height (aliases included)."""

    line: int
    size: int = 1
    height: int = 1


@dataclass(eq=False)
class Scalar(Node):
    value: str = ""
    plain: bool = True  # unquoted, so that '~' or an empty value means null


@dataclass(eq=False)
class Sequence(Node):
    items: list[Node] = field(default_factory=list)


@dataclass(eq=False)
class Mapping(Node):
    pairs: list[tuple[Node, Node]] = field(default_factory=list)
    _key: Node | None = None  # a key waiting for its value while composing


def _add(parent: Node, child: Node) -> None:
    if isinstance(parent, Sequence):
        parent.items.append(child)
    else:
        assert isinstance(parent, Mapping)
        if parent._key is None:
            parent._key = child
        else:
            parent.pairs.append((parent._key, child))
            parent._key = None


def _too_deep(line: int) -> YamlLimit:
    return YamlLimit(
        line,
        f"nests values more than {MAX_DEPTH} levels deep",
        "Flatten the structure: write keys with dots, e.g. 'state.backend.type: rocksdb'.",
    )


def compose(text: str) -> Node | None:
    """The root node of ``text`` (None when empty); raises YamlLimit or yaml.YAMLError."""
    import yaml

    loader = getattr(yaml, "CSafeLoader", None) or yaml.SafeLoader
    anchors: dict[str, Node] = {}
    open_ids: set[int] = set()  # anchored collections being composed
    stack: list[Node] = []
    root: Node | None = None
    documents = 0
    total = 0  # values so far, aliases expanded

    def count(line: int, values: int) -> None:
        nonlocal total
        total += values
        if total > MAX_VALUES:
            raise YamlLimit(
                line,
                f"holds more than {MAX_VALUES:,} values once its YAML aliases are expanded",
                "A configuration file holds a few hundred keys; remove the repeated aliases "
                "(*name) or split the data out of the configuration.",
            )

    def place(node: Node, line: int) -> None:
        nonlocal root
        if len(stack) + node.height > MAX_DEPTH:
            raise _too_deep(line)
        if stack:
            _add(stack[-1], node)
        else:
            root = node

    for event in yaml.parse(text, Loader=loader):
        line = (event.start_mark.line + 1) if event.start_mark is not None else 1
        if isinstance(event, yaml.DocumentStartEvent):
            documents += 1
            if documents > 1:
                raise YamlLimit(
                    line,
                    "holds more than one YAML document ('---')",
                    "Keep one document: remove the '---' line and merge the settings.",
                )
        elif isinstance(event, yaml.ScalarEvent):
            node: Node = Scalar(line, value=event.value, plain=event.style in (None, ""))
            count(line, 1)
            place(node, line)
            if event.anchor:
                anchors[event.anchor] = node
        elif isinstance(event, yaml.AliasEvent):
            name = event.anchor
            target = anchors.get(name) if name is not None else None
            if target is None:
                raise YamlLimit(
                    line,
                    f"the alias *{name} refers to no anchor &{name} before it",
                    f"Define &{name} before using *{name}, or write the value out.",
                )
            if id(target) in open_ids:
                raise YamlLimit(
                    line,
                    f"the alias *{name} refers to a value that contains it (a recursive alias)",
                    f"Remove *{name} from inside &{name}.",
                )
            count(line, target.size)
            place(target, line)
        elif isinstance(event, (yaml.SequenceStartEvent, yaml.MappingStartEvent)):
            if len(stack) + 1 > MAX_DEPTH:
                raise _too_deep(line)
            count(line, 1)
            node = Sequence(line) if isinstance(event, yaml.SequenceStartEvent) else Mapping(line)
            if event.anchor:
                anchors[event.anchor] = node
                open_ids.add(id(node))
            stack.append(node)
        elif isinstance(event, (yaml.SequenceEndEvent, yaml.MappingEndEvent)):
            node = stack.pop()
            if isinstance(node, Sequence):
                children = node.items
            else:
                assert isinstance(node, Mapping)
                children = [part for pair in node.pairs for part in pair]
            node.size = 1 + sum(child.size for child in children)
            node.height = 1 + max((child.height for child in children), default=0)
            open_ids.discard(id(node))
            place(node, node.line)
    return root
