"""Each stage, accept and roll-back on the record (D46): a post by the node user in the node's
releases thread naming the step, its outcome, the release, its check-in and digest, the node,
the login that asked, the time and the smoke's result. Root's: `ocx release` on the node calls it
after each step, asked from its command line or by a request (thread.py), and the node's service
for a refusal. A request is acted on once (`claim`), through the node's restarts.

A post that cannot be written (the server down, say) never undoes or fails the step: the step is
in the links and the journal; the post's failure is said on the command's standard error.
"""
from __future__ import annotations

import os
import socket
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from ...fossil.repository import Repository
from ...protocol.release_request import render_answer, thread_title
from ..config import NodeConfig
from .links import ReleaseError, Releases
from .thread import releases_thread

REQUESTS = "requests"  # ROOT/requests/POSTHASH: a request this root acted on (claim)
_HASH_CHARACTERS = frozenset("0123456789abcdef")


def here_login() -> str:
    """Who asked, on the node's command line with no login named: root of this host."""
    return f"root@{socket.gethostname()}"


def claim(root: str, request: str) -> bool:
    """Whether this command is the first to act on REQUEST at ROOT (then it is marked taken, at
    once): the node's service may start a request's unit again after a restart, never twice acted."""
    if not request or set(request) - _HASH_CHARACTERS or len(request) not in (40, 64):
        raise ReleaseError(f"request: {request[:80]!r} is not a post's full hash")
    directory = os.path.join(root, REQUESTS)
    os.makedirs(directory, 0o700, exist_ok=True)
    try:
        fd = os.open(os.path.join(directory, request), os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    except FileExistsError:
        return False
    os.close(fd)
    return True


def facts_of(releases: Releases, release: str | None) -> dict[str, Any]:
    """RELEASE's check-in, digest and smoke as staged (its record is kept while it is accepted)."""
    if release is None:
        return {"release": None}
    try:
        staged = releases.staged(release)
    except (ReleaseError, OSError) as error:
        return {"release": release, "record": str(error)}
    return {"release": release, "checkin": staged.checkin, "digest": staged.digest, "smoke": staged.smoke}


def outcome(step: str, done: str, node: NodeConfig, server_code: str, login: str,
            release: dict[str, Any], why: str | None = None) -> tuple[dict[str, Any], str]:
    """The post's facts and its line for people. DONE: staged, accepted, rolled back, refused, or lost
    (a request's command ended before it answered, and nothing moved: once.py)."""
    facts = {"step": step, "outcome": done, "node": server_code, "node_name": node.name, "login": login,
             "time": datetime.now(UTC).isoformat(timespec="seconds"), **release}
    if why is not None:
        facts["why"] = why
    named = release.get("release") or "nothing"
    line = (f"Release {step} asked by {login}: {done}, {why}" if done in ("refused", "lost")
            else f"Release {named} {done} on node {node.name}, asked by {login}; smoke: "
                 f"{', '.join(f'{k} {v}' for k, v in sorted(dict(release.get('smoke') or {}).items())) or 'none'}")
    return facts, line


Write = Callable[[str, str | None, str], str]  # (title, reply-to or None for a new thread, text) -> hash


def node_writer(node: NodeConfig) -> Write:
    """Writes as the node user (D20), through Fossil's forms (D21)."""
    from ...fossil.web import WebSession

    session = WebSession(node.url, node.node_user, node.node_password())

    def write(title: str, to: str | None, text: str) -> str:
        return session.new_thread(title, text) if to is None else session.reply(to, text)

    return write


def post(node: NodeConfig, facts: dict[str, Any], line: str, reply_to: str | None = None,
         write: Write | None = None) -> str:
    """The answer posted in NODE's releases thread: in reply to REPLY_TO (a request), else to the
    thread's root, else as the thread's first post. Its hash."""
    text = render_answer(facts, line)
    if reply_to is None and node.elsewhere:  # its clone cannot tell who started a thread: the server's node (D48)
        from ..server_link import ServerLink

        thread = ServerLink.of_node(node).releases().get("thread")
        reply_to = thread if isinstance(thread, str) else None
    elif reply_to is None:
        with Repository(node.repository) as repository:
            reply_to = releases_thread(repository, node.name, node.node_user)
    return (write or node_writer(node))(thread_title(node.name), reply_to, text)
