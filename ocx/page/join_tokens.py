"""Join tokens: a host joins as a node elsewhere without an admin's login (D36).

An admin or setup viewer makes one on the server's page for one node name
(a POST carrying D43's token, web_nodes.py); `ocx node init --name NAME
--server URL --token-file PATH` on the joining host presents it, with no
login, and the page registers node NAME (its node user, as an admin's
`register` would, registry.py) and nothing else.

- Kept only as its SHA-256, one file per token in the page's own directory
  beside the served repository (registry.nodes_dir, the server account's:
  the page runs as it), 0600 in a 0700 directory; never in an artifact, so
  no clone ever holds it. The token itself is shown once, to the admin who
  made it.
- Good for one registration: spent (marked used, under the grants' lock, so
  two hosts presenting it at once cannot both join) once the node user is
  made; a registration the page refuses (a name clash) leaves it unspent.
- Good for TTL seconds, an hour: long enough to carry it from the page to
  the host and run one command in one sitting, short enough that one left
  in a file, a terminal's scroll-back or a chat is soon worth nothing.
- Wrong, used, expired or for another name: refused naming which, and
  nothing is written (the check reads only).

Standard library only: the page imports it for a join, before pydantic.
"""
from __future__ import annotations

import hashlib
import json
import re
import secrets
import time
from dataclasses import dataclass
from pathlib import Path

from ..node.serving import registry
from ..protocol.errors import FieldError
from ..protocol.node_identity import NODE_NAME

TTL = 3600.0  # seconds a token is good for (see above)
KEEP_USED = 86400.0  # a spent or expired token's file is kept this long past its expiry, to say "used"/"expired"
PREFIX = "ocxjoin-"  # so a join token is told at a glance from a password or the page's D43 token
_SHAPE = re.compile(r"ocxjoin-[A-Za-z0-9_-]{43}", re.ASCII)
_NAME = NODE_NAME  # a node's name: its units' instance (config.py)


class JoinRefused(FieldError):
    """The token does not let this join happen; its field names what is wrong (D8)."""


@dataclass(frozen=True)
class Made:
    token: str  # shown once
    name: str
    expires: float


def tokens_dir(repository_path: str | Path) -> Path:
    return registry.nodes_dir(repository_path) / "join-tokens"


def _path(repository_path: str | Path, token: str) -> Path:
    return tokens_dir(repository_path) / (hashlib.sha256(token.encode()).hexdigest() + ".json")


def _when(seconds: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(seconds))


def make(repository_path: str | Path, name: str, by: str, now: float | None = None, *,
         replace: bool = False) -> Made:
    """A new token for node NAME, made by BY (an admin or setup viewer: the page checks). REPLACE:
    the admin says the host may take NAME over from the node registered under it (registry.register)."""
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise JoinRefused("name", f"{name!r} is not a node's name (letters, digits, '.', '_', '-'; "
                                  "at most 64, beginning with a letter or digit)")
    now = time.time() if now is None else now
    directory = tokens_dir(repository_path)
    directory.parent.mkdir(mode=0o750, exist_ok=True)
    directory.mkdir(mode=0o700, exist_ok=True)
    _forget_old(directory, now)
    token = PREFIX + secrets.token_urlsafe(32)
    kept = {"name": name, "by": by, "made": now, "expires": now + TTL, "used": None, "replace": bool(replace)}
    from ..files import write_atomically

    write_atomically(_path(repository_path, token), json.dumps(kept) + "\n", 0o600)
    return Made(token, name, now + TTL)


def _forget_old(directory: Path, now: float) -> None:
    for path in directory.glob("*.json"):
        try:
            if json.loads(path.read_text())["expires"] + KEEP_USED < now:
                path.unlink()
        except (OSError, ValueError, KeyError, TypeError):
            continue


def check(repository_path: str | Path, token: str, name: str, now: float | None = None) -> Path:
    """The kept file of TOKEN if it lets node NAME join now; JoinRefused naming what is wrong. Reads only."""
    if not isinstance(token, str) or not _SHAPE.fullmatch(token.strip()):
        raise JoinRefused("join_token", "this is no join token (one is 'ocxjoin-' and 43 letters, digits, '-' or "
                                        "'_', made by an admin on the server's page)")
    path = _path(repository_path, token.strip())
    try:
        kept = json.loads(path.read_text())
    except FileNotFoundError:
        raise JoinRefused("join_token", "the server's page made no such join token (wrong, or forgotten a day "
                                        "after it expired): ask an admin for a new one") from None
    except (OSError, ValueError) as error:
        raise JoinRefused("join_token", f"the page cannot read its record of this token: {error}") from None
    now = time.time() if now is None else now
    if kept.get("used") is not None:
        raise JoinRefused("join_token", f"this join token was used at {_when(kept['used'])} (a token is good "
                                        "for one join): ask an admin for a new one")
    if now >= float(kept["expires"]):
        raise JoinRefused("join_token", f"this join token expired at {_when(kept['expires'])} (a token is good "
                                        f"for {TTL / 60:.0f} minutes): ask an admin for a new one")
    if kept.get("name") != name:
        raise JoinRefused("name", f"this join token is for node {kept.get('name')!r}, not {name!r}")
    return path


def spend(path: Path, now: float | None = None) -> None:
    """Mark the token kept at PATH used (under the grants' lock, after check: web_nodes.py)."""
    from ..files import write_atomically

    kept = json.loads(path.read_text())
    kept["used"] = time.time() if now is None else now
    write_atomically(path, json.dumps(kept) + "\n", 0o600)



def replaces(path: Path) -> bool:
    """Whether the token kept at PATH was made to replace the node registered under its name."""
    try:
        return json.loads(path.read_text()).get("replace") is True
    except (OSError, ValueError, AttributeError):
        return False
