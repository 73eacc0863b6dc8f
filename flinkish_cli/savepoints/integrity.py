"""Trusting nothing in a checkpoint or savepoint tree: links, special files, damaged files.

- :func:`refuse_special_entries`: a savepoint or checkpoint holds regular files and
  directories only. A symbolic link (or a pipe, socket or device) anywhere in the tree is
  refused before anything is read, copied, restored or deleted: a link could bring any file
  of the machine into a savepoint, make ``info`` read it, or make a dispose reach out of the
  savepoint.
- :func:`digest`: size and SHA-256 of a file, read once, and at the same time checked
  against the checksum file Hadoop's local file system writes beside each file Spark
  writes (``.<name>.crc``: ``crc\\0``, the bytes per checksum as a big-endian int, then one
  big-endian CRC-32 per chunk). A flipped byte or a truncated file in a query's checkpoint
  is found when a savepoint is taken or a retained checkpoint is restored, not when Spark
  trips over it later.
"""

from __future__ import annotations

import hashlib
import struct
import zlib
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING

from flinkish_cli.errors import SavepointError

if TYPE_CHECKING:
    from flinkish_cli.storage import Storage

CRC_MAGIC = b"crc\x00"
CHUNK = 1024 * 1024
#: Hadoop's checksum files are a hundredth of their file; bigger ones are not read whole.
MAX_CRC_BYTES = 64 * 1024 * 1024


def refuse_special_entries(storage: Storage, path: str, what: str, nothing_done: str) -> None:
    """:class:`SavepointError` when the tree at ``path`` holds a symbolic link (at any depth)
    or another special file. ``what`` names the tree ("Savepoint /x"), ``nothing_done``
    starts the hint ("Nothing was deleted")."""
    found = storage.special_entries(path, limit=4)
    if not found:
        return
    shown = ", ".join(f"{name} ({kind})" for name, kind in found[:3])
    more = " and more" if len(found) > 3 else ""
    raise SavepointError(
        f"{what} contains {shown}{more}: a savepoint or checkpoint holds only regular files "
        "and directories, and flinkish never follows a link out of one.",
        f"{nothing_done}. Someone other than flinkish changed it: remove the links (or copy "
        "the files they point to in their place, if you trust them) and try again.",
    )


def crc_name(relative: str) -> str:
    """``state/0/1/3.zip`` → ``state/0/1/.3.zip.crc``: Hadoop's checksum file of a file."""
    head, _, name = relative.rpartition("/")
    return f"{head}/.{name}.crc" if head else f".{name}.crc"


@dataclass(frozen=True)
class Digest:
    """What :func:`digest` found: the size and SHA-256 of the bytes read."""

    size: int
    sha256: str


class DamagedFileError(SavepointError):
    """A file that does not match the Hadoop checksum written with it."""

    def __init__(self, relative: str, detail: str) -> None:
        super().__init__(f"{relative} {detail}")
        self.relative = relative
        self.detail = detail


def parse_crc(data: bytes, relative: str) -> tuple[int, list[int]]:
    """``(bytes per checksum, [crc, ...])`` of a Hadoop checksum file's content."""
    if len(data) < 8 or data[:4] != CRC_MAGIC or (len(data) - 8) % 4:
        raise DamagedFileError(crc_name(relative), "is not a valid Hadoop checksum file")
    (per_sum,) = struct.unpack(">i", data[4:8])
    if per_sum <= 0:
        raise DamagedFileError(crc_name(relative), "is not a valid Hadoop checksum file")
    count = (len(data) - 8) // 4
    return per_sum, list(struct.unpack(f">{count}I", data[8:]))


def digest(storage: Storage, full: str, relative: str, crc: bytes | None = None) -> Digest:
    """Size and SHA-256 of the file ``full``, read once; with ``crc`` (the content of its
    Hadoop checksum file) every chunk is checked against it as well, and a mismatch raises
    :class:`DamagedFileError` naming ``relative``."""
    if crc is None:  # the backend's own way (HDFS hashes in the JVM)
        return Digest(storage.size(full), storage.checksum(full))
    sha = hashlib.sha256()
    size = 0
    per_sum, sums = parse_crc(crc, relative)
    pending = b""
    index = 0
    mismatch: int | None = None  # the first chunk that does not match (reading goes on)

    def check(chunk: bytes | memoryview) -> None:
        nonlocal index, mismatch
        if mismatch is None and (
            index >= len(sums) or zlib.crc32(chunk) & 0xFFFFFFFF != sums[index]
        ):
            mismatch = index
        index += 1

    with storage.open_read(full) as stream:
        while block := stream.read(CHUNK):
            sha.update(block)
            size += len(block)
            pending += block
            whole = len(pending) - len(pending) % per_sum
            view = memoryview(pending)
            for start in range(0, whole, per_sum):
                check(view[start : start + per_sum])
            view.release()
            pending = pending[whole:]
    if pending:
        check(pending)
    if index != len(sums):
        longer = "longer" if index > len(sums) else "shorter"
        raise DamagedFileError(
            relative,
            f"is {longer} than its Hadoop checksum file says ({size} bytes, "
            f"{crc_name(relative).rpartition('/')[2]} covers {len(sums)} chunks of {per_sum})",
        )
    if mismatch is not None:
        raise DamagedFileError(
            relative,
            f"does not match its Hadoop checksum at byte {mismatch * per_sum} "
            f"({crc_name(relative).rpartition('/')[2]})",
        )
    return Digest(size, sha.hexdigest())


def digest_files(
    storage: Storage, root: str, relative: list[str], verify_crc: bool = True
) -> dict[str, Digest]:
    """:func:`digest` of each file under ``root``, in parallel; files whose Hadoop checksum
    file is among ``relative`` are checked against it (when ``verify_crc``)."""
    from flinkish_cli.storage import join

    present = set(relative)

    def one(name: str) -> tuple[str, Digest]:
        companion = crc_name(name)
        crc = None
        if verify_crc and companion in present and not name.endswith(".crc"):
            full = join(root, companion)
            if storage.size(full) <= MAX_CRC_BYTES:
                crc = storage.read_bytes(full)
        return name, digest(storage, join(root, name), name, crc)

    if not relative:
        return {}
    with ThreadPoolExecutor(max_workers=8) as pool:
        return dict(pool.map(one, relative))
