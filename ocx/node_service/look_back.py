"""A record opened late hears what came after its receipt (D2, D18; docs/node.md, 'Faults').

A record whose receipt failed for a while (intake's retry list: its
server's node did not answer, say) opens when a later pass reads that
receipt again. The pass has read on meanwhile: a check-in on its branch, a
post in its place, a stop for it, received after it, were read while it
was not open, and acted on for the records open then only. When a retried
receipt finds its record open, the node reads those receipts again, from
the record's up to the mark, for that record alone (decide.decide_late),
so its queue and inbox are what they would be had it opened in time, and
what a pass reading again from the start (a lost mark) would give it.

Nothing is done twice: a check-in joins a queue once and a delivery drops
into an inbox once (by hash), no record is admitted here, and the other
open records are not offered anything again. The look back runs each time
the record's receipt is read again, so a pass cut off after the record
opened (its receipt still on the list) looks back on the next; anything in
it that fails keeps the record's receipt on the list, within its bound.
Read only from the repository and the server's node, never from a run (D41).
"""
from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from ..fossil.repository import Repository
from ..node.arrivals import ReceiptReader
from ..node.faults import describe
from ..node.record_dirs import acting_records
from ..protocol.decide import Action, Arrival, NodeFacts, OpenRecord, decide_late
from .context import NodeContext

if TYPE_CHECKING:
    from .tend import PassReport

Act = Callable[[NodeContext, Repository, Arrival, Action, "PassReport"], Awaitable[None]]


def opened_by(context: NodeContext, rcvid: int) -> tuple[OpenRecord, ...]:
    """The records open, and still heard, that receipt RCVID brought."""
    found = []
    for record_dir in acting_records(context.config):
        opened = record_dir.load()[0]
        if opened.rcvid == rcvid:
            found.append(opened)
    return tuple(found)


def _letters_of(letters: dict[str, frozenset[str]]) -> Callable[[str | None], frozenset[str]]:
    return lambda login: letters.get(login or "", frozenset())


async def look_back(context: NodeContext, repository: Repository, rcvid: int, upto: int, act: Act,
                    report: PassReport) -> list[tuple[str, BaseException]]:
    """What the receipts after RCVID up to UPTO (the mark: all read already) ask
    of the records receipt RCVID opened, done; what failed, by artifact."""
    late = opened_by(context, rcvid)
    if not late or upto <= rcvid:
        return []
    facts = NodeFacts(context.server_code, context.config.node_user, late)
    failed: list[tuple[str, BaseException]] = []
    after = rcvid
    while after < upto:
        # The served node's own or, elsewhere, the server's (D37): the same receipts a pass read.
        try:
            ready, letters, waiting = context.served.receipts(repository, after)
        except Exception as unanswered:  # its server's node not answering, say: read again with its receipt
            failed.append(("", unanswered))
            break
        ready = [receipt for receipt in ready if receipt.rcvid <= upto]
        if not ready:
            if waiting:  # read already once, so not for long: the record's receipt is read again soon
                failed.append(("", TimeoutError(f"receipts after {after} are not ready yet")))
            break
        reader = ReceiptReader(repository, ready, _letters_of(letters))
        for receipt in ready:
            for stored in receipt.artifacts:
                try:
                    came = reader.arrival(receipt, stored, facts)
                except Exception as unreadable:
                    failed.append((stored.hash, unreadable))
                    continue
                if came is None:
                    continue  # neither message nor delivery
                for action in decide_late(came, facts, late):
                    try:
                        await act(context, repository, came, action, report)
                    except Exception as trouble:  # one action's trouble stops no other
                        failed.append((stored.hash, trouble))
        after = ready[-1].rcvid
    for hash_, what in failed:
        context.log(f"looking back from receipt {rcvid}: {hash_[:12] or 'reading'} failed: {describe(what)}",
                    record=late[0].hash, priority=4)
    context.log(f"opened late: read receipts {rcvid + 1} to {after} again for it", record=late[0].hash)
    return failed
