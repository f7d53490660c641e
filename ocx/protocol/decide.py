"""What one arrived artifact asks of this node (C1, C3, C4), from plain data.

The node reads the facts from Fossil (who sent it, where it is, which records
are open) and this returns the actions; nothing here does I/O.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .admission import holds_admin
from .answers import answers_record
from .deliveries import Delivery, change_delivery, checkin_delivery, post_delivery
from .errors import FieldError
from .finder import envelope, find_message
from .messages import Outcome, Record, Response, Stop, parse_message

POST, CHANGE, CHECKIN, OTHER = "post", "change", "checkin", "other"


@dataclass(frozen=True)
class Arrival:
    """One artifact as the repository describes it. `sender` is rcvfrom's (F2)."""

    hash: str
    kind: str  # POST, CHANGE, CHECKIN or OTHER
    sender: str | None
    sender_capabilities: frozenset[str] = frozenset()
    text: str = ""  # a post's body, or the comment a ticket change sets or appends
    place: str | None = None  # a post's thread root, or a change's ticket id (D12)
    edit_of: str | None = None
    pending_moderation: bool = False
    branch: str | None = None
    received: float = 0.0  # Unix seconds of its receipt
    rcvid: int = 0  # its receipt: order of arrival (D26)


@dataclass(frozen=True)
class OpenRecord:
    """A record of this node that has no response yet."""

    hash: str
    record: Record
    place: str
    received: float = 0.0
    rcvid: int = 0

    def precedes(self, arrival: Arrival) -> bool:
        """Only what arrived after the record reaches its run (D2: read again, deliver nothing old)."""
        return arrival.rcvid > self.rcvid


@dataclass(frozen=True)
class NodeFacts:
    server_code: str
    node_user: str
    open_records: tuple[OpenRecord, ...] = ()
    answered: frozenset[str] = frozenset()  # records that already have their response

    def open(self, record_hash: str) -> OpenRecord | None:
        return next((o for o in self.open_records if o.hash == record_hash), None)


@dataclass(frozen=True)
class Ignore:
    why: str


@dataclass(frozen=True)
class Refuse:
    record_hash: str
    place: str
    error: FieldError


@dataclass(frozen=True)
class Admit:
    """A well-formed record from an admin: the node's admission checks come next."""

    record_hash: str
    record: Record
    place: str


@dataclass(frozen=True)
class StopRun:
    record_hash: str
    by: str


@dataclass(frozen=True)
class Deliver:
    record_hash: str
    delivery: Delivery


@dataclass(frozen=True)
class RunCheckin:
    """A `command` record's program, once, on this check-in (C2, D18)."""

    record_hash: str
    checkin: str
    branch: str


@dataclass(frozen=True)
class Answered:
    """A response that closes an open record (the node's own, or D31's lost)."""

    record_hash: str
    outcome: Outcome
    by: str


Action = Ignore | Refuse | Admit | StopRun | Deliver | RunCheckin | Answered


def decide(arrival: Arrival, facts: NodeFacts) -> list[Action]:
    if arrival.kind == CHECKIN:
        return _checkin(arrival, facts) or [Ignore("no open record takes check-ins on this branch from this sender")]
    if arrival.kind not in (POST, CHANGE):
        return [Ignore(f"a {arrival.kind} artifact is neither a message nor a delivery")]
    if arrival.pending_moderation:
        return [Ignore("held for moderation (D28)")]
    if arrival.edit_of is not None:
        # D9: never a message; D44: from a user a record hears, in its place, a delivery like a post.
        return _conversation(arrival, facts) or [Ignore("an edit is never a message (C1, D9)")]
    found = find_message(arrival.text)
    if found is not None and envelope(found).is_for(facts.server_code):
        return [_message(arrival, found, facts)]
    return _conversation(arrival, facts) or [Ignore("not a message for this node, and no open record hears it here")]


def decide_late(arrival: Arrival, facts: NodeFacts, late: tuple[OpenRecord, ...]) -> list[Action]:
    """What ARRIVAL, already read while the records LATE were not open yet (their
    receipts waited on a retry), asks of them alone, now that they are: what
    `decide` would have given them had they opened in time (D2: a pass reading
    again from the start gives them the same). Nothing else: every other
    record was offered ARRIVAL when it was read, and nothing is admitted twice."""
    hashes = {opened.hash for opened in late}
    alone = NodeFacts(facts.server_code, facts.node_user, late, facts.answered - hashes)
    return [action for action in decide(arrival, alone)
            if isinstance(action, (Deliver, RunCheckin, StopRun, Answered)) and action.record_hash in hashes]


def may_act(arrival: Arrival, facts: NodeFacts) -> bool:
    """Whether `decide` could act on ARRIVAL whatever its text says. A post or
    a ticket change acts only as a message its sender may send (a record or
    a stop from an admin or setup sender, a response from the node user or
    an admin's `lost`: C1, C4, D31) or as a delivery in an open record's
    place (C3): from anyone else, elsewhere, decide ignores it, so a reader
    need not read its text (a pass after a lost mark reads years of forum)."""
    if arrival.kind not in (POST, CHANGE):
        return True
    if holds_admin(arrival.sender_capabilities) or arrival.sender == facts.node_user:
        return True
    return any(opened.place == arrival.place for opened in facts.open_records)


def _message(arrival: Arrival, found: dict[str, Any], facts: NodeFacts) -> Action:
    kind = found.get("kind")
    entitled = holds_admin(arrival.sender_capabilities)
    if kind == "record":
        if not entitled:
            return Ignore(f"record from {arrival.sender}, who holds neither admin nor setup (C1)")
        if arrival.hash in facts.answered or facts.open(arrival.hash):
            return Ignore("this record was acted on already (F3)")
        try:
            record = parse_message(found)
        except FieldError as error:
            return Refuse(arrival.hash, arrival.place or "", error)  # D8
        assert isinstance(record, Record)
        return Admit(arrival.hash, record, arrival.place or "")
    if kind == "stop":
        if not entitled:
            return Ignore(f"stop from {arrival.sender}, who holds neither admin nor setup (C1)")
        try:
            stop = parse_message(found)
        except FieldError as error:
            return Ignore(f"a malformed stop has no one to answer: {error}")
        assert isinstance(stop, Stop)
        if facts.open(stop.stops) is None:
            return Ignore(f"stop for {stop.stops[:12]}, which is not open here")
        return StopRun(stop.stops, arrival.sender or "")
    if kind == "response":
        return _response(arrival, found, facts, entitled)
    return Ignore(f"unknown kind {kind!r} (C7)")


def _response(arrival: Arrival, found: dict[str, Any], facts: NodeFacts, entitled: bool) -> Action:
    try:
        response = parse_message(found)
    except FieldError as error:
        return Ignore(f"malformed response: {error}")
    assert isinstance(response, Response)
    opened = facts.open(response.answers)
    if opened is None:
        return Ignore("response to a record that is not open here")
    if answers_record(response, opened.hash, arrival.sender, node_user=facts.node_user,
                      holds_admin=lambda _: entitled, received=arrival.received,
                      record_received=opened.received, wall_seconds=opened.record.budget.wall_seconds):
        return Answered(response.answers, response.outcome, arrival.sender or "")
    if entitled and response.outcome is Outcome.lost:
        return Ignore("a lost response before the record's receipt plus its wall (D31)")
    return Ignore(f"response from {arrival.sender}, not the node user (C1)")


def _checkin(arrival: Arrival, facts: NodeFacts) -> list[Action]:
    actions: list[Action] = []
    for opened in facts.open_records:
        record = opened.record
        if arrival.branch not in record.checkins or arrival.sender == record.user or not opened.precedes(arrival):
            continue  # C3: only its branches, never its own user's check-ins
        if record.is_command:
            actions.append(RunCheckin(opened.hash, arrival.hash, arrival.branch or ""))
        else:
            actions.append(Deliver(opened.hash,
                                   checkin_delivery(arrival.hash, arrival.branch or "", arrival.sender or "")))
    return actions


def _conversation(arrival: Arrival, facts: NodeFacts) -> list[Action]:
    actions: list[Action] = []
    for opened in facts.open_records:
        record = opened.record
        if record.is_command or opened.place != arrival.place or not opened.precedes(arrival):
            continue
        if arrival.sender not in record.hears or arrival.sender == record.user:
            continue
        if arrival.kind == POST:
            delivery = post_delivery(arrival.hash, arrival.sender, arrival.text)
        else:
            delivery = change_delivery(arrival.hash, arrival.place or "", arrival.sender, arrival.text)
        actions.append(Deliver(opened.hash, delivery))
    return actions
