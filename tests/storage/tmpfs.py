"""A small tmpfs for full-disk tests (mounting needs root; without it the test is skipped)."""

from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest


@contextlib.contextmanager
def small_tmpfs(directory: Path, size: str = "2m") -> Iterator[Path]:
    """A tmpfs of ``size`` mounted at ``directory``, unmounted afterwards; the calling test
    is skipped, with the reason, when mounting is not permitted here."""
    directory.mkdir(parents=True, exist_ok=True)
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(directory)],
        capture_output=True,
        text=True,
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a {size} tmpfs here (needs root): {mounted.stderr.strip()}")
    try:
        yield directory
    finally:
        if subprocess.run(["umount", str(directory)], capture_output=True).returncode:
            subprocess.run(["umount", "-l", str(directory)], capture_output=True)


def free_bytes(directory: Path) -> int:
    stats = os.statvfs(directory)
    return stats.f_bavail * stats.f_frsize


def fill(directory: Path, leave: int) -> Path:
    """A filler file in ``directory`` that leaves about ``leave`` bytes free."""
    filler = directory / "filler"
    with open(filler, "wb") as out:
        out.write(b"\0" * max(0, free_bytes(directory) - leave))
    return filler
