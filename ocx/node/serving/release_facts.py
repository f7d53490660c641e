"""What a node elsewhere asks the server's node of releases (D48), read from the served repository,
the only one that knows who sent what (F2, D37): the server's node's last accept or roll-back (a node
configured to follow takes its check-in, nothing else) and the asking node's own releases thread
(where it posts its steps, D46). Whether a check-in passes D25's gate is the page's `gate`
(page/web_nodes.py), read by reading/release_gate.py."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...fossil.repository import Repository
from ..releases.moves import last_move
from ..releases.thread import releases_thread

if TYPE_CHECKING:
    from ..config import NodeConfig
    from .registry import NodeEntry


def releases_of(repository: Repository, entry: NodeEntry, config: NodeConfig) -> dict[str, Any]:
    """The server's node's name, node user and last move, and ENTRY's releases thread (None while unstarted)."""
    move = last_move(repository, config.name, config.node_user)
    return {"server": {"name": config.name, "node_user": config.node_user, "move": move.json() if move else None},
            "thread": releases_thread(repository, entry.name, entry.node_user)}

