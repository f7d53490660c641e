"""The caller of a tool (D22): a Fossil login the server authenticated, and
the node's repository and configuration every check is decided from.

A tool runs where the truth is: on the node's host, reading the served
repository itself, the only place that knows every artifact's sender (F2),
who holds admin or setup now, the runner pages admins sent and whether a
record is answered, with the node's configuration (its server-code, what it
enforces, its open records). A caller's own clone knows none of it (it
names itself as the sender of all it pulled, and has a server-code of its
own). A call reaches the node three ways, and each builds this caller:

- from anywhere, the CLI and MCP send the call to the node's web page as the
  logged-in caller (remote.py); the page runs it as the login Fossil passes
  it, in that login's session (ocx/entry/web.py, D30);
- a `no_password` run, or one without network, through its tool socket
  (tool_socket.py), with a password only the node holds;
- on the node's host, `--at-node NAME`, logging in with the caller's password.

Writes reach the served repository over HTTP as the caller: forum posts and
ticket changes through Fossil's forms, tags and a run's check-ins by sync in
the caller's session (ocx/fossil/web.py), so the server records the caller
as their sender (D21). Nothing is written to disk for a call.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ..fossil.repository import Repository
from ..fossil.web import WebSession
from ..node import config as node_config
from ..node.config import NodeConfig
from ..node.record_dirs import open_records
from ..protocol.decide import OpenRecord

if TYPE_CHECKING:
    from ..node.elsewhere.link import ServerLink
    from ..node.served import Elsewhere


@dataclass
class Caller:
    login: str
    repository_path: Path  # the served repository, which the tools read
    base_url: str  # where the tools reach Fossil's forms and sync from the node: its own URL
    node: NodeConfig | None = None  # the node serving that repository, when known
    password: str | None = None  # a caller that logs in itself (at the node, a run's socket)
    cookie: str | None = None  # the web page's viewer: the session Fossil passed the page (D30)
    shown_url: str | None = None  # the URL the caller reached the node by, when not base_url
    run_clone: Path | None = None  # a socket-served run's clone (its tool socket sets it)
    server_link: ServerLink | None = None  # a node elsewhere's link to the server, when one is held
    _web: WebSession | None = field(default=None, repr=False)

    @property
    def where(self) -> str:
        return self.shown_url or self.base_url

    def reading(self) -> Repository:
        return Repository(self.repository_path)

    def resolve(self, prefix: str) -> str:
        with self.reading() as repository:
            return repository.resolve(prefix)

    def capabilities(self) -> frozenset[str]:
        """The caller's letters as Fossil expands them when it acts: on a node
        elsewhere, as the server's node says (its clone has no user table, D37)."""
        if self.node is not None and self.node.elsewhere:
            with self.reading() as repository:
                return self._elsewhere().capabilities(repository, self.login)
        with self.reading() as repository:
            try:
                return repository.effective_capabilities(self.login)
            except LookupError:
                return frozenset()

    def _elsewhere(self) -> Elsewhere:
        """What only the server's node knows, asked over the link this caller holds, or its node's own (D37)."""
        from ..node.served import Elsewhere

        assert self.node is not None
        return Elsewhere(self.node, _link=self.server_link)

    def sender_of(self, repository: Repository, hash_: str) -> str | None:
        """Who sent HASH to the served repository (F2): on a node elsewhere, as
        the server's node says (D37), never the clone, which names its own
        user for everything it pulled. None: no login (deleted) or no such."""
        if self.node is not None and self.node.elsewhere:
            return self._elsewhere().sender(repository, hash_)
        from ..fossil.errors import UnknownArtifact

        try:
            return repository.sender(hash_).login
        except UnknownArtifact:
            return None

    def server_code(self) -> str:
        """This node's name (C1): the served repository's server-code (D29)."""
        with self.reading() as repository:
            return repository.server_code

    def open_runs(self) -> list[OpenRecord]:
        """This node's open records: from its own state where the caller may
        read it (root: at the node, a tool socket); else, on the web page (the
        server's account, kept out of the node's state), from the repository:
        every record of this node an admin sent that has no answer (C4)."""
        if self.node is None:
            return []
        state = self.node.state_dir
        if not state.exists() or os.access(state, os.R_OK | os.X_OK):
            return [record_dir.load()[0] for record_dir in open_records(self.node)]
        from ..node.service.activity import read_activity

        with self.reading() as repository:
            found = read_activity(repository, self.node.node_user, latest=0).open
        return [OpenRecord(entry.placed.hash, entry.record, entry.placed.place, rcvid=entry.placed.rcvid)
                for entry in found]

    def open_run(self) -> OpenRecord | None:
        """The open record on this node whose run acts as this caller, if any."""
        return next((opened for opened in self.open_runs() if opened.record.user == self.login), None)

    # -- writing as the caller (D21) ---------------------------------------------

    def web(self) -> WebSession:
        if self._web is None:
            if self.cookie is not None:
                self._web = WebSession(self.base_url, self.login, None, cookie=self.cookie)
            elif self.password is None:
                raise PermissionError(f"no password for {self.login}: it can only make dry runs (D22)")
            else:
                self._web = WebSession(self.base_url, self.login, self.password)
        return self._web

    def tag(self, checkin: str, name: str, value: str) -> str:
        """Tag CHECKIN (a full hash) as the caller, by sync in its session; the tag change's hash."""
        with self.reading() as repository:
            project_code = repository.project_code
        return self.web().push_tag(checkin, name, value, project_code)

    def close(self) -> None:
        self._web = None

    def __enter__(self) -> Caller:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()


def caller_at_node(node: str, login: str, password: str | None) -> Caller:
    """LOGIN on node NODE of this host, reading its repository (root's `--at-node`)."""
    config = node_config.load(node)
    return Caller(login, Path(config.repository), config.url, node=config, password=password)
