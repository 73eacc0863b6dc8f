"""A streaming query's stable identity: the name of its checkpoint and of its state in savepoints.

As Flink gives operators without ``uid()`` generated ids that stay stable while the program's
shape stays the same, flinkish gives every query an identity:

- a query named by the script (``queryName``) is known by that name;
- a name that cannot be a directory (``"my query"``, ``"a/b"``) is kept as Spark's query name
  and mapped to a safe identity: the name's safe characters and a short hash of it;
- an unnamed query gets ``unnamed-<n>``, ``n`` counting the program's unnamed queries in the
  order it starts them (1, 2, ...);
- a name started again within one run of the program (start, stop, start again) gets
  ``<name>.<k>`` for its k-th start, so each start keeps its own state, as each start has a
  fresh checkpoint under ``spark-submit``.

Generated identities depend on the program's order of starts; :class:`QueryShape` records what
kind of query each one is (its sink and sources) so that a resume can check that
``unnamed-2`` is still the query it was. Naming queries is better: names survive reordering.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field

from flinkish_cli.errors import JobError
from flinkish_cli.registry.names import is_query_name

GENERATED_PREFIX = "unnamed-"
_GENERATED = re.compile(r"^unnamed-[0-9]+$")
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")


def is_generated(identity: str) -> bool:
    """True for an identity flinkish generated for an unnamed query."""
    return bool(_GENERATED.match(identity))


@dataclass(frozen=True)
class QueryShape:
    """What kind of query a query is: its sink and, where Spark can tell, its sources."""

    sink: str
    sources: tuple[str, ...] | None = None

    def describe(self) -> str:
        sources = ", ".join(self.sources) if self.sources else "?"
        return f"sink {self.sink}, sources {sources}"

    def to_text(self) -> str:
        """The shape as one stable string (stored in status files and savepoints)."""
        if self.sources is None:
            return f"sink={self.sink}"
        return f"sink={self.sink};sources={','.join(self.sources)}"

    @classmethod
    def from_text(cls, text: str | None) -> QueryShape | None:
        if not text:
            return None
        parts = dict(part.split("=", 1) for part in text.split(";") if "=" in part)
        sources = parts.get("sources")
        return cls(
            sink=parts.get("sink", "?"),
            sources=tuple(s for s in sources.split(",") if s) if sources is not None else None,
        )

    def matches(self, other: QueryShape) -> bool:
        """Same sink, and the same sources where both sides know them."""
        if self.sink != other.sink:
            return False
        return self.sources is None or other.sources is None or self.sources == other.sources


@dataclass(frozen=True)
class QueryIdentity:
    """A started query's identity, as :class:`Identities` assigned it."""

    identity: str
    spark_name: str | None  # the name the script gave (None: unnamed)
    shape: QueryShape

    @property
    def generated(self) -> bool:
        return self.spark_name is None

    def label(self) -> str:
        """How logs and errors refer to the query."""
        if self.spark_name is None:
            return f"unnamed query '{self.identity}' ({self.shape.describe()})"
        if self.spark_name != self.identity:
            return f"query '{self.spark_name}' (identity '{self.identity}')"
        return f"query '{self.identity}'"


@dataclass
class Identities:
    """Assigns identities to the queries of one run of the program, in the order they start."""

    unnamed: int = 0
    starts: dict[str, int] = field(default_factory=dict)

    def assign(self, spark_name: str | None, shape: QueryShape) -> QueryIdentity:
        if spark_name is None or not str(spark_name).strip():
            self.unnamed += 1
            base = f"{GENERATED_PREFIX}{self.unnamed}"
            spark_name = None
        else:
            base = safe_identity(str(spark_name))
        count = self.starts.get(base, 0) + 1
        self.starts[base] = count
        identity = base if count == 1 else f"{base}.{count}"
        return QueryIdentity(identity=identity, spark_name=spark_name, shape=shape)


def safe_identity(name: str) -> str:
    """``name`` itself when it can be a directory, else a safe, stable stand-in for it."""
    if is_query_name(name) and not is_generated(name):
        return name
    if is_generated(name):
        return name  # the script pinned a generated identity: it means that state
    readable = _UNSAFE.sub("_", name).strip("_.-")[:100] or "query"
    if not readable[0].isalnum():
        readable = "q" + readable
    digest = hashlib.sha256(name.encode("utf-8")).hexdigest()[:8]
    return f"{readable}-{digest}"


def check_distinct(identity: str, active: list[str]) -> None:
    """Two active queries cannot share an identity (they would share a checkpoint)."""
    if identity in active:
        raise JobError(
            f"Two active streaming queries of the job have the identity '{identity}'.",
            f"Names of the form '{GENERATED_PREFIX}<n>' are the identities of unnamed queries; "
            "give the named query another name.",
        )
