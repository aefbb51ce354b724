"""Crash-safe replacement of a file or a folder: readers see the old version or the new one,
whole, never a mix and never nothing.

A new version is written beside the target under a temporary name and fsynced; then
- a file is renamed over the target (``write_file``: ``os.replace`` is atomic);
- a folder is swapped with the target in one step where the OS can (Linux's
  ``renameat2(RENAME_EXCHANGE)``), and the old version, now under the temporary name, is
  removed. Elsewhere the old folder is renamed aside first and ``resolve`` finds it if a
  crash falls between the two renames.
"""

from __future__ import annotations

import ctypes
import errno
import os
import shutil
import tempfile

_RENAME_EXCHANGE = 2
_AT_FDCWD = -100
try:
    _renameat2 = ctypes.CDLL(None, use_errno=True).renameat2
    _renameat2.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
except (OSError, AttributeError):  # not Linux, or a libc without it
    _renameat2 = None


def fsync_tree(path: str) -> None:
    """Flush every file under ``path`` and the folders themselves to disk."""
    for root, _, files in os.walk(path):
        for name in files:
            with open(os.path.join(root, name), "rb") as f:
                os.fsync(f.fileno())
        fsync_dir(root)


def fsync_dir(path: str) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def write_file(path: str, write) -> None:
    """Make the file ``path`` hold what ``write(tmp)`` writes to a temporary file beside it:
    fsynced, renamed over ``path`` and the rename made durable. On any failure the temporary
    is removed and ``path`` keeps its previous version. The temporary lives in a folder of its
    own (``.<name>.*.tmp``), so whatever the writer creates next to it (safetensors writes
    through a ``.tmp*`` file of its own) is one leftover a killed process leaves, not several."""
    directory = os.path.dirname(os.path.abspath(path))
    scratch = tempfile.mkdtemp(dir=directory, prefix=f".{os.path.basename(path)}.", suffix=".tmp")
    tmp = os.path.join(scratch, "data")
    try:
        write(tmp)
        with open(tmp, "rb") as fh:
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    fsync_dir(directory)


def temp_dir_beside(path: str) -> str:
    """A new empty folder next to ``path`` (same filesystem, so renames are atomic)."""
    parent = os.path.dirname(os.path.abspath(path)) or "."
    return tempfile.mkdtemp(prefix=f".{os.path.basename(os.path.abspath(path))}.tmp-", dir=parent)


def _exchange(a: str, b: str) -> bool:
    """Swap two paths atomically; False where the OS cannot (or ``b`` does not exist)."""
    if _renameat2 is None:
        return False
    if _renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.ENOENT, errno.EINVAL, errno.ENOSYS, errno.EPERM, errno.ENOTSUP):
        return False
    raise OSError(err, f"cannot swap {a!r} and {b!r}: {os.strerror(err)}")


def replace_dir(tmp: str, path: str) -> None:
    """Make the finished folder ``tmp`` the folder ``path``, atomically (see the module doc).
    Concurrent calls for one ``path`` end with one of the new versions there, whole."""
    fsync_tree(tmp)
    path = os.path.abspath(path)
    parent = os.path.dirname(path)
    while True:
        if os.path.isdir(path) and _exchange(tmp, path):
            shutil.rmtree(tmp, ignore_errors=True)  # the old version
            break
        if not os.path.lexists(path):
            try:
                os.rename(tmp, path)  # fails if another writer created it meanwhile: swap then
                break
            except OSError as err:
                if err.errno not in (errno.EEXIST, errno.ENOTEMPTY):
                    raise
                continue
        if os.path.isdir(path) and _renameat2 is None:  # portable: old aside, new in, old away
            aside = tempfile.mkdtemp(prefix=f".{os.path.basename(path)}.old-", dir=parent)
            os.rmdir(aside)
            os.rename(path, aside)
            os.rename(tmp, path)
            shutil.rmtree(aside, ignore_errors=True)
            break
        if not os.path.isdir(path):
            raise NotADirectoryError(f"{path!r} exists and is not a folder; not replacing it")
    fsync_dir(parent)


def resolve(path: str) -> str:
    """``path``, or where a crash between the portable path's two renames left its previous
    version (``.<name>.old-*`` beside it)."""
    if os.path.exists(path):
        return path
    parent = os.path.dirname(os.path.abspath(path)) or "."
    prefix = f".{os.path.basename(os.path.abspath(path))}.old-"
    try:
        olds = [os.path.join(parent, n) for n in os.listdir(parent) if n.startswith(prefix)]
    except OSError:
        return path
    return max(olds, key=os.path.getmtime) if olds else path
