"""Safe file operations on local disk for :class:`~.local.LocalStorage`: regular files only
(a symbolic link, pipe, socket or device is refused, never followed), opened without
following links, copied by file descriptor, ``fsync``ed with their directory, and ``OSError``
translated into :class:`~flinkish_cli.errors.StorageError` with the path and what to do.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat as stat_module

from flinkish_cli.errors import StorageError
from flinkish_cli.storage.base import CHUNK, StorageNotFoundError


def special_kind(mode: int) -> str | None:
    """What a file of ``mode`` is, when it is neither a regular file nor a directory."""
    if stat_module.S_ISLNK(mode):
        return "symbolic link"
    if stat_module.S_ISFIFO(mode):
        return "named pipe"
    if stat_module.S_ISSOCK(mode):
        return "socket"
    if stat_module.S_ISCHR(mode) or stat_module.S_ISBLK(mode):
        return "device"
    if stat_module.S_ISREG(mode) or stat_module.S_ISDIR(mode):
        return None
    return "special file"


def not_copied(shown: str, kind: str) -> StorageError:
    return StorageError(
        f"{shown} is a {kind}, not a regular file: flinkish never copies through it.",
        "A checkpoint or savepoint holds regular files only; remove the "
        f"{kind} (and check who put it there).",
    )


def check_regular(source: str, shown: str) -> None:
    """Refuse ``source`` unless it is a regular file (a link is not followed)."""
    try:
        mode = os.lstat(source).st_mode
    except FileNotFoundError:
        raise StorageNotFoundError(shown) from None
    except OSError as error:
        raise translate(error, "read", shown) from error
    kind = special_kind(mode)
    if kind is not None:
        raise not_copied(shown, kind)


def open_regular(source: str, shown: str) -> int:
    """A descriptor of the regular file ``source``, opened without following a link and
    without blocking on a pipe."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(source, flags)
    except FileNotFoundError:
        raise StorageNotFoundError(shown) from None
    except OSError as error:
        if error.errno == errno.ELOOP:  # O_NOFOLLOW met a link
            raise not_copied(shown, "symbolic link") from None
        raise
    mode = os.fstat(fd).st_mode
    if not stat_module.S_ISREG(mode):
        os.close(fd)
        if stat_module.S_ISDIR(mode):
            raise StorageError(f"{shown} is not a file, so it cannot be copied.")
        raise not_copied(shown, special_kind(mode) or "special file")
    if hasattr(os, "O_NONBLOCK"):
        os.set_blocking(fd, True)
    return fd


def copy_fd(source: int, out: int) -> None:
    """Copy everything from the descriptor ``source`` to ``out`` (``sendfile`` on Linux)."""
    offset = 0
    if hasattr(os, "sendfile"):
        try:
            while sent := os.sendfile(out, source, offset, CHUNK * 8):
                offset += sent
            return
        except OSError as error:
            if error.errno not in (errno.EINVAL, errno.ENOSYS, errno.ENOTSUP) or offset:
                raise
    while chunk := os.read(source, CHUNK):
        view = memoryview(chunk)
        while view:
            view = view[os.write(out, view) :]


def fsync_path(path: str) -> None:
    """``fsync`` the file or directory ``path``; file systems that cannot are skipped."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    try:
        os.fsync(fd)
    except OSError as error:
        if error.errno not in (errno.EINVAL, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EBADF):
            raise
    finally:
        os.close(fd)


def translate(error: OSError, action: str, path: str) -> StorageError:
    reason = error.strerror or str(error)
    if isinstance(error, PermissionError):
        return StorageError(
            f"Permission denied: cannot {action} {path}.",
            "Check the owner and permissions of the directory (and the user flinkish runs as).",
        )
    if error.errno == errno.ENOSPC:
        return StorageError(f"No space left on the device to {action} {path}.")
    if error.errno == errno.EDQUOT:
        return StorageError(f"Disk quota exceeded: cannot {action} {path}.")
    if error.errno == errno.EROFS:
        return StorageError(f"Cannot {action} {path}: the file system is read-only.")
    if isinstance(error, IsADirectoryError):
        return StorageError(f"Cannot {action} {path}: it is a directory.")
    if isinstance(error, NotADirectoryError):
        return StorageError(f"Cannot {action} {path}: a part of the path is a file.")
    return StorageError(f"Cannot {action} {path}: {reason}.")


def unlink_quietly(path: str) -> None:
    with contextlib.suppress(OSError):
        os.unlink(path)


def fsync_dir(directory: str) -> None:
    """Make a rename durable (best effort: not every file system allows it)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
