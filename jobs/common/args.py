"""Command-line conventions of the example jobs.

Every job takes ``--data DIR`` (default ``./data``): its inputs and outputs default to
locations under it, and each can be given explicitly (``--input``, ``--output``, ...).
Local paths are made absolute (so a restarted or detached job finds the same directories);
URIs such as ``s3a://bucket/path`` are used as they are.
"""

from __future__ import annotations

import argparse
import os


def job_parser(description: str) -> argparse.ArgumentParser:
    """An argument parser with the options every job has."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument(
        "--data",
        default="data",
        help="base directory of the default input and output locations (default: ./data)",
    )
    parser.add_argument(
        "--max-files-per-trigger",
        type=int,
        default=None,
        help="read at most this many new files per micro-batch (default: all available)",
    )
    return parser


def is_local(path: str) -> bool:
    """True for a path on the local file system (no URI scheme, or ``file:``)."""
    return "://" not in path or path.startswith("file://")


def resolve(value: str | None, data: str, *default: str) -> str:
    """``value``, or ``data/<default...>``; local paths become absolute."""
    path = value if value is not None else os.path.join(data, *default)
    if "://" in path:
        return path
    return os.path.abspath(path)
