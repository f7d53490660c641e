"""Messages in their places (C1, D12), read for the tools: the record a
`stop` names, whether it has its answer, and where a reply goes."""
from __future__ import annotations

from dataclasses import dataclass

from ..fossil.artifacts import Sender
from ..fossil.errors import WrongKind
from ..fossil.repository import Repository
from ..protocol.answers import answers_record
from ..protocol.errors import FieldError
from ..protocol.messages import Message, Record, Response, message_in

FORUM, TICKET = "forum", "ticket"


@dataclass(frozen=True)
class Placed:
    hash: str
    message: Message | None
    place: str  # the thread's root post, or the ticket's id (D12)
    kind: str  # FORUM or TICKET
    sender: Sender


def placed(repository: Repository, hash_: str) -> Placed | None:
    """The post or ticket change HASH, with the message it holds; None if it is neither."""
    try:
        post = repository.post(hash_)
        text, place, kind, sender = post.body, post.root, FORUM, post.sender
    except WrongKind:
        try:
            change = repository.ticket_change(hash_)
        except WrongKind:
            return None
        text, place, kind, sender = change.comment or "", change.ticket, TICKET, change.sender
    return Placed(hash_, message_in(text), place, kind, sender)


def messages_in(repository: Repository, where: Placed) -> list[Placed]:
    """Every message at WHERE's place, in the order received."""
    if where.kind == FORUM:
        hashes = [p.hash for p in repository.thread(where.place) if not p.pending_moderation]
    else:
        hashes = [c.hash for c in repository.ticket_changes(where.place)]
    return [p for p in (placed(repository, h) for h in hashes) if p is not None and p.message is not None]


def the_record(repository: Repository, hash_: str, field: str) -> Placed:
    """HASH as a record, or FieldError naming FIELD."""
    where = placed(repository, hash_)
    if where is None or not isinstance(where.message, Record):
        raise FieldError(field, f"{hash_} is not a post or ticket change holding a record (C1)")
    return where


def answer_of(repository: Repository, record: Placed, node_user: str) -> Placed | None:
    """The response at the record's place that answers it, if any: sent by
    the node user (C4), or a `lost` one by an admin or setup sender (D31)."""
    wall = record.message.budget.wall_seconds if isinstance(record.message, Record) else 0
    for other in messages_in(repository, record):
        if isinstance(other.message, Response) and answers_record(
                other.message, record.hash, other.sender.login, node_user=node_user,
                holds_admin=repository.holds_admin, received=_seconds(other.sender),
                record_received=_seconds(record.sender), wall_seconds=wall):
            return other
    return None


def _seconds(sender: Sender) -> float:
    return sender.time.timestamp() if sender.time else 0.0
