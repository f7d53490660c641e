"""Whether a node elsewhere follows the server's accepted release (D48), and what it follows.

The choice is a file of its own beside the node's configuration, `/etc/ocx/NAME.follow-releases`
holding `{"follow_releases": true}`, never a field of `/etc/ocx/NAME.json`: that file is read
with unknown fields refused (config.py), by every release the node may roll back to and by a
staged release's smoke, so a new field there would make an older release refuse the node's
configuration. Its name ends in no `.json`: every `/etc/ocx/*.json` is a node's configuration
(host_paths.configured_nodes). Root's; absent, unreadable or malformed: not followed.

What is followed is the server's node's last accept or roll-back (node/releases/moves.py), read
by the server's node from the served repository (only its node user's post, F2) and handed to
the node elsewhere (`ServerLink.releases`): of it only the step, the post's hash and the
check-in's hash are taken. The node elsewhere builds that check-in itself, from its own clone's
tree and its own current release's wheels, in its own build unit (D48), and accepts it when its
own smoke passed; nothing of the server's release files is read or run.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from ..config import CONFIG_DIR, NodeConfig
from .moves import MOVED, Move, move_of

FOLLOW_KEY = "follow_releases"
_MOST_BYTES = 4096


def follow_file(name: str, config_dir: Path = CONFIG_DIR) -> Path:
    return config_dir / f"{name}.follow-releases"


def follows(config: NodeConfig, config_dir: Path = CONFIG_DIR) -> bool:
    """Whether CONFIG's node is a node elsewhere set to follow the server's releases."""
    if not config.elsewhere:
        return False
    try:
        fd = os.open(follow_file(config.name, config_dir), os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return False
    with os.fdopen(fd, "rb") as given:
        text = given.read(_MOST_BYTES + 1)
    try:
        found = json.loads(text) if len(text) <= _MOST_BYTES else None
    except ValueError:
        return False
    return isinstance(found, dict) and found.get(FOLLOW_KEY) is True


def set_following(name: str, on: bool, config_dir: Path = CONFIG_DIR) -> Path:
    """The choice written, root's and 0644 (it holds no secret); the file's path."""
    path = follow_file(name, config_dir)
    config_dir.mkdir(parents=True, exist_ok=True)
    temporary = f"{path}.new"
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o644)
    with os.fdopen(fd, "w") as out:
        out.write(json.dumps({FOLLOW_KEY: on}) + "\n")
    os.replace(temporary, path)
    return path


@dataclass(frozen=True)
class ServerMove:
    """The server's node's last move, as its page answered `releases`: whom to name, and the move."""

    server: str  # the server's node's name
    node_user: str
    move: Move | None
    thread: str | None  # this node's own releases thread, None while unstarted


def server_move(answer: dict[str, object]) -> ServerMove:
    """The page's answer read as bytes from the network: each value checked for its form."""
    server = answer.get("server")
    server = server if isinstance(server, dict) else {}
    moved = server.get("move")
    move = None
    if isinstance(moved, dict) and isinstance(moved.get("post"), str):
        facts = {"step": moved.get("step"), "outcome": MOVED.get(str(moved.get("step"))),
                 "release": moved.get("release"), "checkin": moved.get("checkin")}
        move = move_of(str(moved["post"]), facts)
        if move is not None and not (len(move.post) in (40, 64) and not set(move.post) - set("0123456789abcdef")):
            move = None
    thread = answer.get("thread")
    return ServerMove(str(server.get("name") or ""), str(server.get("node_user") or ""), move,
                      thread if isinstance(thread, str) else None)
