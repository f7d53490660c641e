"""What a node elsewhere asks the server's node of releases (D46, D48), read from the served
repository, the only one that knows who sent what (F2, D37): the server's node's last accept or
roll-back (a node configured to follow takes its check-in, nothing else), the asking node's own
releases thread (where it posts its steps), and the requests waiting there, each with its sender
and that sender's letters read here, now (the node elsewhere acts on them as the server's node acts
on its own). Whether a check-in passes D25's gate is the page's `gate` (page/web_nodes.py)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...fossil.repository import Repository
from ..releases.moves import last_move
from ..releases.thread import Asked, answer_to, read_request, releases_thread, unanswered

if TYPE_CHECKING:
    from ..config import NodeConfig
    from .registry import NodeEntry


def releases_of(repository: Repository, entry: NodeEntry, config: NodeConfig) -> dict[str, Any]:
    """The server's node's name, node user and last move, and ENTRY's releases thread (None while unstarted)."""
    move = last_move(repository, config.name, config.node_user)
    return {"server": {"name": config.name, "node_user": config.node_user, "move": move.json() if move else None},
            "thread": releases_thread(repository, entry.name, entry.node_user)}



MOST_REQUESTS = 50  # a thread's waiting posts told at once; the rest after these are answered


def asked_json(asked: Asked | None, post: str) -> dict[str, Any]:
    """A post of the thread as read by thread.read_request (its sender's letters read here, now, D46)."""
    if asked is None:
        return {"post": post, "talk": True}
    return {"post": post, "talk": False, "sender": asked.sender,
            "request": asked.request.model_dump(mode="json", exclude_none=True) if asked.request else None,
            "refused": {"field": asked.refused.field, "why": asked.refused.why} if asked.refused else None}


def requests_of(repository: Repository, entry: NodeEntry) -> dict[str, Any]:
    """ENTRY's releases thread's posts that may be requests and have no reply by its node user yet (D46),
    each read with the served repository's sender, for the node elsewhere to act on."""
    root = releases_thread(repository, entry.name, entry.node_user)
    waiting = unanswered(repository, root, entry.node_user)[:MOST_REQUESTS] if root else []
    return {"thread": root, "requests": [asked_json(read_request(repository, post.hash, str(entry.server_code)),
                                                    post.hash) for post in waiting]}


def request_of(repository: Repository, entry: NodeEntry, post: str) -> dict[str, Any]:
    """POST read again as a request for ENTRY: what `ocx release STEP --request POST` there carries out,
    and ENTRY's node user's answer to it when there is one."""
    from ...protocol.errors import FieldError
    from ...protocol.hashes import is_full_hash

    if not is_full_hash(post):
        raise FieldError("post", "a post's full hash")
    try:
        read = asked_json(read_request(repository, post, str(entry.server_code)), post)
    except LookupError:  # no such artifact, or not a forum post
        raise FieldError("post", f"{post} is no post of the served repository") from None
    # ENTRY's node user's reply to it, if any: a command killed after its answer reached the server
    # and before its claim said so must not answer again (once.py), and only here is a sender known (D37).
    root = releases_thread(repository, entry.name, entry.node_user)
    return {**read, "answered": answer_to(repository, root, post, entry.node_user)}
