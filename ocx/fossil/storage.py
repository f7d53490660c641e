"""How Fossil stores an artifact's bytes in `blob.content`, decoded in Python.

Each stored value is a 4-byte big-endian size followed by zlib data. A blob
listed in the `delta` table stores a delta against another blob (`srcid`),
which may itself be a delta: its content is the chain applied from the one
stored whole (fossil-facts.md "Repositories and clones").
The connection comes from repository.py, the only code that opens one.

Every blob is a run's to write (Fossil's `i` admits any artifact, D41), and
a file of zeros is a thousandth of its size compressed: a blob's size is
read from `blob.size` before its content, nothing larger than the caller's
bound is read, and inflating never goes past the size the prefix states.
"""
from __future__ import annotations

import sqlite3
import zlib

from ocx.fossil.delta import apply_delta

from .errors import FossilLayerError

# A chain longer than this is a loop in a damaged repository.
MAX_DELTA_CHAIN = 100_000
# The largest artifact root's side decodes whole: posts, ticket and tag changes, wiki pages are
# far smaller (a record's post is a few KiB); a check-in's manifest is never decoded (reads.py).
MAX_ARTIFACT_BYTES = 8 * 1024 * 1024


class StorageError(FossilLayerError, ValueError):
    """A blob that is missing, a phantom, or does not decode."""


class TooLarge(StorageError):
    """A blob larger than the reader's bound: never read (module doc)."""


def decompress(stored: bytes, limit: int = MAX_ARTIFACT_BYTES) -> bytes:
    """Undo Fossil's blob compression: 4-byte big-endian size, then zlib, never
    inflating past the size stated (at most LIMIT): a bomb stops there."""
    if len(stored) < 4:
        raise StorageError("stored content shorter than its size prefix")
    size = int.from_bytes(stored[:4], "big")
    if size > limit:
        raise TooLarge(f"stored content states {size} bytes, past the bound of {limit}")
    inflater = zlib.decompressobj()
    try:
        data = inflater.decompress(stored[4:], size + 1)
    except zlib.error as error:
        raise StorageError(f"stored content does not decompress: {error}") from None
    if len(data) != size:
        raise StorageError(f"decompressed {len(data)} bytes or more, the prefix says {size}")
    return data


def size_of(connection: sqlite3.Connection, rid: int) -> int:
    """`blob.size` of RID: its bytes once whole, read without its content (-1: a phantom)."""
    row = connection.execute("SELECT size FROM blob WHERE rid=?", (rid,)).fetchone()
    if row is None:
        raise StorageError(f"no blob with rid {rid}")
    return int(row[0])


def content(connection: sqlite3.Connection, rid: int, limit: int = MAX_ARTIFACT_BYTES) -> bytes:
    """The full bytes of blob RID, following its delta chain; TooLarge, with
    nothing read, when it or a blob of its chain is larger than LIMIT."""
    chain: list[bytes] = []  # deltas, newest-applied last
    current = rid
    while True:
        size = size_of(connection, current)
        if size > limit:
            raise TooLarge(f"blob {current} is {size} bytes, past the bound of {limit}")
        row = connection.execute(
            "SELECT b.content, d.srcid FROM blob b LEFT JOIN delta d ON d.rid=b.rid"
            " WHERE b.rid=?",
            (current,),
        ).fetchone()
        if row is None:
            raise StorageError(f"no blob with rid {current}")
        stored, source = row
        if stored is None:
            raise StorageError(f"blob {current} is a phantom (content not received)")
        if source is None:
            break
        chain.append(decompress(stored, limit))
        current = source
        if len(chain) > MAX_DELTA_CHAIN:
            raise StorageError(f"delta chain from rid {rid} does not end")
    data = decompress(stored, limit)
    for delta in reversed(chain):
        data = apply_delta(data, delta, limit)
    return data


def hash_matches(hash_: str, data: bytes) -> bool:
    """Whether DATA is what HASH names: SHA1 for 40 digits, SHA3-256 for 64."""
    import hashlib  # here, as manifest.parse: not on a run's preparation's way

    if len(hash_) == 40:
        return hashlib.sha1(data).hexdigest() == hash_
    if len(hash_) == 64:
        return hashlib.sha3_256(data).hexdigest() == hash_
    return False
