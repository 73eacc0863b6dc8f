"""The local file system as a :class:`~flinkish_cli.storage.base.Storage`.

This module owns everything flinkish does on local disk: atomic writes (a temporary file in
the same directory, ``fsync``, ``os.replace``), exclusive creation (a complete temporary
file hard-linked into place, which fails if the name exists), and local copies for
``copy_tree``: hard links on one file system, falling back to copying (``EXDEV`` across
devices, or any file system that refuses links). It accepts plain paths (absolute,
relative to the working directory, ``~``) and ``file:`` URIs.

Symbolic links: ``copy_tree`` copies regular files only and refuses a link (it is never
linked to, copied through or uploaded through: a link in a checkpoint could otherwise bring
any file of this machine into a savepoint); :meth:`LocalStorage.special_entries` finds
links, pipes, sockets and devices in a tree without following any; ``delete_tree`` removes
links and never what they point to. :meth:`LocalStorage.sync_tree` ``fsync``s a whole tree.

``shutil`` and the thread pool are imported by the operations that use them: a command that
only names a registry (its location) or reads a few files does not load them.
"""

from __future__ import annotations

import builtins
import contextlib
import errno
import os
import stat as stat_module
import sys
from collections.abc import Iterator
from typing import BinaryIO

from flinkish_cli.errors import StorageError
from flinkish_cli.storage import posix
from flinkish_cli.storage.base import (
    CHUNK,
    LINKED,
    TRANSFERRED,
    FileInfo,
    Storage,
    StorageNotFoundError,
    is_temp,
    temp_name,
)
from flinkish_cli.storage.settings import StorageSettings
from flinkish_cli.storage.uri import join, local_path, location


class LocalStorage(Storage):
    """Files on this machine's disks."""

    scheme = "file"

    def __init__(self, root: str = ".", settings: StorageSettings | None = None) -> None:
        super().__init__(root, settings)
        self._links_work = True  # set to False after the first EXDEV: stop trying to link

    def describe(self) -> str:
        return f"local directory {local_path(self.root)}"

    def local_path(self, path: str) -> str:
        return local_path(path)

    def location(self, path: str) -> str:
        """``file://`` and the real absolute path (symbolic links resolved)."""
        return location(path)

    # -- errors ----------------------------------------------------------------------------
    def _storage_error(self, error: Exception, action: str, path: str) -> StorageError | None:
        if isinstance(error, FileNotFoundError):
            return StorageNotFoundError(path)
        if isinstance(error, OSError):
            return posix.translate(error, action, path)
        return None

    # -- queries ---------------------------------------------------------------------------
    def exists(self, path: str) -> bool:
        return os.path.exists(local_path(path))

    def is_dir(self, path: str) -> bool:
        return os.path.isdir(local_path(path))

    def stat(self, path: str) -> FileInfo:
        with self._errors("read", path):
            st = os.stat(local_path(path))
        is_dir = stat_module.S_ISDIR(st.st_mode)
        name = path.rstrip("/").rpartition("/")[2]
        return FileInfo(path, name, 0 if is_dir else st.st_size, is_dir, st.st_mtime)

    def list(self, path: str) -> list[FileInfo]:
        directory = local_path(path)
        if not os.path.exists(directory):
            return []
        if not os.path.isdir(directory):
            raise StorageError(f"{path} is a file, not a directory.")
        found = []
        with self._errors("list", path), os.scandir(directory) as entries:
            for entry in entries:
                if is_temp(entry.name):
                    continue
                try:
                    is_dir = entry.is_dir()
                    st = entry.stat()
                except FileNotFoundError:  # deleted while listing
                    continue
                found.append(
                    FileInfo(
                        join(path, entry.name),
                        entry.name,
                        0 if is_dir else st.st_size,
                        is_dir,
                        st.st_mtime,
                    )
                )
        return sorted(found, key=lambda info: info.name)

    def walk(self, path: str) -> Iterator[FileInfo]:
        directory = local_path(path)
        if os.path.isfile(directory):
            raise StorageError(f"{path} is a file, not a directory.")

        def fail(error: OSError) -> None:
            if not isinstance(error, FileNotFoundError):
                raise posix.translate(error, "list", path) from error

        for top, dirs, names in os.walk(directory, onerror=fail):
            dirs.sort()
            relative = os.path.relpath(top, directory)
            base = path if relative == "." else join(path, relative.replace(os.sep, "/"))
            for name in sorted(names):
                if is_temp(name):
                    continue
                try:
                    st = os.stat(os.path.join(top, name))
                except FileNotFoundError:
                    continue
                yield FileInfo(join(base, name), name, st.st_size, False, st.st_mtime)

    def special_entries(self, path: str, limit: int = 10) -> builtins.list[tuple[str, str]]:
        root = local_path(path)
        found: list[tuple[str, str]] = []
        pending = [("", root)]
        with self._errors("list", path):
            while pending and len(found) < limit:
                relative, directory = pending.pop()
                try:
                    entries = list(os.scandir(directory))
                except (FileNotFoundError, NotADirectoryError):
                    continue  # a missing tree, or removed while looking: nothing special
                for entry in sorted(entries, key=lambda e: e.name):
                    name = f"{relative}/{entry.name}" if relative else entry.name
                    try:
                        mode = entry.stat(follow_symlinks=False).st_mode
                    except FileNotFoundError:
                        continue
                    kind = posix.special_kind(mode)
                    if kind is not None:
                        found.append((name, kind))
                        if len(found) >= limit:
                            break
                    elif stat_module.S_ISDIR(mode):
                        pending.append((name, entry.path))
        return sorted(found)

    # -- reading ---------------------------------------------------------------------------
    def open_read(self, path: str) -> BinaryIO:
        with self._errors("read", path):
            return open(local_path(path), "rb")

    def read_bytes(self, path: str) -> bytes:
        with self._errors("read", path), open(local_path(path), "rb") as stream:
            return stream.read()

    def read_if_changed(self, path: str, version: str | None) -> tuple[str | None, bytes | None]:
        """The version is the open file's inode, modification and change times (ns) and size:
        every write replaces the file by a rename (a new inode, new times), and the content
        is read from the very file whose version is returned."""
        with self._errors("read", path), open(local_path(path), "rb") as stream:
            st = os.fstat(stream.fileno())
            current = f"{st.st_ino}-{st.st_mtime_ns}-{st.st_ctime_ns}-{st.st_size}"
            if current == version:
                return current, None
            return current, stream.read()

    def download_file(self, src: str, local_dest: str) -> None:
        self._copy_local(local_path(src), local_path(local_dest), src)

    # -- writing ---------------------------------------------------------------------------
    def write_bytes(self, path: str, data: bytes) -> None:
        self._write_atomic(path, lambda out: out.write(data))

    def write_stream(self, path: str, stream: BinaryIO) -> None:
        import shutil

        self._write_atomic(path, lambda out: shutil.copyfileobj(stream, out, CHUNK))

    def _write_atomic(self, path: str, fill: object) -> None:
        target = local_path(path)
        with self._errors("write", path):
            tmp = self._write_temp(target, fill)
            try:
                os.replace(tmp, target)
            except BaseException:
                posix.unlink_quietly(tmp)
                raise
            posix.fsync_dir(os.path.dirname(target))

    def _write_temp(self, target: str, fill: object) -> str:
        """A complete, fsynced temporary file beside ``target``, filled by ``fill(file)``."""
        os.makedirs(os.path.dirname(target), exist_ok=True)
        tmp = temp_name(target)
        # os.open with 0o666 so the umask applies, as for any file (mkstemp would give 0600).
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        try:
            with os.fdopen(fd, "wb") as out:
                fill(out)  # type: ignore[operator]
                out.flush()
                os.fsync(out.fileno())
        except BaseException:
            posix.unlink_quietly(tmp)
            raise
        return tmp

    def create_exclusive(self, path: str, data: bytes) -> bool:
        target = local_path(path)
        with self._errors("create", path):
            tmp = self._write_temp(target, lambda out: out.write(data))
            try:
                os.link(tmp, target)  # atomic, fails if the name exists: O_CREAT|O_EXCL
            except FileExistsError:
                return False
            except OSError as error:
                if error.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP):
                    raise
                return self._create_exclusive_without_links(target, data)
            finally:
                posix.unlink_quietly(tmp)
            posix.fsync_dir(os.path.dirname(target))
            return True

    @staticmethod
    def _create_exclusive_without_links(target: str, data: bytes) -> bool:
        """For file systems without hard links: O_EXCL on the name itself (still exclusive,
        but a reader may see the file before its content is complete)."""
        try:
            fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        except FileExistsError:
            return False
        with os.fdopen(fd, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        return True

    def upload_file(self, local_src: str, dest: str) -> None:
        self._copy_local(local_path(local_src), local_path(dest), local_src)

    def _copy_local(self, src: str, dest: str, shown: str) -> None:
        """Copy the regular file ``src`` to ``dest`` atomically (``sendfile`` where available);
        a symbolic link at ``src`` is refused, never followed."""
        with self._errors("copy", shown):
            source = posix.open_regular(src, shown)
            try:
                os.makedirs(os.path.dirname(dest), exist_ok=True)
                tmp = temp_name(dest)
                try:
                    with open(tmp, "wb") as out:
                        posix.copy_fd(source, out.fileno())
                    os.replace(tmp, dest)
                except BaseException:
                    posix.unlink_quietly(tmp)
                    raise
            except OSError as error:
                if error.errno in (errno.ENOSPC, errno.EDQUOT, errno.EROFS):
                    raise posix.translate(error, "write", dest) from error  # the target's fault
                raise
            finally:
                os.close(source)

    def mkdirs(self, path: str) -> None:
        with self._errors("create the directory", path):
            os.makedirs(local_path(path), exist_ok=True)

    def delete(self, path: str) -> None:
        target = local_path(path)
        with self._errors("delete", path):
            if os.path.isdir(target) and not os.path.islink(target):
                raise StorageError(
                    f"{path} is a directory; delete() removes files only.",
                    "Use delete_tree() for directories.",
                )
            with contextlib.suppress(FileNotFoundError):
                os.unlink(target)

    def delete_tree(self, path: str) -> None:
        target = local_path(path)
        if os.path.dirname(target) == target:
            raise StorageError(f"Refusing to delete the whole file system ({path}).")
        if not os.path.lexists(target):
            return
        if not os.path.isdir(target) or os.path.islink(target):
            raise StorageError(f"{path} is not a directory, so delete_tree() leaves it alone.")
        # shutil.rmtree removes links and never follows them (it works on directory file
        # descriptors where the platform allows, so a directory swapped for a link while it
        # runs is not followed either)

        def fail(_function: object, failed: str, info: object) -> None:
            error = info[1] if isinstance(info, tuple) else info
            if not isinstance(error, FileNotFoundError):  # removed concurrently: fine
                raise posix.translate(error, "delete", failed) from error  # type: ignore[arg-type,misc]

        import shutil

        if sys.version_info >= (3, 12):
            shutil.rmtree(target, onexc=fail)
        else:
            shutil.rmtree(target, onerror=fail)

    # -- copying ---------------------------------------------------------------------------
    def _copy_file(
        self, src: str, dest: Storage, dest_path: str, size: int | None, link: bool
    ) -> str:
        source = local_path(src)
        posix.check_regular(source, src)
        target = dest.local_path(dest_path)
        if target is None:
            dest.upload_file(src, dest_path)
            return TRANSFERRED
        if link and self._links_work:
            with self._errors("link", src):
                if self._link(source, target):
                    return LINKED
        self._copy_local(source, target, src)
        return TRANSFERRED

    def sync_tree(self, path: str) -> None:
        root = local_path(path)
        if not os.path.isdir(root):
            return
        files: list[str] = []
        directories: list[str] = []
        with self._errors("sync", path):
            for top, _dirs, names in os.walk(root):  # links to directories: not followed
                directories.append(top)
                files += [
                    os.path.join(top, name)
                    for name in names
                    if not os.path.islink(os.path.join(top, name))
                ]
            from concurrent.futures import ThreadPoolExecutor

            workers = max(1, min(self.settings.max_workers, len(files)))
            with ThreadPoolExecutor(workers, thread_name_prefix="flinkish-sync") as pool:
                list(pool.map(posix.fsync_path, files))
            # the deepest directories first, so each entry is durable before its parent's
            for directory in sorted(directories, key=len, reverse=True):
                posix.fsync_path(directory)
        posix.fsync_dir(os.path.dirname(root))  # the tree's own entry (best effort, as for writes)

    def _link(self, source: str, target: str) -> bool:
        """Hard-link ``source`` at ``target`` (replacing it); False when links cannot be
        used here (another device, or a file system without them): copy instead."""
        try:
            try:
                os.link(source, target)
            except FileExistsError:
                tmp = temp_name(target)
                os.link(source, tmp)
                try:
                    os.replace(tmp, target)
                except BaseException:
                    posix.unlink_quietly(tmp)
                    raise
            return True
        except FileNotFoundError:
            raise
        except OSError as error:
            if error.errno == errno.EXDEV:
                self._links_work = False  # every other file is on the same two devices
            return False
