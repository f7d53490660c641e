"""Root reads a blob's size before its content and never decodes one past its bound (storage.py):
a run's file of zeros, 32 MiB whole and a few KiB stored, is never read whole, not even to see
whether it is a post being crosslinked (Repository.awaiting_crosslink); and inflating stops at the
size the stored prefix states, so a bomb cannot grow memory."""
from __future__ import annotations

import hashlib
import tracemalloc
import zlib

import pytest

from ocx.fossil.delta import DeltaError, apply_delta
from ocx.fossil.repository import FORM_POST_BYTES
from ocx.fossil.storage import MAX_ARTIFACT_BYTES, StorageError, TooLarge, decompress

ZEROS = 32 * 1024 * 1024


@pytest.mark.fossil
def test_a_large_blob_of_zeros_a_run_pushed_is_never_read_whole(served):
    served.commit("alice", "zeros.bin", "\0" * ZEROS)  # alice holds `i`, as a run user does
    blob = hashlib.sha3_256(b"\0" * ZEROS).hexdigest()
    statements: list[str] = []
    with served.repository() as repository:
        assert repository.event_type(blob) is None  # a file: no event row, as a post awaiting its crosslink
        stored = served.sql("SELECT length(content) FROM blob WHERE uuid=?", (blob,))[0][0]
        assert stored < ZEROS // 100  # what came on the wire is a thousandth of it
        repository._db.set_trace_callback(statements.append)
        assert repository.size(blob) == ZEROS
        assert not repository.awaiting_crosslink(blob)
        with pytest.raises(TooLarge):
            repository.artifact(blob)
        read = [sql for sql in statements if "content" in sql]
        assert read == [], read  # only `blob.size` was asked: the content never left SQLite
        repository._db.set_trace_callback(None)
        assert repository.artifact(blob, limit=ZEROS) == b"\0" * ZEROS  # the control: read when allowed
    assert FORM_POST_BYTES < ZEROS and MAX_ARTIFACT_BYTES < ZEROS


def test_a_bomb_inflates_no_further_than_its_stated_size():
    bomb = zlib.compress(b"\0" * (64 * 1024 * 1024), 9)
    lying = (1000).to_bytes(4, "big") + bomb  # states 1,000 bytes, holds 64 MiB
    tracemalloc.start()
    try:
        with pytest.raises(StorageError, match="the prefix says 1000"):
            decompress(lying)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 1024 * 1024, peak
    honest = (64 * 1024 * 1024).to_bytes(4, "big") + bomb
    with pytest.raises(TooLarge):
        decompress(honest)  # states more than the bound: not inflated at all
    assert decompress(honest, limit=64 * 1024 * 1024) == b"\0" * (64 * 1024 * 1024)


def test_a_delta_stating_a_target_past_the_bound_builds_nothing():
    delta = b"4000000\n" + b"1:x" + b"0;"  # base-64 digits: a target of 2^26 bytes and more
    with pytest.raises(DeltaError, match="past the bound"):
        apply_delta(b"", delta, limit=MAX_ARTIFACT_BYTES)
