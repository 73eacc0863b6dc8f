"""Maven artifacts as local jar files, resolved once with the machine's own ``mvn``.

Spark's ``--packages`` resolves with Ivy, which ignores the machine's Maven settings (its
mirrors, proxies and credentials in ``~/.m2/settings.xml`` and Maven's global settings).
flinkish resolves Maven coordinates the way a Flink user gets a connector's jars: it writes a
small POM that depends on them and runs ``mvn dependency:copy-dependencies`` with the
machine's ``mvn``, which reads those settings itself. The jars land in a cache,
``<flinkish's cache>/jars/<key>/``, where ``key`` is a digest of the coordinates; a warm cache
answers without running ``mvn`` (a job then starts offline).

The cache directory of a resolution holds ``pom.xml``, the jars and ``artifacts.tsv`` (one
line per jar: group, artifact, version, file name), written last: a directory without it is
an unfinished resolution, done again. Two processes resolving the same coordinates at once
each resolve into a directory of their own and the first to finish is kept.

``python -m flinkish_cli.spark.maven --pom POM`` resolves an existing POM's dependencies into
the same cache (keyed by the POM's text) and prints the jars' class path (what
``scripts/start-cluster.sh --kafka`` runs the broker with).
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from xml.sax.saxutils import escape

from flinkish_cli.errors import ConfigError
from flinkish_cli.spark.cds import cache_dir

#: Changes when the cache's layout or the generated POM changes (part of every key).
LAYOUT = "1"
ARTIFACTS_FILE = "artifacts.tsv"
#: How long one ``mvn`` run may take (a cold resolution downloads tens of megabytes).
MVN_TIMEOUT = 900.0

_PART = re.compile(r"^[A-Za-z0-9_.\-]+$")


@dataclass(frozen=True, order=True)
class Coordinate:
    """Maven coordinates as Spark's ``spark.jars.packages`` writes them:
    ``group:artifact:version``."""

    group: str
    artifact: str
    version: str

    @classmethod
    def parse(cls, text: str) -> Coordinate:
        parts = text.strip().split(":")
        if len(parts) != 3 or not all(_PART.match(p) for p in parts):
            raise ConfigError(
                f"'{text.strip()}' is not Maven coordinates.",
                "Write them as group:artifact:version, e.g. "
                "org.apache.spark:spark-sql-kafka-0-10_2.13:4.2.0.",
            )
        return cls(*parts)

    def __str__(self) -> str:
        return f"{self.group}:{self.artifact}:{self.version}"


@dataclass(frozen=True)
class Artifact:
    """One resolved jar: its coordinates and its file in the cache."""

    coordinate: Coordinate
    path: Path


def parse_all(texts: Iterable[str]) -> list[Coordinate]:
    """Coordinates from a list of texts (each may hold several, comma-separated)."""
    found: list[Coordinate] = []
    for text in texts:
        found += [Coordinate.parse(p) for p in text.split(",") if p.strip()]
    return found


def pom(coordinates: Sequence[Coordinate]) -> str:
    """The POM whose runtime dependencies are ``coordinates`` and what they need."""
    dependencies = "".join(
        "    <dependency>\n"
        f"      <groupId>{escape(c.group)}</groupId>\n"
        f"      <artifactId>{escape(c.artifact)}</artifactId>\n"
        f"      <version>{escape(c.version)}</version>\n"
        "    </dependency>\n"
        for c in coordinates
    )
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        "<!-- Written by flinkish: the jars of these coordinates, for a Spark job. -->\n"
        '<project xmlns="http://maven.apache.org/POM/4.0.0">\n'
        "  <modelVersion>4.0.0</modelVersion>\n"
        "  <groupId>flinkish.resolve</groupId>\n"
        "  <artifactId>jars</artifactId>\n"
        "  <version>1</version>\n"
        "  <packaging>pom</packaging>\n"
        "  <dependencies>\n"
        f"{dependencies}"
        "  </dependencies>\n"
        "</project>\n"
    )


def cache_key(pom_text: str) -> str:
    """The cache directory's name for a POM: a digest of its text and the cache's layout."""
    return hashlib.sha256(f"{LAYOUT}\n{pom_text}".encode()).hexdigest()[:20]


def jars_cache() -> Path:
    """Where resolved jars are kept: ``<flinkish's cache>/jars``."""
    return cache_dir() / "jars"


def resolve(coordinates: Sequence[Coordinate]) -> list[Path]:
    """The jars of ``coordinates`` and of everything they need at run time, from the cache,
    else resolved with ``mvn`` into it. Raises :class:`ConfigError` (one line) when Maven
    cannot resolve them or is not installed."""
    return [a.path for a in resolve_artifacts(coordinates)]


def resolve_artifacts(coordinates: Sequence[Coordinate]) -> list[Artifact]:
    """:func:`resolve`, each jar with its coordinates."""
    unique = sorted(set(coordinates))
    if not unique:
        return []
    return resolve_pom(pom(unique), ", ".join(str(c) for c in unique))


def resolve_pom(pom_text: str, what: str) -> list[Artifact]:
    """The runtime dependencies of the POM ``pom_text`` (``what`` names them in messages)."""
    target = jars_cache() / cache_key(pom_text)
    found = _read(target)
    if found is not None:
        return found
    mvn = shutil.which("mvn")
    if mvn is None:
        raise ConfigError(
            f"Maven is needed to fetch {what} once, and 'mvn' is not on the PATH.",
            "Install it (apt-get install maven), or put the jars in pipeline.jars.",
        )
    target.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    try:
        (work / "pom.xml").write_text(pom_text)
        _run_mvn(mvn, work, what)
        listed = _listed(work / "list.txt")
        lines = []
        for coordinate, name in listed:
            if not (work / name).is_file():
                raise ConfigError(f"Maven listed {name} for {what} but did not copy it.")
            lines.append(f"{coordinate.group}\t{coordinate.artifact}\t{coordinate.version}\t{name}")
        (work / "list.txt").unlink()
        (work / ARTIFACTS_FILE).write_text("".join(f"{line}\n" for line in lines))
        try:
            work.rename(target)
        except OSError:  # another process finished first (or left an unfinished directory)
            if _read(target) is None:
                shutil.rmtree(target, ignore_errors=True)
                work.rename(target)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    found = _read(target)
    if found is None:
        raise ConfigError(f"The jars of {what} could not be kept in {target}.")
    return found


def _run_mvn(mvn: str, work: Path, what: str) -> None:
    command = [
        mvn,
        "--batch-mode",
        "--quiet",
        "--file",
        str(work / "pom.xml"),
        "dependency:copy-dependencies",
        "dependency:list",
        "-DincludeScope=runtime",
        f"-DoutputDirectory={work}",
        f"-DoutputFile={work / 'list.txt'}",
        "-Dsort=true",
    ]
    try:
        done = subprocess.run(
            command,
            cwd=work,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=MVN_TIMEOUT,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise ConfigError(
            f"Maven did not resolve {what} within {MVN_TIMEOUT:.0f} s.",
            "Check the network access to the Maven repository (mirrors in ~/.m2/settings.xml).",
        ) from None
    if done.returncode != 0:
        raise ConfigError(
            f"Maven could not resolve {what}: {mvn_reason(done.stdout + done.stderr)}",
            "Check the coordinates and the repositories Maven uses (mirrors, proxies and "
            "credentials in ~/.m2/settings.xml).",
        )


def mvn_reason(output: str) -> str:
    """The line of Maven's output that says why a resolution failed."""
    lines = [re.sub(r"\x1b\[[0-9;]*m", "", line).strip() for line in output.splitlines()]
    errors = [line.removeprefix("[ERROR]").strip() for line in lines if line.startswith("[ERROR]")]
    errors = [line for line in errors if line]
    for line in lines:
        if line.startswith("[FATAL]"):
            return line.removeprefix("[FATAL]").strip()
    for line in errors:
        match = re.search(r"(Could not (?:find|resolve|transfer) artifact [^:]+:[^ ]+.*)", line)
        if match:
            return match.group(1)
    for line in errors:
        match = re.search(r"Failed to execute goal .*?: (.*)", line)
        if match:
            return match.group(1)
    return errors[0] if errors else "mvn failed without saying why"


_LISTED = re.compile(
    r"^\s*(?P<group>[^:\s]+):(?P<artifact>[^:\s]+):(?P<type>[^:\s]+)"
    r"(?::(?P<classifier>[^:\s]+))?:(?P<version>[^:\s]+):(?P<scope>[a-z]+)"
)


def _listed(path: Path) -> list[tuple[Coordinate, str]]:
    """``dependency:list``'s file: each artifact and the name ``copy-dependencies`` gave it."""
    found = []
    for line in path.read_text().splitlines():
        match = _LISTED.match(line.split(" -- ")[0])
        if match is None:
            continue
        coordinate = Coordinate(match["group"], match["artifact"], match["version"])
        classifier = f"-{match['classifier']}" if match["classifier"] else ""
        found.append((coordinate, f"{coordinate.artifact}-{coordinate.version}{classifier}.jar"))
    return found


def _read(target: Path) -> list[Artifact] | None:
    try:
        text = (target / ARTIFACTS_FILE).read_text()
    except OSError:
        return None
    found = []
    for line in text.splitlines():
        group, artifact, version, name = line.split("\t")
        path = target / name
        if not path.is_file():
            return None
        found.append(Artifact(Coordinate(group, artifact, version), path))
    return found


def main(argv: list[str] | None = None) -> int:
    """``--pom POM``: resolve the POM's dependencies and print their class path."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2 or args[0] != "--pom":
        print("usage: python -m flinkish_cli.spark.maven --pom POM", file=sys.stderr)
        return 2
    try:
        text = Path(args[1]).read_text()
        found = resolve_pom(text, f"the dependencies of {args[1]}")
    except OSError as error:
        print(f"ERROR: {args[1]} cannot be read: {error.strerror}", file=sys.stderr)
        return 1
    except ConfigError as error:
        print(f"ERROR: {error}", file=sys.stderr)
        return 1
    print(os.pathsep.join(str(a.path) for a in found))
    return 0


if __name__ == "__main__":
    sys.exit(main())
