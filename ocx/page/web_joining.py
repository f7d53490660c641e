"""The page's door for a host joining as a node elsewhere with a join token (D36).

Three changes, each a POST with the viewer's D43 token (web_nodes.py has
checked it): an admin or setup viewer makes a join token for one node name
(`join-token`); the joining host, logged in as nobody, presents it (`join`)
and gets its new node user and that user's password; once its clone is
made, the node user names the clone's server-code (`code`), once: a
registration that has one is changed only by an admin.
"""
from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .web_viewer import viewer

if TYPE_CHECKING:
    from ..node.config import NodeConfig
    from ..node.serving.registry import NodeEntry
    from .web_nodes import Answer

_CODE = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")


def _refused(field: str, why: str) -> Answer:
    return {"refused": {"field": field, "why": why}}


def make_join_token(env: Mapping[str, str], served: str, call: Mapping[str, Any]) -> Answer:
    from ..protocol.admission import holds_admin
    from . import join_tokens

    if not holds_admin(env.get("FOSSIL_CAPABILITIES", "")):
        return _refused("caller", f"{viewer(env)} holds neither admin nor setup: only they let a host join as a "
                                  "node (D36)")
    try:
        name = call.get("name")
        made = join_tokens.make(served, name if isinstance(name, str) else "", viewer(env),
                                replace=call.get("replace") is True)
    except join_tokens.JoinRefused as refused:
        return _refused(refused.field, refused.why)
    return {"name": made.name, "join_token": made.token, "expires": made.expires,
            "replace": call.get("replace") is True, "good_for": join_tokens.TTL,
            "use": f"ocx node init --name {made.name} --server URL --token-file FILE"}


def join(served: str, config: NodeConfig, call: Mapping[str, Any], home: Path) -> Answer:
    """Node NAME registered by the join token's authority: its node user and a new password."""
    from ..node.serving import registry
    from ..node.serving.grants import one_at_a_time
    from ..protocol.errors import FieldError
    from . import join_tokens

    name, login, code = call.get("name"), call.get("node_user"), call.get("server_code")
    enforces, given = call.get("enforces") or [], call.get("join_token")
    if not (isinstance(name, str) and name and isinstance(login, str) and login and isinstance(given, str)
            and (code is None or (isinstance(code, str) and _CODE.fullmatch(code))) and isinstance(enforces, list)):
        return _refused("input", "join takes join_token, name, node_user, server_code (a clone's, or null) and "
                                 "enforces")
    entry = registry.NodeEntry(name, login, code, tuple(str(e) for e in enforces))
    try:
        join_tokens.check(served, given, name)  # reads only: a wrong, used or expired token writes nothing
        with one_at_a_time(served):  # D36: one join per token, however many hosts present it at once
            kept = join_tokens.check(served, given, name)
            done = registry.register(served, entry, own_node_user=config.node_user, new_password=True,
                                     home=home, replace=join_tokens.replaces(kept))
            join_tokens.spend(kept)
    except join_tokens.JoinRefused as refused:
        return _refused(refused.field, refused.why)
    except FieldError as error:
        return _refused(error.field, error.why)
    return {"node_user": login, "password": done.password, "replaced": done.replaced and done.replaced.json()}


def name_code(served: str, entry: NodeEntry, config: NodeConfig, call: Mapping[str, Any], home: Path) -> Answer:
    """ENTRY's node user names its clone's server-code: once, while its registration has none."""
    from ..node.serving import registry
    from ..protocol.errors import FieldError

    code = call.get("server_code")
    if not isinstance(code, str) or not _CODE.fullmatch(code):
        return _refused("server_code", "a clone's server-code: 40 or 64 hexadecimal digits")
    if entry.server_code == code:
        return {"node": entry.name, "server_code": code}
    if entry.server_code is not None:
        return _refused("server_code", f"node {entry.name} is registered with server-code {entry.server_code}: "
                                       "changing it takes an admin's login or a new join token")
    try:
        registry.register(served, replace(entry, server_code=code), own_node_user=config.node_user,
                          new_password=False, home=home)
    except FieldError as error:
        return _refused(error.field, error.why)
    return {"node": entry.name, "server_code": code}

