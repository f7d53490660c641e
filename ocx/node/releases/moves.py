"""A node's release as its releases thread says (D46, D48): the node user's last accept or
roll-back post there, read from the served repository, the only one that knows who sent a post
(F2: a clone records itself as the sender of everything it pulled, D37).

Read by `status` on the server (each node's release), by the server's node page for a node
elsewhere (the server's own last move, which a node configured to follow takes; the node's own
releases thread, where it posts), and so by nothing that runs anything of the post: only its
step, its release's name and its check-in's hash are taken, each checked for its form.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from ...fossil.heads import thread_posts
from ...fossil.repository import Repository
from ...protocol.release_request import answer_object
from .thread import releases_thread

MOVED = {"accept": "accepted", "rollback": "rolled back"}  # the steps that move `current`, and their outcome
_RELEASE = re.compile(r"[0-9a-f]{16}-[0-9a-f]{16}", re.ASCII)
_HASH = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}", re.ASCII)


@dataclass(frozen=True)
class Move:
    """An accept or roll-back the node user posted: its post, step, the release now current and its check-in."""

    post: str
    step: str
    release: str | None
    checkin: str | None

    def json(self) -> dict[str, str | None]:
        return {"post": self.post, "step": self.step, "release": self.release, "checkin": self.checkin}


def move_of(post: str, facts: dict[str, object] | None) -> Move | None:
    """FACTS (a post's answer block) as a move, or None: refusals and stages move nothing; a release
    or check-in not of its form is not taken (a node's post, and still read as bytes from the forum)."""
    if not facts:
        return None
    step, release, checkin = facts.get("step"), facts.get("release"), facts.get("checkin")
    if not isinstance(step, str) or step not in MOVED or MOVED[step] != facts.get("outcome"):
        return None
    return Move(post, step, release if isinstance(release, str) and _RELEASE.fullmatch(release) else None,
                checkin if isinstance(checkin, str) and _HASH.fullmatch(checkin) else None)


def last_move(repository: Repository, node_name: str, node_user: str) -> Move | None:
    """NODE_NAME's last accept or roll-back posted by its node user in its releases thread, or None.
    REPOSITORY must be the served one (senders, F2)."""
    root = releases_thread(repository, node_name, node_user)
    if root is None:
        return None
    for post in reversed(thread_posts(repository, [root])[root]):
        if post.sender != node_user or post.edit_of is not None or post.pending_moderation:
            continue
        found = move_of(post.hash, answer_object(repository.post(post.hash).body))
        if found is not None:
            return found
    return None
