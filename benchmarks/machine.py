"""A description of the machine a benchmark ran on: CPU, cores, memory, OS, versions, load."""

from __future__ import annotations

import os
import platform
import re
import subprocess
from pathlib import Path
from typing import Any

from benchmarks.harness import REPO, cores


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.lower().startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _memory() -> str:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                kib = int(line.split()[1])
                return f"{kib / 2**20:.1f} GiB"
    except (OSError, ValueError):
        pass
    return "unknown"


def _os() -> str:
    name = platform.system()
    try:
        for line in Path("/etc/os-release").read_text().splitlines():
            if line.startswith("PRETTY_NAME="):
                name = line.split("=", 1)[1].strip().strip('"')
    except OSError:
        pass
    return f"{name}, kernel {platform.release()} ({platform.machine()})"


def _java() -> str:
    try:
        done = subprocess.run(["java", "-version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return "not found"
    lines = (done.stderr or done.stdout).strip().splitlines()
    first = lines[0] if lines else "unknown"
    vm = next((line for line in lines if "VM" in line), "")
    return f"{first}; {vm}".strip("; ")


def _version(module: str) -> str:
    from importlib import metadata

    try:
        return metadata.version(module)
    except metadata.PackageNotFoundError:
        return "not installed"


def _commit() -> str:
    try:
        done = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=30,
        )
        changed = subprocess.run(
            ["git", "--no-optional-locks", "status", "--porcelain", "--untracked-files=no"],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=30,
        )
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    commit = done.stdout.strip() or "unknown"
    return commit + (" (with uncommitted changes)" if changed.stdout.strip() else "")


def load_average() -> str:
    one, five, fifteen = os.getloadavg()
    return f"{one:.2f}, {five:.2f}, {fifteen:.2f}"


def provenance(run: dict[str, Any]) -> str:
    """The line a section written by its own script (the soak's, the autoscaler's) opens
    with: when it ran, on what and on which commit, from ``run`` (:func:`describe`'s keys
    and ``started``; a key it lacks is left out)."""
    parts = [f"Measured on {run['started']}," if run.get("started") else "Measured"]
    cores = f"{run['cores_usable']} cores" if run.get("cores_usable") else run.get("cores")
    machine = [str(v) for v in (cores, run.get("cpu"), run.get("memory")) if v]
    if machine:
        parts.append("on " + ", ".join(machine))
    versions = [f"{label} {run[k]}" for k, label in (("flinkish", "flinkish"), ("spark", "Spark"))
                if run.get(k)]  # fmt: skip
    if run.get("commit"):
        versions.append(f"commit {run['commit']}")
    if versions:
        parts.append("(" + ", ".join(versions) + ")")
    return " ".join(parts) + "."


def describe() -> dict[str, Any]:
    """The machine, the software versions, and the load average now."""
    logical = os.cpu_count() or 0
    usable = cores()
    return {
        "cpu": _cpu_model(),
        "cores": f"{usable} usable" + (f" ({logical} logical)" if logical != usable else ""),
        "cores_usable": usable,
        "memory": _memory(),
        "os": _os(),
        "python": re.sub(
            r"\s+", " ", platform.python_version() + " " + platform.python_implementation()
        ),
        "java": _java(),
        "spark": _version("pyspark"),
        "flinkish": _version("flinkish"),
        "boto3": f"{_version('boto3')} / {_version('moto')}",
        "commit": _commit(),
        "load_average_start": load_average(),
    }
