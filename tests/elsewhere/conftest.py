"""A served repository with the server's node page (tests/tools' fixture):
the server's side of nodes elsewhere, driven over HTTP as a node elsewhere
drives it, with real logins."""
from __future__ import annotations

import json
import secrets
from dataclasses import dataclass

import pytest

from ocx.node.config import NodeConfig
from ocx.node.elsewhere.link import ServerLink
from ocx.protocol import render_message
from tools.conftest import remove_state, serve_with_page
from fossil.conftest import Served


@dataclass
class Site:
    served: Served
    node: NodeConfig

    def link(self, login: str) -> ServerLink:
        return ServerLink(self.served.base_url, login, self.served.passwords[login])

    @property
    def server_code(self) -> str:
        with self.served.repository() as repository:
            return repository.server_code

    def register(self, name: str, server_code: str | None = None) -> ServerLink:
        """A node elsewhere registered by the admin; its node user's link."""
        login = f"ocx-node-{name}"
        password = self.link("admin").register(name, login, server_code or secrets.token_hex(20),
                                               ["branch", "no_password", "own_thread"], password=True)["password"]
        self.served.passwords[login] = password
        return self.link(login)

    def record(self, node: str, by: str = "admin", user: str | None = None, **fields) -> tuple[str, str]:
        """A record for NODE posted by BY through Fossil's forms: (its hash, its user)."""
        user = user or f"run-{secrets.token_hex(3)}"
        message = {"ocx": 1, "kind": "record", "node": node, "user": user, "runner": "command",
                   "command": ["true"], "objective": "o", "checkins": ["trunk"], "hears": [], "remote": False,
                   "restrict": {}, "sandbox": {"network": True, "read_only": [], "read_write": []},
                   "budget": {"wall": "1m"}, **fields}
        body = "A record.\n\n```json\n" + json.dumps(message) + "\n```\n"
        return self.served.web(by).new_thread("record", body), user


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    served, node = serve_with_page(tmp_path_factory.mktemp("elsewhere"), "server-test")
    try:
        yield Site(served, node)
    finally:
        served.server.stop()
        remove_state(node)


__all__ = ["Site", "render_message"]
