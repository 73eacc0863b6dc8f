"""Disposing of a savepoint: delete it, and refuse anything that is not a savepoint."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from flinkish_cli.errors import SavepointError
from flinkish_cli.savepoints.manifest import (
    IncompleteSavepointError,
    Manifest,
    is_savepoint_name,
    load_manifest,
)

if TYPE_CHECKING:
    from flinkish_cli.storage import Storage


def dispose(storage: Storage, path: str) -> Manifest:
    """Delete the savepoint at ``path``; its manifest. Refuses anything that is not one.

    A savepoint is recognised by its name (``savepoint-<6 hex>-<12 hex>``) *and* a readable
    flinkish manifest whose files are all inside it; a directory with only one of the two is
    left alone. So is a savepoint holding a symbolic link anywhere (or given through one): a
    dispose never follows a link out of the savepoint, and the deletion itself removes links
    without following them should one appear meanwhile.

    An incomplete savepoint (named like one, no manifest) is refused too
    (:class:`~.manifest.IncompleteSavepointError`, nothing deleted), although it is
    flinkish's own leftover: nothing tells a savepoint whose writer was killed from one a
    job's driver is writing right now (the manifest comes last, after every file), and
    deleting that one would pull its files from under the writer. Apache Flink's dispose
    also needs the savepoint's ``_metadata``. A writer that fails deletes its partial
    savepoint itself; only a killed one leaves it, and the refusal says to delete it by hand
    once no job is taking a savepoint into it. A complete savepoint whose files are damaged
    is disposed of: its manifest shows flinkish wrote all of it.
    """
    name = path.rstrip("/").rsplit("/", 1)[-1]
    if not is_savepoint_name(name):
        raise SavepointError(
            f"{path} is not a savepoint: savepoint directories are named "
            "savepoint-<6 hex>-<12 hex>.",
            "Nothing was deleted. Give the path that 'flinkish savepoint' printed.",
        )
    local = storage.local_path(path)
    if local is not None and os.path.islink(local):
        raise SavepointError(
            f"{path} is a symbolic link, not a savepoint directory.",
            "Nothing was deleted. Give the savepoint's own path.",
        )
    try:
        manifest = load_manifest(storage, path, "Nothing was deleted")
    except IncompleteSavepointError as incomplete:
        raise IncompleteSavepointError(
            incomplete.message,
            "Nothing was deleted: it is being written, or its writing was interrupted (a "
            "driver killed while taking it). If no job is taking a savepoint into it, delete "
            "the directory yourself.",
        ) from None
    storage.delete_tree(path)
    return manifest
