"""The list of nodes of a served repository (D36): the server's own, and each
node elsewhere, by its node user.

A node elsewhere is registered by an admin (its `ocx node init` logs in as
one): its node user's contact information holds its name, its server-code
(which names it in records, C1) and what it enforces. So the list lasts in
the repository itself, changes only by an admin's hand (Fossil lets no one
else edit another login's contact), and is not copied to clones. When each
was last heard from (a request of its own to the server's page) is kept
beside the repository, in a file per node user: losing it loses only that.
"""
from __future__ import annotations

import hashlib
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ...fossil.repository import Repository
from ...protocol.node_identity import Claimed, check_identity

if TYPE_CHECKING:
    from ..json_answers import JsonObject
    from .leaving import Left

# D20: read the forum (2), post to it unmoderated (4, which brings 3),
# read tickets (r) and append to them (c), clone (g) and push by sync (i,
# which brings o) for the `ci` tags of command runs. Never a, s or p.
NODE_USER_CAPABILITIES = "24cgir"

MARK = "OCX node (D36) "
REMOVED = "OCX node removed (D36) "  # a node user taken off the list (leaving.py): not listed, its name kept


@dataclass(frozen=True)
class NodeEntry:
    name: str
    node_user: str
    server_code: str | None  # None until its clone is made (ocx node init registers it then)
    enforces: tuple[str, ...] = ()
    here: bool = False  # the server's own node (D29)
    heard: float | None = None  # Unix seconds of its last request to the server's page

    def json(self) -> JsonObject:
        return {"name": self.name, "node_user": self.node_user, "server_code": self.server_code,
                "enforces": list(self.enforces), "here": self.here, "heard": self.heard}


def contact_text(entry: NodeEntry) -> str:
    """What the node user's contact information says (one line, Fossil shows it)."""
    return MARK + json.dumps({"name": entry.name, "server_code": entry.server_code,
                              "enforces": sorted(entry.enforces)}, sort_keys=True)


def parse_contact(login: str, contact: str) -> NodeEntry | None:
    """The registration a contact text holds, or None when it holds none."""
    if not contact.startswith(MARK):
        return None
    try:
        body = json.loads(contact[len(MARK):])
        name, code, enforces = body["name"], body.get("server_code"), body.get("enforces", [])
    except (ValueError, KeyError, TypeError):
        return None
    if not isinstance(name, str) or not (code is None or isinstance(code, str)) or not isinstance(enforces, list):
        return None
    return NodeEntry(name, login, code, tuple(str(e) for e in enforces))


def removed_name(contact: str) -> str | None:
    """The name of the node a removed node user's contact says it was, or None."""
    if not contact.startswith(REMOVED):
        return None
    try:
        name = json.loads(contact[len(REMOVED):]).get("name")
    except (ValueError, AttributeError):
        return None
    return name if isinstance(name, str) else None


def elsewhere(repository: Repository) -> list[NodeEntry]:
    """Every registered node elsewhere, as its node user's contact says."""
    found = [parse_contact(user.login, user.contact) for user in repository.users()]
    return sorted((entry for entry in found if entry is not None), key=lambda entry: entry.name)


def node_of_user(repository: Repository, login: str | None) -> NodeEntry | None:
    """The node elsewhere LOGIN is the node user of, or None."""
    if not login:
        return None
    return next((entry for entry in elsewhere(repository) if entry.node_user == login), None)


def holds_own_identity(entry: NodeEntry, own_code: str, own_node_user: str) -> bool:
    """Whether ENTRY (as its contact says) is an identity of its own: a login a node user may have, and
    neither the served repository's own server-code nor node user (D29). A registration written
    before every way in checked this fails it, and its node user is then answered as no node."""
    from ...protocol.errors import FieldError

    try:
        check_identity(entry.name, entry.node_user, entry.server_code, own_code=own_code,
                       own_node_user=own_node_user, others=())
    except FieldError:
        return False
    return True


def node_users(repository: Repository, own: str | None) -> frozenset[str]:
    """Every node user of this repository: OWN (the server's node's), each node elsewhere's, and each taken
    off the list (it may join again under its name: never a run user meanwhile, D40)."""
    removed = [user.login for user in repository.users() if removed_name(user.contact) is not None]
    return frozenset([entry.node_user for entry in elsewhere(repository)] + removed + ([own] if own else []))


# -- heard from ----------------------------------------------------------------

def nodes_dir(repository_path: str | Path) -> Path:
    """The page's own directory beside the repository, in the server account's (it owns both):
    when each node was heard from, the grants' lock, HOME of the page's own `fossil` runs."""
    return Path(f"{repository_path}.ocx-nodes")


def heard_file(repository_path: str | Path, login: str) -> Path:
    """Where LOGIN's last request is kept: named by a digest of the login, never by the login itself,
    so no login (checked or not) makes a path; a join token's file is never one of these."""
    return nodes_dir(repository_path) / f"heard-{hashlib.sha256(login.encode()).hexdigest()[:32]}.json"


def hear(repository_path: str | Path, login: str) -> None:
    """LOGIN's node was heard from now."""
    directory = nodes_dir(repository_path)
    directory.mkdir(mode=0o750, exist_ok=True)
    path = heard_file(repository_path, login)
    temporary = path.with_name(f".{path.name}.{os.getpid()}")
    temporary.write_text(json.dumps({"heard": time.time()}) + "\n")
    os.replace(temporary, path)


def heard(repository_path: str | Path, login: str) -> float | None:
    try:
        return float(json.loads(heard_file(repository_path, login).read_text())["heard"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def every_node(repository: Repository, here: NodeEntry | None) -> list[NodeEntry]:
    """The list `status` shows (D36): the server's own node first, then each elsewhere, with when it was heard."""
    from dataclasses import replace

    listed = [replace(entry, heard=heard(repository.path, entry.node_user)) for entry in elsewhere(repository)]
    return ([here] if here is not None else []) + listed


# -- registering a node elsewhere (its `ocx node init`, as an admin) --------------

def claimed(repository: Repository) -> list[Claimed]:
    """Every identity the registered nodes elsewhere hold (node_identity.check_identity's OTHERS)."""
    return [Claimed(e.name, e.node_user, e.server_code) for e in elsewhere(repository)]


@dataclass(frozen=True)
class Registered:
    password: str | None  # the node user's new password, when one was made
    replaced: Left | None = None  # the node registered under the name before, when an admin said to replace it


def register(repository_path: str, entry: NodeEntry, *, own_node_user: str, new_password: bool,
             home: Path, replace: bool = False) -> Registered:
    """Make or update ENTRY's node user with exactly D37's letters and its
    registration; a new random password when it is new or NEW_PASSWORD asks
    (returned, never kept here). FieldError naming what clashes: an identity
    the served repository's own node or another node holds (node_identity),
    or, unless REPLACE (an admin's word), another server-code for a name
    registered with one (its open records would never be answered)."""
    from ...fossil import admin
    from ...fossil.errors import UnknownUser
    from ...protocol.errors import FieldError

    login = entry.node_user
    with Repository(repository_path) as repository:
        check_identity(entry.name, login, entry.server_code, own_code=repository.server_code,
                       own_node_user=own_node_user, others=claimed(repository))
        try:
            user = repository.user(login)
        except UnknownUser:
            user = None
    text = contact_text(entry)
    if user is None:
        return Registered(admin.create_user(repository_path, login, NODE_USER_CAPABILITIES, text, home=home))
    registered = parse_contact(login, user.contact)
    if registered is None and removed_name(user.contact) == entry.name:  # back on the list; its old code retired
        registered = NodeEntry(entry.name, login, None)
    if registered is None or registered.name != entry.name:
        raise FieldError("node_user", f"{login!r} exists and is not node {entry.name}'s user")
    if registered.server_code not in (None, entry.server_code) and not replace:
        raise FieldError("name", f"node {entry.name} is registered already, with server-code "
                                 f"{registered.server_code}: joining under its name replaces it only when an admin "
                                 "says so (`ocx node init --replace`, or a join token made to replace it); its open "
                                 "records are then answered lost (D31)")
    if sorted(user.capabilities) != sorted(NODE_USER_CAPABILITIES):
        admin.set_capabilities(repository_path, login, NODE_USER_CAPABILITIES, home=home)
    if user.contact != text:
        admin.set_contact(repository_path, login, text, home=home)
    password = admin.set_random_password(repository_path, login, home=home) if new_password else None
    replaced = None
    if registered.server_code not in (None, entry.server_code):  # D31: what the old code left, made harmless
        from .leaving import retire

        replaced = retire(repository_path, registered, home=home)
    return Registered(password, replaced)
