"""A size cap on what run users send (D41; docs/security.md, 'Class 9'): the server's node shuns, before any
pull can carry it, every artifact larger than RUN_ARTIFACT_BYTES that a run user sent.

A run holds Fossil's `i`, which admits any artifact of any size; 200 MB of zeros is 200 KB on the
wire. Fossil 2.21 has no server-side limit (`max-upload` bounds what a client sends in one round
trip, set by the client: the pusher's own), so the node acts on receipt. Each pass, on the
receipts it is about to read, it asks `blob.size` (no content) and shuns what a run user (a login
whose contact names a node it works for, D37; runs of nodes elsewhere too, which push here) sent
past the cap: the server then sends it to no clone or pull (the runs' clone, a node elsewhere, a
run's own), and drops it if pushed again. A check-in that holds such a file cannot be checked out
whole; its run, if any, fails, and nothing else does.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..fossil import admin
from ..fossil.errors import FOSSIL_FAILURES
from ..fossil.run_clone import MAX_ARTIFACT_BYTES as RUN_ARTIFACT_BYTES
from .faults import describe
from .serving.ownership import works_for_text

if TYPE_CHECKING:
    from ..fossil.repository import Repository
    from .config import NodeConfig
    from .node_log import NodeLog


def refuse_oversized(config: NodeConfig, repository: Repository, after: int, upto: int,
                     log: NodeLog) -> list[str]:
    """Shun what run users sent past the cap in receipts AFTER < rcvid <= UPTO; the hashes shunned.
    Called by each pass on the receipts it reads (intake.py), and before each pull into the runs'
    clone on the receipts it would carry (template.py): whichever comes first."""
    found = [(hash_, size, login) for hash_, size, login, contact in
             repository.larger_than(RUN_ARTIFACT_BYTES, after, upto) if works_for_text(contact) is not None]
    if not found:
        return []
    hashes = [hash_ for hash_, _, _ in found]
    try:
        admin.shun(config.repository, hashes, home=config.state_dir / "home")
    except FOSSIL_FAILURES as error:  # the file busy past Fossil's wait, say: pulls stay bounded by their scope
        log(f"cannot shun {len(hashes)} oversized artifacts: {describe(error)}", priority=3)
        return []
    for hash_, size, login in found:
        log(f"shunned {hash_}: {size} bytes sent by run user {login}, past the cap of "
                    f"{RUN_ARTIFACT_BYTES} (D41)", record=hash_, priority=4)
    return hashes
