"""A run's clone, read by the node (as root, in the tool service) without
trusting anything in it (C6, D22, D41).

The clone is the run's own file, in a directory the run writes. The node
opens it once without following a link (a link to another run's clone, or to
a root-only file, is refused), without blocking (a FIFO is refused), and
takes it only when it is a regular file of the run's own with one name. It
then reads that open file, through /proc/self/fd, so a rename the run makes
meanwhile changes nothing: as SQLite, immutable (no lock, no journal), the
schema untrusted (`trusted_schema` off; `blob` and `delta` must be plain
tables), every value bounded in size and every query in time.

Nothing the clone's tables say is believed: an artifact's bytes are rebuilt
from their stored form within size bounds (storage.py's format) and kept
only when they hash to the name they are stored under. What those bytes are
(a check-in, its branch, the files it needs) is decided from the bytes
themselves (push_plan.py).
"""
from __future__ import annotations

import os
import sqlite3
import stat
import time
from pathlib import Path
from typing import Any

from ocx.fossil.delta import DeltaError, apply_delta
from ocx.fossil.storage import StorageError, TooLarge, decompress, hash_matches

from .errors import FossilLayerError

# One artifact, stored or rebuilt: the cap on what a run user may send (D41; docs/security.md, 'Class 9'); the
# server's node shuns larger ones sent past this tool (node/oversized.py).
MAX_ARTIFACT_BYTES = 64 * 1024 * 1024
MAX_BLOBS = 2_000_000  # rows of `blob` looked at
MAX_CHAIN = 2_000  # deltas applied to rebuild one artifact
MAX_SECONDS = 60.0  # all the reading of one push
_HASH_LENGTHS = (40, 64)


class CloneRefused(FossilLayerError):
    """The clone cannot be read as a run's own clone: WHY says what it is."""


class RunClone:
    """One opened clone file. Use as a context manager."""

    def __init__(self, path: Path | str, *, owner: int | None = None, seconds: float = MAX_SECONDS):
        """Open PATH (its last component never followed); OWNER: the uid
        that must own it (the run's), by default the owner of its directory."""
        path = Path(path)
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY)
        except OSError as error:
            # ELOOP: the name is a symbolic link; never followed (D41).
            why = "it is a link, and only the run's own file is read" if error.errno == 40 else error.strerror
            raise CloneRefused(f"{path.name} cannot be opened: {why}") from None
        self._fd = fd
        try:
            info = os.fstat(fd)
            expected = owner if owner is not None else os.lstat(path.parent).st_uid
            if not stat.S_ISREG(info.st_mode):
                raise CloneRefused(f"{path.name} is not a regular file")
            if info.st_nlink != 1:
                raise CloneRefused(f"{path.name} has {info.st_nlink} names: a hard link is not the run's own file")
            if info.st_uid != expected:
                raise CloneRefused(f"{path.name} is owned by uid {info.st_uid}, not the run's ({expected})")
            self._deadline = time.monotonic() + seconds
            self._db = sqlite3.connect(f"file:/proc/self/fd/{fd}?mode=ro&immutable=1", uri=True,
                                       check_same_thread=False)
            self._db.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, MAX_ARTIFACT_BYTES + 64)
            self._db.set_progress_handler(self._over_time, 10_000)
            for pragma in ("trusted_schema=OFF", "query_only=1", "cache_size=-8192", "mmap_size=0"):
                self._db.execute(f"PRAGMA {pragma}")
            self._check_schema()
        except (sqlite3.Error, CloneRefused) as error:
            self.close()
            raise error if isinstance(error, CloneRefused) else CloneRefused(f"not a readable clone: {error}") from None

    def _over_time(self) -> int:
        return 1 if time.monotonic() > self._deadline else 0  # nonzero: SQLite stops the query

    def _check_schema(self) -> None:
        kinds = {name: (kind, sql or "") for name, kind, sql in self._db.execute(
            "SELECT name, type, sql FROM sqlite_schema WHERE name IN ('blob', 'delta')")}
        for name in ("blob", "delta"):
            kind, sql = kinds.get(name, ("missing", ""))
            if kind != "table" or sql.lstrip().upper().startswith("CREATE VIRTUAL"):
                raise CloneRefused(f"its {name} is not a table ({kind})")

    def _query(self, sql: str, params: tuple[object, ...] = ()) -> list[tuple[Any, ...]]:
        try:
            return self._db.execute(sql, params).fetchall()
        except sqlite3.Error as error:
            raise CloneRefused(f"not a readable clone: {error}") from None

    def stored(self) -> list[tuple[int, str]]:
        """(rid, name) of every blob stored with content under a well-formed name."""
        rows = self._query(
            "SELECT rid, uuid FROM blob WHERE typeof(rid)='integer' AND typeof(uuid)='text'"
            " AND length(uuid) IN (40, 64) AND content IS NOT NULL LIMIT ?", (MAX_BLOBS + 1,))
        if len(rows) > MAX_BLOBS:
            raise CloneRefused(f"it holds more than {MAX_BLOBS} artifacts")
        return [(rid, name) for rid, name in rows if all(c in "0123456789abcdef" for c in name)]

    def artifact(self, rid: int, name: str) -> bytes:
        """The bytes stored as RID, rebuilt and checked against NAME."""
        chain: list[bytes] = []
        current, seen = rid, set()
        while True:
            rows = self._query("SELECT b.content, d.srcid FROM blob b LEFT JOIN delta d ON d.rid=b.rid"
                               " WHERE b.rid=? LIMIT 1", (current,))
            if not rows or not isinstance(rows[0][0], bytes):
                raise CloneRefused(f"{name[:12]}'s content is missing from the clone")
            stored, source = rows[0]
            if source is None:
                break
            if source in seen or len(chain) >= MAX_CHAIN:
                raise CloneRefused(f"{name[:12]}'s deltas do not end")
            seen.add(current)
            chain.append(_inflate(stored, name))
            current = source
        data = _inflate(stored, name)
        for delta in reversed(chain):
            try:
                rebuilt = apply_delta(data, delta) if _delta_size(delta) <= MAX_ARTIFACT_BYTES else None
            except DeltaError as error:
                raise CloneRefused(f"{name[:12]} does not rebuild: {error}") from None
            if rebuilt is None:
                raise CloneRefused(f"{name[:12]} is larger than {MAX_ARTIFACT_BYTES} bytes")
            data = rebuilt
        if not hash_matches(name, data):
            raise CloneRefused(f"{name[:12]}: the bytes stored under this name do not hash to it")
        return data

    def close(self) -> None:
        db: sqlite3.Connection | None = getattr(self, "_db", None)
        if db is not None:
            db.close()
            del self._db  # closed once: a second close finds none
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def __enter__(self) -> RunClone:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()


def _inflate(stored: bytes, name: str) -> bytes:
    """Fossil's stored form (4-byte size, then zlib), never past the bound (storage.decompress)."""
    try:
        return decompress(stored, MAX_ARTIFACT_BYTES)
    except TooLarge:
        raise CloneRefused(f"{name[:12]} is stored with a size past {MAX_ARTIFACT_BYTES}") from None
    except StorageError as error:
        raise CloneRefused(f"{name[:12]}: {error}") from None


def _delta_size(delta: bytes) -> int:
    """The output size a delta states in its first line (delta.py's format)."""
    digits = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ_abcdefghijklmnopqrstuvwxyz~"
    value = 0
    for byte in delta[:12]:
        if chr(byte) not in digits:
            break
        value = (value << 6) + digits.index(chr(byte))
    return value
