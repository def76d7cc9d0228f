"""A checked, memory-mapped file beside a store: what the graph index file (`graph/index.py`) and the vector
matrix file (`vecfile.py`) are written as and read back through.

Layout: magic (8 bytes), the header's length and its crc32 (8 bytes each), the header as JSON (format, the
store's id, the counter the file was read at, and per section its dtype, count, offset, length and checksum),
then the sections, each aligned to ALIGN bytes.

Crash safety: a file is written whole under a temporary name, synced, then renamed over the old one, so a
reader sees the old file or the new one. A reader checks the magic, the format, the header's checksum, the
size and every section's checksum, that the file is of this store and not ahead of its counter; a file that
fails any check is not used (`Rejected` says why). One writer at a time (`writer_lock`, an advisory lock
beside the file); readers take no lock.
"""

from __future__ import annotations

import fcntl
import json
import mmap
import os
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import NamedTuple

import numpy as np

__all__ = ["Rejected", "map_file", "remove_leftovers", "strings", "write", "writer_lock"]

ALIGN = 64


class Rejected(NamedTuple):
    """Why a file at the path was not used (`mnemon status`)."""

    path: Path
    reason: str
    identity: tuple[int, int, int] | None = None


def _digest(buf: memoryview | bytes) -> str:
    """Sum and xor of the section's 64-bit words (it is padded to 8 bytes): any flipped bit or zeroed page
    changes it, and numpy reads a gigabyte in about a second on this class of machine (crc32: five)."""
    words = np.frombuffer(buf, dtype="<u8")
    return f"{int(words.sum(dtype=np.uint64)):016x}{int(np.bitwise_xor.reduce(words)) if words.size else 0:016x}"


def strings(values: list[str]) -> np.ndarray:
    """Texts as one fixed-width UTF-8 column (a section)."""
    enc = [v.encode() for v in values]
    width = max((len(e) for e in enc), default=1) or 1
    return np.array(enc, dtype=f"S{width}")


# ---------------------------------------------------------------------------------------------- reading


def map_file(
    path: Path, magic: bytes, fmt: int, *, uid: int | None, counter: int, copy: bool = False
) -> tuple[mmap.mmap, dict, tuple[int, int, int]] | Rejected | None:
    """(mapping, header, identity) of a checked file written by `write` (this magic and format, this store,
    its "counter" not ahead of `counter`); `copy`: a private copy-on-write mapping the caller may write to.
    None without a file."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return None
    except OSError as e:
        return Rejected(path, f"unreadable: {e.strerror}")
    try:
        st = os.fstat(fd)
        if st.st_size < 24:
            return Rejected(path, "torn: shorter than its header")
        mm = mmap.mmap(fd, 0, access=mmap.ACCESS_COPY if copy else mmap.ACCESS_READ)
    except (OSError, ValueError) as e:
        return Rejected(path, f"unreadable: {e}")
    finally:
        os.close(fd)
    reason = _check(mm, st.st_size, magic, fmt)
    if isinstance(reason, str):
        mm.close()
        return Rejected(path, reason)
    header = reason
    if uid is None or header["uid"] != uid:
        mm.close()
        return Rejected(path, "written for another store")
    if header["counter"] > counter:
        mm.close()
        return Rejected(path, f"ahead of the store (counter {header['counter']} > {counter})")
    return mm, header, (st.st_ino, st.st_mtime_ns, st.st_size)


def _check(mm: mmap.mmap, size: int, magic: bytes, fmt: int) -> dict | str:
    """The header when the file is whole, else what is wrong with it."""
    if mm[:8] != magic:
        return "not an index file (bad magic)"
    n = int.from_bytes(mm[8:16], "little")
    crc = int.from_bytes(mm[16:24], "little")
    if 24 + n > size:
        return "torn: header runs past the end"
    raw = mm[24 : 24 + n]
    if zlib.crc32(raw) != crc:
        return "damaged: header checksum"
    try:
        header = json.loads(raw)
    except ValueError:
        return "damaged: header unreadable"
    if header.get("format") != fmt:
        return f"format {header.get('format')} (this release reads {fmt})"
    if header.get("size") != size:
        return f"torn: {size} bytes, header says {header.get('size')}"
    for name, (dtype, count, offset, nbytes, digest) in header["sections"].items():
        padded = (nbytes + 7) // 8 * 8
        if offset + padded > size or count * np.dtype(dtype).itemsize != nbytes:
            return f"damaged: section {name} out of bounds"
        if _digest(memoryview(mm)[offset : offset + padded]) != digest:
            return f"damaged: section {name} checksum"
    return header


# ---------------------------------------------------------------------------------------------- writing


@contextmanager
def writer_lock(path: Path) -> Iterator[bool]:
    """One writer of the file at a time: True when this process holds the lock (False: another is writing,
    or the directory is not writable)."""
    try:
        fd = os.open(str(path) + ".lock", os.O_RDWR | os.O_CREAT, 0o644)
    except OSError:
        yield False
        return
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            yield False
            return
        yield True
    finally:
        os.close(fd)


def write(path: Path, header: dict, sections: dict[str, np.ndarray], magic: bytes) -> int:
    """Header and sections to a temporary file, synced, renamed over `path`; the file's size."""
    layout: dict[str, list] = {}
    blobs: list[tuple[int, bytes]] = []
    offset = 0
    for name, arr in sections.items():
        arr = np.ascontiguousarray(arr)
        data = arr.tobytes()
        padded = data + b"\0" * (-len(data) % 8)
        layout[name] = [arr.dtype.str, int(arr.shape[0]), offset, len(data), _digest(padded)]
        blobs.append((offset, padded))
        offset += len(padded) + (-len(padded) % ALIGN)
    # Sections start after a header region sized for the JSON with room for the offsets' digits.
    rel = json.dumps({**header, "sections": layout, "size": offset}).encode()
    base = 24 + len(rel) + 32 * (len(layout) + 1)
    base += -base % ALIGN
    size = base + offset
    head = {**header, "sections": {k: [v[0], v[1], base + v[2], v[3], v[4]] for k, v in layout.items()}, "size": size}
    raw = json.dumps(head).encode()
    assert 24 + len(raw) <= base
    tmp = path.with_name(f"{path.name}.tmp-{os.getpid()}")
    with open(tmp, "wb") as f:
        f.write(magic + len(raw).to_bytes(8, "little") + zlib.crc32(raw).to_bytes(8, "little") + raw)
        f.write(b"\0" * (base - 24 - len(raw)))
        for off, blob in blobs:
            f.seek(base + off)
            f.write(blob)
        f.truncate(size)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    try:
        dfd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)
    except OSError:
        pass
    return size


def remove_leftovers(path: Path) -> None:
    """Temporary files of writers that died (kill -9 during a write)."""
    for p in path.parent.glob(path.name + ".tmp-*"):
        try:
            pid = int(p.name.rsplit("-", 1)[1])
        except ValueError:
            continue
        if pid == os.getpid() or not _alive(pid):
            p.unlink(missing_ok=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
