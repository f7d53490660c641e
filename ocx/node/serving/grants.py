"""Run users' letters and passwords for nodes elsewhere (C5, D19, D37, D40).

Only the server's node holds admin on the served repository's users (D37):
a node elsewhere asks its page, as its node user, for the user of a record
naming it; the page checks the record in the served repository (a record
for that node, sent by an admin or setup, not answered), the user (new or
holding nothing, never a special login or a node user, working for no
other node), then gives it exactly D19's letters and a new random
password, which goes back in the answer's body only: never in an artifact,
a command line or a log. Withdrawing takes every letter back once the
record is answered (C4). One grant at a time (a lock beside the repository),
so two nodes asking for one user at once cannot both have it.
"""
from __future__ import annotations

import fcntl
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from ...fossil import admin
from ...fossil.errors import RepositoryError, UnknownArtifact, UnknownUser, WrongKind
from ...fossil.repository import Repository
from ...protocol.admission import SPECIAL_LOGINS
from ...protocol.errors import FieldError
from ...protocol.messages import Record, message_in
from ..arrivals import answer_in_place
from ..letters import RUN_USER_CAPABILITIES
from . import ownership, registry
from .registry import NodeEntry


@dataclass(frozen=True)
class Placed:
    """A record as the served repository holds it."""

    hash: str
    record: Record
    place_kind: str  # thread or ticket (D12)
    place: str
    sender: str | None  # rcvfrom (F2)
    received: float


def placed_record(repository: Repository, record_hash: str) -> Placed:
    """RECORD_HASH as a record in the served repository; FieldError("record") if it is none."""
    try:
        kind = repository.event_type(record_hash)
        if kind == "f":
            post = repository.post(record_hash)
            if post.edit_of is not None or post.pending_moderation:
                raise FieldError("record", f"{record_hash[:12]} is an edit or held for moderation: never a message")
            text, place_kind, place, sender = post.body, "thread", post.root, post.sender
        elif kind == "t":
            change = repository.ticket_change(record_hash)
            text, place_kind, place, sender = change.comment or "", "ticket", change.ticket, change.sender
        else:
            raise FieldError("record", f"{record_hash[:12]} is no forum post or ticket change here")
    except (UnknownArtifact, WrongKind, RepositoryError) as error:
        raise FieldError("record", f"{record_hash[:12]} is not in the served repository: {error}") from None
    message = message_in(text)
    if not isinstance(message, Record):
        raise FieldError("record", f"{record_hash[:12]} holds no record (C1, D7)")
    received = sender.time.timestamp() if sender.time else 0.0
    return Placed(record_hash, message, place_kind, place, sender.login, received)


def nodes_known(repository: Repository, own_server_code: str) -> frozenset[str]:
    return frozenset([own_server_code] + [e.server_code for e in registry.elsewhere(repository) if e.server_code])


@contextmanager
def one_at_a_time(repository_path: str | Path) -> Iterator[None]:
    directory = registry.nodes_dir(repository_path)
    directory.mkdir(mode=0o750, exist_ok=True)
    with open(directory / "grants.lock", "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield


def _check_record(repository: Repository, node: NodeEntry, record_hash: str, *, giving: bool = True) -> Placed:
    """RECORD_HASH as a record for NODE. GIVING (a grant): its sender holds admin or setup now (C1).
    Taking back asks no one's current rights (C5): a sender demoted mid-run must not leave the run
    user its letters."""
    placed = placed_record(repository, record_hash)
    if placed.record.node != node.server_code:
        raise FieldError("record", f"{record_hash[:12]} is for node {placed.record.node[:12]}, not {node.name}")
    if giving and not repository.holds_admin(placed.sender):
        raise FieldError("record", f"{record_hash[:12]} was sent by {placed.sender}, who holds neither admin nor "
                                   "setup (C1)")
    return placed


def check_user(repository: Repository, login: str, node: NodeEntry, own_server_code: str,
               own_node_user: str) -> tuple[str | None, str | None]:
    """FieldError("user") unless LOGIN may be NODE's run user now (D37, D40):
    returns (its own letters or None when it is new, the node it is remembered working for)."""
    if login in SPECIAL_LOGINS or login in registry.node_users(repository, own_node_user):
        raise FieldError("user", f"{login!r} is a special login or a node user: a run user is new, or holds no "
                                 "capability (D40)")
    try:
        user = repository.user(login)
        letters, contact = user.capabilities, user.contact
    except UnknownUser:
        letters, contact = None, ""
    owner = ownership.works_for(repository, login, nodes_known(repository, own_server_code))
    if owner is not None and owner != node.server_code:
        raise FieldError("user", f"{login!r} works for node {owner[:12]}, not {node.name} (D37)")
    remembered = ownership.works_for_text(contact)
    # Letters are a run's own only when this node already holds it (a preparation tried again).
    if letters and not (remembered == node.server_code and set(letters) <= set(RUN_USER_CAPABILITIES)):
        raise FieldError("user", f"{login!r} exists and holds capabilities {letters!r}: a run user is new, or "
                                 "holds no capability (D40)")
    return letters, remembered


def grant(repository_path: str, node: NodeEntry, record_hash: str, *, own_server_code: str,
          own_node_user: str, home: Path) -> tuple[str, str]:
    """The run user of RECORD_HASH given D19's letters and a new random
    password for NODE: (login, password). FieldError naming what is wrong."""
    code = node.server_code
    if code is None:  # registered, its clone not made yet: no record can name it
        raise FieldError("record", f"{record_hash[:12]}: node {node.name} has no server-code yet")
    if not registry.holds_own_identity(node, own_server_code, own_node_user):  # D29: the server's runs are its own
        raise FieldError("caller", f"node {node.name}'s registration names the server's own node (D29)")
    with one_at_a_time(repository_path):
        with Repository(repository_path) as repository:
            placed = _check_record(repository, node, record_hash)
            if answer_in_place(repository, placed.place_kind, placed.place, placed.hash, node=code,
                               node_user=node.node_user, received=placed.received,
                               wall_seconds=placed.record.budget.wall_seconds) is not None:
                raise FieldError("record", f"{record_hash[:12]} is answered: its user acts no more (C4)")
            login = placed.record.user
            letters, remembered = check_user(repository, login, node, own_server_code, own_node_user)
            contact = "" if letters is None else repository.user(login).contact
        if letters is None:
            password = admin.create_user(repository_path, login, RUN_USER_CAPABILITIES,
                                         ownership.contact_naming("", code), home=home)
            return login, password
        admin.set_capabilities(repository_path, login, RUN_USER_CAPABILITIES, home=home)
        if remembered is None:
            admin.set_contact(repository_path, login, ownership.contact_naming(contact, code), home=home)
        return login, admin.set_random_password(repository_path, login, home=home)


def withdraw(repository_path: str, node: NodeEntry, record_hash: str, *, home: Path) -> str:
    """C4: RECORD_HASH's run user holds no letters of its own; its login.
    Only a user working for NODE is touched, and whoever sent the record
    and whatever they hold now, it is (C5: all withdrawn)."""
    with one_at_a_time(repository_path):
        with Repository(repository_path) as repository:
            login = _check_record(repository, node, record_hash, giving=False).record.user
            try:
                contact = repository.user(login).contact
            except UnknownUser:
                return login  # never made: nothing to take back
        if ownership.works_for_text(contact) != node.server_code:
            raise FieldError("user", f"{login!r} does not work for node {node.name} (D37)")
        admin.withdraw_capabilities(repository_path, login, home=home)
        return login
