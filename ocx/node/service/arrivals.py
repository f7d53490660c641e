"""From the repository's receipts to the plain facts `decide` takes (F2, D26).

USER is always the sender from rcvfrom, never the U card (C3). A receipt
holds whatever one sync or one web form stored; only forum posts, ticket
changes and check-ins can be messages or deliveries.
"""
from __future__ import annotations

from ...fossil.records import Receipt, ReceivedArtifact
from ...fossil.repository import Repository
from ...protocol.answers import answers_record
from ...protocol.decide import CHANGE, CHECKIN, OTHER, POST, Arrival
from ...protocol.messages import Response, message_in

_KINDS = {"f": POST, "t": CHANGE, "ci": CHECKIN}


def capabilities_of(repository: Repository, login: str | None) -> frozenset[str]:
    if login is None:
        return frozenset()
    try:
        return repository.effective_capabilities(login)
    except Exception:  # a login deleted since: it holds nothing now
        return frozenset()


def arrival(repository: Repository, receipt: Receipt, stored: ReceivedArtifact) -> Arrival:
    # Read again: the receipt's list may predate Fossil's crosslinking (intake.settled).
    event_type = stored.event_type or repository.event_type(stored.hash)
    kind = _KINDS.get(event_type or "", OTHER)
    base = dict(hash=stored.hash, kind=kind, sender=receipt.sender,
                sender_capabilities=capabilities_of(repository, receipt.sender),
                received=receipt.time.timestamp(), rcvid=receipt.rcvid, pending_moderation=stored.private)
    if kind == POST:
        post = repository.post(stored.hash)
        return Arrival(**base, text=post.body, place=post.root, edit_of=post.edit_of)
    if kind == CHANGE:
        change = repository.ticket_change(stored.hash)
        return Arrival(**base, text=change.comment or "", place=change.ticket)
    if kind == CHECKIN:
        return Arrival(**base, branch=repository.checkin(stored.hash).branch)
    return Arrival(**base)


def responses_in_place(repository: Repository, place_kind: str, place: str) -> list[tuple[Response, str | None, float]]:
    """Every response message in a place, with its sender and receipt time (C4, D31)."""
    if place_kind == "thread":
        texts = [(p.body, p.sender.login, p.sender.time, p.edit_of, p.pending_moderation) for p in repository.thread(place)]
    else:
        texts = [(c.comment or "", c.sender.login, c.sender.time, None, False) for c in repository.ticket_changes(place)]
    found = []
    for text, sender, time, edit_of, pending in texts:
        response = message_in(text) if edit_of is None and not pending else None
        if isinstance(response, Response):
            found.append((response, sender, time.timestamp() if time else 0.0))
    return found


def answer_in_place(repository: Repository, place_kind: str, place: str, record_hash: str, *, node: str,
                    node_user: str, received: float, wall_seconds: int) -> Response | None:
    """The response that answers RECORD_HASH, if one was written: the node
    user's, or an admin's `lost` after the record's receipt plus its wall (D31)."""
    for response, sender, time in responses_in_place(repository, place_kind, place):
        if response.node == node and answers_record(
                response, record_hash, sender, node_user=node_user, holds_admin=repository.holds_admin,
                received=time, record_received=received, wall_seconds=wall_seconds):
            return response
    return None
