"""A query checkpoint as Spark leaves it, written by hand (no Spark) for fast tests."""

from __future__ import annotations

import json
import struct
import zlib
from pathlib import Path

_CONF = {
    "spark.sql.shuffle.partitions": "2",
    "spark.sql.streaming.stateStore.providerClass": "x.RocksDBStateStoreProvider",
}
OFFSETS = (
    "v1\n"
    + json.dumps({"batchWatermarkMs": 5, "batchTimestampMs": 1, "conf": _CONF})
    + '\n{"logOffset":%d}\n'
)


def hadoop_crc(data: bytes, per_sum: int = 512) -> bytes:
    """The checksum file Hadoop's local file system writes beside ``data``."""
    sums = [zlib.crc32(data[i : i + per_sum]) for i in range(0, len(data), per_sum)]
    return b"crc\x00" + struct.pack(">i", per_sum) + struct.pack(f">{len(sums)}I", *sums)


def fake_checkpoint(root: Path, committed: int, planned: bool = True) -> Path:
    """A query checkpoint as Spark leaves it: batches 0..committed, maybe one more planned,
    with Hadoop's checksum files beside the log entries and the state files."""
    files = {"metadata": '{"id":"q-1"}'}
    last_offset = committed + (1 if planned else 0)
    for batch in range(last_offset + 1):
        files[f"offsets/{batch}"] = OFFSETS % batch
        files[f"sources/0/{batch}"] = "v1\n{}"
    for batch in range(committed + 1):
        files[f"commits/{batch}"] = 'v1\n{"nextBatchWatermarkMs":0}'
    for partition in (0, 1):
        for version in range(1, last_offset + 2):
            files[f"state/0/{partition}/{version}.zip"] = f"state {version} " * 100
        files[f"state/0/{partition}/SSTs/000{partition}.sst"] = "sst"
        files[f"state/0/{partition}/_metadata/schema"] = "schema"
    files["state/0/_metadata/metadata"] = "operator"
    for name, text in list(files.items()):
        if name == "metadata" or name.startswith("offsets/") or name.endswith(".zip"):
            head, _, base = name.rpartition("/")
            files[f"{head}/.{base}.crc" if head else f".{base}.crc"] = hadoop_crc(text.encode())
    files["offsets/.3.tmp"] = "in flight"
    for name, content in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)
    return root
