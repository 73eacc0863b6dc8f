"""Local, S3 and HDFS file access shared by the registry, the runtime and savepoints.

The public interface::

    from flinkish_cli.storage import open_storage, Storage, StorageSettings, join, FileInfo

    storage = open_storage("s3://bucket/checkpoints", StorageSettings.from_flink(flat_conf))
    storage.write_text(join("s3://bucket/checkpoints", "job", "status.json"), text)

:func:`open_storage` picks the backend by the URI's scheme. Importing this package is cheap:
only :mod:`.uri` comes with it; the interface's classes and the backends are imported when
first asked for, boto3 when an S3 storage is first used, and pyspark never (HDFS storage uses
the JVM of a Spark session that already runs). Modules: :mod:`.uri` (paths and URIs),
:mod:`.settings`, :mod:`.base` (the interface), :mod:`.local`, :mod:`.s3`, :mod:`.hdfs` (in a
Spark driver), :mod:`.webhdfs` (HDFS elsewhere).

Modules not named above:

- :mod:`.s3_client`: the S3 client flinkish uses.
- :mod:`.s3_errors`: what went wrong talking to S3, in the user's terms.
- :mod:`.posix`: safe file operations on local disk (regular files only, ``fsync``, errors).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from flinkish_cli.storage.uri import HDFS, LOCAL, S3_SCHEMES, check_uri, join, relative_to

if TYPE_CHECKING:
    from flinkish_cli.storage.base import CopyStats, FileInfo, Storage, StorageNotFoundError
    from flinkish_cli.storage.hdfs import HdfsStorage
    from flinkish_cli.storage.local import LocalStorage
    from flinkish_cli.storage.s3 import S3Storage
    from flinkish_cli.storage.settings import StorageSettings
    from flinkish_cli.storage.webhdfs import WebHdfsStorage

#: where each name of this package's interface is, imported when first asked for (a command
#: that only joins paths, or that asks a REST endpoint, loads no backend)
_LAZY = {
    "CopyStats": "base",
    "FileInfo": "base",
    "Storage": "base",
    "StorageNotFoundError": "base",
    "LocalStorage": "local",
    "S3Storage": "s3",
    "HdfsStorage": "hdfs",
    "StorageSettings": "settings",
    "WebHdfsStorage": "webhdfs",
}

__all__ = [
    "CopyStats",
    "FileInfo",
    "HdfsStorage",
    "LocalStorage",
    "S3Storage",
    "Storage",
    "StorageNotFoundError",
    "StorageSettings",
    "WebHdfsStorage",
    "join",
    "open_storage",
    "relative_to",
]


def open_storage(uri: str, settings: StorageSettings | None = None) -> Storage:
    """The storage that holds ``uri``: a plain path or ``file://`` is the local disk,
    ``s3://`` and ``s3a://`` are S3, ``hdfs://`` is HDFS (through Hadoop in a Spark
    driver's JVM, :class:`HdfsStorage`; elsewhere through the NameNode's WebHDFS,
    :class:`WebHdfsStorage`).

    Raises :class:`~flinkish_cli.errors.StorageError` for an unsupported scheme or a
    malformed URI. Nothing is contacted yet; the first operation does that.
    """
    scheme = check_uri(uri)
    if scheme == LOCAL:
        from flinkish_cli.storage.local import LocalStorage

        return LocalStorage(uri, settings)
    if scheme in S3_SCHEMES:
        from flinkish_cli.storage.s3 import S3Storage

        return S3Storage(uri, settings)
    assert scheme == HDFS
    from flinkish_cli.storage.hdfs import HdfsStorage, find_live_jvm

    if find_live_jvm() is not None:  # a Spark driver: Hadoop's own client, in its JVM
        return HdfsStorage(uri, settings)
    from flinkish_cli.storage.webhdfs import WebHdfsStorage

    return WebHdfsStorage(uri, settings)


def __getattr__(name: str) -> Any:  # the names of _LAZY, imported when asked for
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(f"{__name__}.{module}"), name)


def open_for_config(path: str, config: Any) -> Storage:
    """The storage of ``path``, reached with the Flink ``s3.*`` keys of ``config``.

    ``config`` is a :class:`flinkish_cli.config.Configuration` (anything with ``to_flat``).
    """
    return open_storage(path, _settings_for(config))


def location_for_config(path: str, config: Any) -> str:
    """``open_for_config(path, config).location(path)`` without opening the storage (no
    backend imported): its URI checked, and on S3 the endpoint ``config`` names."""
    from flinkish_cli.storage.uri import location

    endpoint = None
    if check_uri(path) in S3_SCHEMES:
        from flinkish_cli.storage.s3_client import endpoint_url

        endpoint = endpoint_url(_settings_for(config).s3_endpoint)
    return location(path, endpoint)


def _settings_for(config: Any) -> StorageSettings:
    from flinkish_cli.storage.settings import StorageSettings

    return StorageSettings.from_flink(config.to_flat(include_secrets=True))
