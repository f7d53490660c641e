"""A real `fossil server` (tests/fossil's fixture) with what the tools need:
an admin-written runner page, a thread, a check-in by alice, and a node
configuration whose state directory is this module's own."""
from __future__ import annotations

import secrets
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from fossil.conftest import Served, start_served  # tests/fossil's real server
from ocx.node.config import NodeConfig
from ocx.tools.caller import Caller
from ocx.tools.framework import Answer, run_tool
from ocx.tools.registry import TOOLS

RUNNER_PAGE = '```json\n{"command": ["/bin/true"], "remote": ["--remote"]}\n```\n'


@dataclass
class World:
    served: Served
    node: NodeConfig
    thread: str  # a thread's root, by alice
    checkin: str  # a check-in by alice

    def caller(self, login: str, *, on_node: bool = True, password: bool = True, **options) -> Caller:
        return Caller(login, self.served.passwords[login] if password else None, self.served.path,
                      self.served.base_url, node=self.node if on_node else None, **options)

    def run(self, tool: str, raw: dict, login: str = "admin", **options) -> Answer:
        with self.caller(login, **options) as caller:
            return run_tool(TOOLS[tool], raw, caller)

    def snapshot(self) -> tuple:
        """What any write would change: every artifact, receipt, tag and user."""
        q = self.served.sql
        return (q("SELECT uuid FROM blob ORDER BY uuid"), q("SELECT rcvid FROM rcvfrom ORDER BY rcvid"),
                q("SELECT tagid, rid, value FROM tagxref ORDER BY 1, 2"),
                q("SELECT login, cap FROM user ORDER BY login"))


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    served = start_served(tmp_path_factory.mktemp("tools"))
    node = NodeConfig(name=f"tools-test-{secrets.token_hex(4)}", repository=str(served.path), url=served.base_url)
    try:
        served.clone("admin").write_wiki("sandbox/claude", RUNNER_PAGE)
        thread = served.web("alice").new_thread("Questions", "Ask here.")
        checkin = served.commit("alice", "a.txt", "one\n")
        yield World(served, node, thread, checkin)
    finally:
        served.server.stop()
        shutil.rmtree(node.state_dir, ignore_errors=True)
        Path(node.state_dir).parent.rmdir() if Path(node.state_dir).parent.is_dir() and not any(Path(node.state_dir).parent.iterdir()) else None
