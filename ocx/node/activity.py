"""`ocx activity` (D33): this node's open records, their units' live state,
and the latest responses. It reads only the repository and systemd, never
the node's own state directory, so it shows what any reader of the
repository would conclude, and works on a node whose state was lost.

A record is this node's when it is for this server-code and its sender
holds admin or setup now (C1); it is open until its answer: a response at
its place from the node user (C4), or a `lost` one from an admin or setup
sender after its receipt plus its wall (D31). Edits and posts held for
moderation are never messages (D9, D28).

The message models (pydantic) are imported only once a post or change
holds a message for this node: most of `ocx activity`'s start-up was
importing them, and asyncio (docs/node.md, 'The readers'); tests/reading/test_activity_imports.py.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from ..protocol.errors import FieldError
from ..protocol.finder import find_message
from .run_layout import unit_stem

if TYPE_CHECKING:
    from ..fossil.repository import Repository
    from ..protocol.messages import Message, Record
    from .json_answers import JsonObject

LATEST = 10
THREAD, TICKET = "thread", "ticket"  # D12: a record's place, as record_dirs.py names it


@dataclass(frozen=True)
class Placed:
    """A message for this node, where and from whom it arrived."""

    hash: str
    message: Message
    place_kind: str
    place: str
    sender: str | None  # rcvfrom (F2)
    received: datetime | None
    rcvid: int


@dataclass(frozen=True)
class UnitLine:
    name: str
    active_state: str
    sub_state: str


@dataclass
class OpenRecord:
    placed: Placed
    units: list[UnitLine] = field(default_factory=list)  # none: no unit (yet, or any more)

    @property
    def record(self) -> Record:
        from ..protocol.messages import Record

        assert isinstance(self.placed.message, Record)
        return self.placed.message


@dataclass
class Activity:
    node: str  # the server-code (C1)
    node_user: str
    open: list[OpenRecord]
    responses: list[Placed]  # the latest answers, oldest first
    systemd: str | None = None  # why systemd could not be read, when it could not


def node_messages(repository: Repository, server_code: str, senders: frozenset[str] | None = None) -> list[Placed]:
    """Every valid message for SERVER_CODE in posts and ticket changes (only
    those SENDERS sent, when given), in the order received."""
    found = []
    for post in repository.forum_posts(senders):
        if post.edit_of is None and not post.pending_moderation:
            found.append((post.hash, post.body, THREAD, post.root, post.sender))
    for change in repository.all_ticket_changes(senders):
        found.append((change.hash, change.comment or "", TICKET, change.ticket, change.sender))
    messages = []
    for hash_, text, kind, place, sender in found:
        obj = find_message(text)
        # `node` is validated as written (strict, no coercion): another node's message is not parsed.
        message = _parsed(obj) if obj is not None and obj.get("node") == server_code else None
        if message is None or message.node != server_code:
            continue
        messages.append(Placed(hash_, message, kind, place, sender.login, sender.time, sender.rcvid or 0))
    return sorted(messages, key=lambda placed: placed.rcvid)


def _parsed(obj: dict[str, Any]) -> Message | None:
    """messages.message_in's second half: the valid message, or None."""
    from ..protocol.messages import parse_message

    try:
        return parse_message(obj)
    except FieldError:
        return None


def _answers(response: Placed, record: Placed, node_user: str, admins: frozenset[str]) -> bool:
    from ..protocol.answers import answers_record
    from ..protocol.messages import Record, Response

    return (isinstance(response.message, Response) and response.place == record.place
            and answers_record(response.message, record.hash, response.sender, node_user=node_user,
                               holds_admin=admins.__contains__, received=_seconds(response.received),
                               record_received=_seconds(record.received),
                               wall_seconds=record.message.budget.wall_seconds
                               if isinstance(record.message, Record) else 0))


def _seconds(when: datetime | None) -> float:
    return when.timestamp() if when else 0.0


def read_activity(repository: Repository, node_user: str, latest: int = LATEST) -> Activity:
    """The repository's part: open records (no units yet) and the latest LATEST answers.

    Only what a sender entitled to it wrote can be this node's record (an
    admin or setup login, C1) or its answer (the node user, or an admin's
    `lost`, C4, D31), so only their posts and changes are read: the cost is
    theirs, not the forum's."""
    server_code = repository.server_code
    admins = repository.admins()
    messages = node_messages(repository, server_code, admins | {node_user})
    if not messages:  # nothing for this node: no message models needed
        return Activity(server_code, node_user, [], [])
    from ..protocol.messages import Record, Response

    records = [m for m in messages if isinstance(m.message, Record) and m.sender in admins]
    responses: dict[str, list[Placed]] = {}
    for placed in messages:
        if isinstance(placed.message, Response):
            responses.setdefault(placed.message.answers, []).append(placed)
    answers: dict[str, Placed] = {}
    for record in records:
        answer = next((r for r in responses.get(record.hash, []) if _answers(r, record, node_user, admins)), None)
        if answer is not None:
            answers[record.hash] = answer
    open_records = [OpenRecord(r) for r in records if r.hash not in answers]
    shown = sorted(answers.values(), key=lambda placed: placed.rcvid)[-latest:] if latest > 0 else []
    return Activity(server_code, node_user, open_records, shown)


def unit_patterns(server_code: str, record: str) -> list[str]:
    """A session's unit, and a command record's per-check-in units (D3)."""
    stem = unit_stem(server_code, record)
    return [f"{stem}.service", f"{stem}-*.service"]


def add_units(activity: Activity) -> Activity:
    """Each open record's units as systemd holds them now, through libsystemd's
    sd-bus as the page reads units (ocx/systemd/sd_bus.py): one
    ListUnitsByPatterns a record, without asyncio and dbus-next (docs/node.md, 'The readers').
    Where systemd cannot be asked (no system bus here), `activity.systemd` says why."""
    from ..systemd.errors import BusError, BusUnreadable
    from ..systemd.sd_bus import SystemBus

    try:
        with SystemBus() as bus:
            for entry in activity.open:
                entry.units = [UnitLine(u.name, u.active_state, u.sub_state)
                               for u in bus.units(unit_patterns(activity.node, entry.placed.hash))]
    except (BusUnreadable, BusError) as error:  # no bus, no permission, no systemd: say so, show the rest
        activity.systemd = f"{type(error).__name__}: {error}".strip()
    return activity


def activity_json(found: Activity) -> JsonObject:
    def placed_json(placed: Placed) -> JsonObject:
        return {"hash": placed.hash, "place_kind": placed.place_kind, "place": placed.place, "sender": placed.sender,
                "received": placed.received.isoformat() if placed.received else None}

    def record_json(entry: OpenRecord) -> JsonObject:
        record = entry.record
        return {**placed_json(entry.placed), "user": record.user, "runner": record.runner,
                "objective": record.objective, "checkins": list(record.checkins), "wall": record.budget.wall,
                "units": None if found.systemd else [u.__dict__ for u in entry.units]}

    def response_json(placed: Placed) -> JsonObject:
        from ..protocol.messages import Response

        message = placed.message
        assert isinstance(message, Response)
        return {**placed_json(placed), "answers": message.answers, "outcome": message.outcome.value,
                "note": message.note}

    return {"node": found.node, "node_user": found.node_user,
            "systemd": {"reachable": found.systemd is None, "why": found.systemd},
            "open": [record_json(e) for e in found.open], "responses": [response_json(p) for p in found.responses]}
