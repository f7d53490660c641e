"""How Fossil stores an artifact's bytes in `blob.content`, decoded in Python.

Each stored value is a 4-byte big-endian size followed by zlib data. A blob
listed in the `delta` table stores a delta against another blob (`srcid`),
which may itself be a delta: its content is the chain applied from the one
stored whole (fossil-facts.md "Repositories and clones").
The connection comes from repository.py, the only code that opens one.
"""
from __future__ import annotations

import sqlite3
import zlib

from ocx.fossil.delta import apply_delta
from .errors import FossilLayerError

# A chain longer than this is a loop in a damaged repository.
MAX_DELTA_CHAIN = 100_000


class StorageError(FossilLayerError, ValueError):
    """A blob that is missing, a phantom, or does not decode."""


def decompress(stored: bytes) -> bytes:
    """Undo Fossil's blob compression: 4-byte big-endian size, then zlib."""
    if len(stored) < 4:
        raise StorageError("stored content shorter than its size prefix")
    size = int.from_bytes(stored[:4], "big")
    data = zlib.decompress(stored[4:])
    if len(data) != size:
        raise StorageError(f"decompressed {len(data)} bytes, the prefix says {size}")
    return data


def content(connection: sqlite3.Connection, rid: int) -> bytes:
    """The full bytes of blob RID, following its delta chain."""
    chain: list[bytes] = []  # deltas, newest-applied last
    current = rid
    while True:
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
        chain.append(decompress(stored))
        current = source
        if len(chain) > MAX_DELTA_CHAIN:
            raise StorageError(f"delta chain from rid {rid} does not end")
    data = decompress(stored)
    for delta in reversed(chain):
        data = apply_delta(data, delta)
    return data


def hash_matches(hash_: str, data: bytes) -> bool:
    """Whether DATA is what HASH names: SHA1 for 40 digits, SHA3-256 for 64."""
    import hashlib  # here, as manifest.parse: not on a run's preparation's way

    if len(hash_) == 40:
        return hashlib.sha1(data).hexdigest() == hash_
    if len(hash_) == 64:
        return hashlib.sha3_256(data).hexdigest() == hash_
    return False
