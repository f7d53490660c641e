"""`ocx attach RECORD` (C3, D32): on the node's host, a Fossil login holding
admin or setup joins a session's terminal, and on leaving posts in the
record's place, as itself, who attached, when and for how long (D12, D21).

Not one of the six tools (Part 4): it is interactive and only for the
node's host. It uses what they use: the caller (D22), the record's place,
and Fossil's own forms to write, so the post's sender is the caller.
"""
from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from ..fossil.errors import AmbiguousPrefix, BadPrefix, RepositoryError, UnknownArtifact
from ..fossil.web import WebError
from ..node.config import CONFIG_DIR, configured_nodes
from ..node.run_layout import RunHome, parse_unit_name, unit_stem
from ..protocol.errors import FieldError
from ..protocol.hashes import is_hash_prefix
from ..protocol.messages import Record
from ..tools.caller import Caller
from ..tools.framework import ADMIN_OR_SETUP
from ..tools.places import FORUM, Placed, placed
from .attaching import DETACH_NAME, HangUps, NoTerminal, connect, raw_mode, relay


def duration_text(seconds: float) -> str:
    """42 s, 3 min 5 s, 2 h 0 min 7 s: whole seconds, plainly."""
    whole = max(0, round(seconds))
    if whole < 60:
        return f"{whole} s"
    minutes, whole = divmod(whole, 60)
    if minutes < 60:
        return f"{minutes} min {whole} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes} min {whole} s"


def attachment_text(login: str, started: datetime, seconds: float) -> str:
    """The post an attachment leaves (C3): who, when (UTC) and for how long."""
    when = started.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S")
    return f"{login} attached to this session at {when} UTC for {duration_text(seconds)}."


def only_node(config_dir: Path = CONFIG_DIR) -> str:
    """The one node on this host, when there is one (else `--at-node` must say)."""
    names = configured_nodes(config_dir)
    if len(names) != 1:
        found = ", ".join(names) or "none"
        raise FieldError("node", f"say which node with --at-node NAME (nodes on this host: {found})")
    return names[0]


@dataclass(frozen=True)
class Session:
    """A session record of this node, and where its terminal is."""

    record: Placed
    unit: str
    socket: Path


def check_caller(caller: Caller) -> None:
    """D32: admin or setup, read from the node's repository; then the password, proven by logging in."""
    held = caller.capabilities()
    if held is None or not ADMIN_OR_SETUP.held_by(held):
        letters = "".join(sorted(held or ())) or "nothing"
        raise FieldError("caller", f"{caller.login} may not attach: it needs {ADMIN_OR_SETUP.means} "
                                f"(one of {ADMIN_OR_SETUP.letters!r}), and holds {letters}")
    if caller.password is None:
        raise FieldError("caller", f"no password for {caller.login}: give --password-file or --clone, or type it (D22)")
    try:
        caller.web()  # logs in: the server, not this host, says the password is right
    except (WebError, OSError) as error:
        raise FieldError("caller", str(error)) from None


def record_prefix(given: str) -> tuple[str, str | None]:
    """GIVEN as a record's hash prefix, and the node it names: a machine's name (`machinectl list`)
    or its unit's, `ocx-NODE12-RECORD12` (D3), names both; a prefix names no node (None)."""
    parsed = parse_unit_name(given if given.endswith(".service") else f"{given}.service")
    if parsed is None:
        return given, None
    node, record, checkin = parsed
    if checkin is not None:
        raise FieldError("record", f"{given} is a check-in run of a command record: its runs have no terminal (C2)")
    return record, node


def find_session(caller: Caller, given: str) -> Session:
    """RECORD as a session record of this node (D3: its unit; D32: its terminal), named by its
    hash, a prefix of it, or its run's machine or unit."""
    prefix, node = record_prefix(given)
    if not is_hash_prefix(prefix):
        raise FieldError("record", f"{prefix!r} is not 10 to 64 lower-case hex digits of a hash (D11), "
                                   "nor a run's machine")
    with caller.reading() as repository:
        try:
            full = repository.resolve(prefix)
        except AmbiguousPrefix as error:
            raise FieldError("record",
                             f"{prefix} names {len(error.matches)} or more artifacts; give more digits (D11)") from None
        except UnknownArtifact:
            raise FieldError("record", f"{prefix} names no artifact in {caller.where} (D11)") from None
        except (BadPrefix, RepositoryError) as error:
            raise FieldError("record", str(error)) from None
        where = placed(repository, full)
        server_code = repository.server_code
    if where is None or not isinstance(where.message, Record):
        raise FieldError("record", f"{full} is not a post or ticket change holding a record (C1)")
    if node is not None and node != server_code[:12]:
        raise FieldError("record", f"{given} is a run of node {node}, not of this one ({server_code[:12]})")
    if where.message.node != server_code:
        raise FieldError("record", f"{full} is a record for node {where.message.node}, not this one ({server_code})")
    if where.message.is_command:
        raise FieldError("record", f"{full} is a command record: its runs have no terminal (C2)")
    stem = unit_stem(server_code, full)
    return Session(where, f"{stem}.service", RunHome(stem).terminal_socket)


def post_attachment(caller: Caller, session: Session, text: str) -> str:
    """In the record's place as the caller (D12, D21): a reply to the record's post, or a ticket change."""
    if session.record.kind == FORUM:
        return caller.web().reply(session.record.hash, text)
    return caller.web().ticket_change(session.record.place, text)


@dataclass(frozen=True)
class Attachment:
    session: Session
    started: datetime
    seconds: float
    ended_by: str
    text: str
    post: str | None  # None: the post could not be written (error says why)
    error: str | None = None


def attach_session(caller: Caller, prefix: str, say: Callable[[str], None], keys_fd: int = 0,
                   screen_fd: int = 1) -> Attachment:
    """Check the caller and the record, connect, relay until detached, then post."""

    def tell(text: str) -> None:
        try:
            say(text)
        except OSError:
            pass  # the person's terminal is gone (a hang-up): the post is still owed (C3)

    check_caller(caller)
    session = find_session(caller, prefix)
    with HangUps() as hang_ups:  # from here a hang-up ends the attachment, never the post
        try:
            sock = connect(session.socket, session.unit)
        except NoTerminal as error:
            raise FieldError("record", f"{session.record.hash[:12]} ({session.unit}): {error}") from None
        started, clock = datetime.now(UTC), time.monotonic()
        tell(f"attached to {session.unit} as {caller.login}; detach with {DETACH_NAME}")
        with sock, raw_mode(keys_fd):
            ended_by = relay(sock, keys_fd, screen_fd, hang_ups)
        seconds = time.monotonic() - clock
        text = attachment_text(caller.login, started, seconds)
        tell(f"\r\n{ended_by} after {duration_text(seconds)}")
        try:
            post = post_attachment(caller, session, text)
        except (WebError, OSError) as error:
            return Attachment(session, started, seconds, ended_by, text, None, str(error))
    return Attachment(session, started, seconds, ended_by, text, post)
