"""Who is looking, at which node, and what they may see (D30; docs/console.md).

The viewer is the login Fossil passes the page; what it may see is what
its capabilities read, as Fossil's own pages decide: a record in a thread
with `2` (read the forum), in a ticket with `r` (read tickets), check-ins
with `o`, a program's output with admin or setup. The letters come from
the repository (nobody's and anonymous's included, capabilities.py), not
from FOSSIL_CAPABILITIES, which leaves those out.

The node is read from its configuration file as written (no pydantic: the
page's 200 ms), and only when it names the repository Fossil serves.
"""
from __future__ import annotations

import json
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from ...fossil.errors import UnknownUser
from ...fossil.repository import Repository
from ...reading.console_messages import THREAD, RecordSeen
from ..web_viewer import Node, base_url, viewer

NODE_USER = "ocx-node"  # NodeConfig's default (D20), for a configuration that names none


@dataclass(frozen=True)
class NodeFacts:
    name: str
    node_user: str


def node_facts(node: Node, repository_path: str | None) -> NodeFacts | None:
    """The page's node, or None when its configuration names another repository."""
    if node.config_file is None:
        return None
    try:
        written = json.loads(Path(node.config_file).read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(written, dict) or not isinstance(written.get("repository"), str):
        return None
    if repository_path and Path(written["repository"]).resolve() != Path(repository_path).resolve():
        return None
    return NodeFacts(str(written.get("name", "")), str(written.get("node_user", NODE_USER)))


@dataclass
class View:
    env: Mapping[str, str]
    node: Node
    repository: Repository

    @cached_property
    def login(self) -> str:
        return viewer(self.env)

    @cached_property
    def capabilities(self) -> frozenset[str]:
        try:
            return self.repository.effective_capabilities(self.login)
        except UnknownUser:
            return frozenset()

    @cached_property
    def admins(self) -> frozenset[str]:
        """Every login holding admin or setup now (C1): one read of the user table."""
        return self.repository.admins()

    @cached_property
    def facts(self) -> NodeFacts | None:
        return node_facts(self.node, self.env.get("FOSSIL_REPOSITORY"))

    @property
    def admin(self) -> bool:
        return "a" in self.capabilities  # `s` implies `a` (capabilities.py)

    def reads(self, record: RecordSeen) -> bool:
        return ("2" if record.placed.place_kind == THREAD else "r") in self.capabilities

    @property
    def reads_code(self) -> bool:
        return "o" in self.capabilities

    @cached_property
    def query(self) -> dict[str, str]:
        parsed = urllib.parse.parse_qs(self.env.get("QUERY_STRING", ""), keep_blank_values=True)
        return {key: values[-1] for key, values in parsed.items()}

    @property
    def base(self) -> str:
        """The page's own address, as the viewer's browser reaches it."""
        return self.env.get("SCRIPT_NAME", "")

    @property
    def root(self) -> str:
        """The repository's own pages' prefix (/forumpost, /info…): what precedes /ext."""
        return urllib.parse.urlsplit(base_url(self.env)).path.rstrip("/")
