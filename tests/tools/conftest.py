"""A real `fossil server` (tests/fossil's fixture) with what the tools need:
an admin-written runner page, a thread, a check-in by alice, a node
configuration whose state directory is this module's own, and the node's
web page in the server's extroot (D30), as `ocx node init` installs it:
the page is how the CLI and MCP reach the node from anywhere."""
from __future__ import annotations

import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

import ocx
from fossil.conftest import Served, start_served  # tests/fossil's real server
from ocx.fossil.program import serve
from ocx.node.config import NodeConfig, page_secret_path
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
        return Caller(login, self.served.path, self.served.base_url, node=self.node if on_node else None,
                      password=self.served.passwords[login] if password else None, **options)

    def run(self, tool: str, raw: dict, login: str = "admin", **options) -> Answer:
        with self.caller(login, **options) as caller:
            return run_tool(TOOLS[tool], raw, caller)

    def snapshot(self) -> tuple:
        """What any write would change: every artifact, receipt, tag and user."""
        q = self.served.sql
        return (q("SELECT uuid FROM blob ORDER BY uuid"), q("SELECT rcvid FROM rcvfrom ORDER BY rcvid"),
                q("SELECT tagid, rid, value FROM tagxref ORDER BY 1, 2"),
                q("SELECT login, cap FROM user ORDER BY login"))

    def password_file(self, login: str) -> Path:
        path = self.served.work / f"{login}.password"
        path.write_text(self.served.passwords[login] + "\n")
        return path


class PageService:
    """The node's page service (ocx/entry/page_service.py) on a socket of the
    test's, as ocx-page@NAME runs it; its sd_notify messages (READY, STATUS)
    come to the test, read as they come, as systemd reads them."""

    def __init__(self, config_file: Path, socket_path: Path):
        self.config_file, self.socket_path = config_file, socket_path
        self.notices = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.notices.bind(str(socket_path.with_suffix(".notify")))
        self.process: subprocess.Popen | None = None
        self.status, self.ready = "", False
        self.changed = threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        while True:
            try:
                notice = self.notices.recv(4096).decode()
            except OSError:  # closed: the test is over
                return
            with self.changed:
                for line in notice.splitlines():
                    if line.startswith("STATUS="):
                        self.status = line[7:]
                    self.ready = self.ready or line == "READY=1"
                self.changed.notify_all()

    def wait(self, check, what: str, timeout: float = 60.0) -> None:
        """Until CHECK holds, checked as each notice comes."""
        with self.changed:
            if not self.changed.wait_for(check, timeout):
                raise AssertionError(f"the page service: no {what} in {timeout:.0f} s (status {self.status!r})")

    def start(self) -> None:
        env = {**os.environ, "NOTIFY_SOCKET": self.notices.getsockname()}
        self.ready = False
        # Isolated (-I), as on a node, yet the OCX under test: the one this test imported, not whichever
        # checkout the shared virtualenv's path file names.
        source = str(Path(ocx.__file__).resolve().parents[1])
        start = ("import runpy, sys; sys.path.insert(0, sys.argv.pop(1)); "
                 "runpy.run_module('ocx.entry.page_service', run_name='__main__', alter_sys=True)")
        self.process = subprocess.Popen([sys.executable, "-I", "-c", start, source, str(self.config_file),
                                         "--listen", str(self.socket_path)], env=env)
        self.wait(lambda: self.ready, "READY=1")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(10)
        self.process = None


class ServerAndPage:
    """The Fossil server, and the page service beside it: stop() stops both."""

    def __init__(self, server, page: PageService):
        self.server, self.page = server, page

    def __getattr__(self, name: str):
        return getattr(self.server, name)

    def stop(self, *args, **kwargs) -> None:
        self.page.stop()
        self.server.stop(*args, **kwargs)
        self.page.notices.close()


def door_program(python: str, config_file: Path, socket_path: Path) -> str:
    """The ext program as `ocx node init` writes it (init.web_page_program), for a socket of the test's."""
    door = Path(ocx.__file__).resolve().parent / "entry" / "page_door.py"
    return f"#!/bin/sh\nexec {python} -I -S {door} {config_file} {socket_path}\n"


def serve_with_page(base: Path, name_prefix: str) -> tuple[Served, NodeConfig]:
    """A served repository whose server runs the node's page for a node
    configuration of its own (its file and page secret under BASE): the door
    as its ext program, and the page service it hands requests to
    (`served.server.page`), as on a node."""
    served = start_served(base)
    served.server.stop()
    node = NodeConfig(name=f"{name_prefix}-{secrets.token_hex(4)}", repository=str(served.path), url="http://unset")
    etc = served.work / "etc"
    etc.mkdir()
    config_file = etc / f"{node.name}.json"
    extroot = served.work / "ext"
    extroot.mkdir()
    page = PageService(config_file, served.work / "page.sock")
    program = extroot / "ocx"
    program.write_text(door_program(sys.executable, config_file, page.socket_path))
    program.chmod(0o755)
    server = serve(served.path, home=served.home, extra_args=["--extroot", str(extroot)])
    node = node.model_copy(update={"url": server.base_url})
    config_file.write_text(json.dumps(node.model_dump()))
    page_secret_path(config_file).write_text(secrets.token_hex(32) + "\n")
    page.start()
    served.server = ServerAndPage(server, page)
    return served, node


def remove_state(node: NodeConfig) -> None:
    shutil.rmtree(node.state_dir, ignore_errors=True)
    parent = Path(node.state_dir).parent
    if parent.is_dir() and not any(parent.iterdir()):
        parent.rmdir()


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    served, node = serve_with_page(tmp_path_factory.mktemp("tools"), "tools-test")
    try:
        served.clone("admin").write_wiki("sandbox/claude", RUNNER_PAGE)
        thread = served.web("alice").new_thread("Questions", "Ask here.")
        checkin = served.commit("alice", "a.txt", "one\n")
        yield World(served, node, thread, checkin)
    finally:
        served.server.stop()
        remove_state(node)


# -- a node in the systemd container, reached from this host (another host's view) --

def inside(container, *args: str) -> dict:
    """Run tests/tools/web_node_inside.py in the container; its one JSON line."""
    done = container.exec(["/opt/ocx/venv/bin/python", "-m", "tests.tools.web_node_inside", *args], workdir="/src",
                          env={"PYTHONDONTWRITEBYTECODE": "1"})
    assert done.exit_code == 0, done.output
    return json.loads(done.output.strip().splitlines()[-1])


@pytest.fixture(scope="session")
def node_in_container():
    """A systemd container whose Fossil server is published on this host's
    127.0.0.1, on a port free here: the host stands for a person's own machine."""
    from tests.container.systemd_container import SystemdContainer, build_image, engine

    from ocx.fossil.program import free_port

    engine()
    published = free_port()  # the same number inside: the page's base URL is one address
    running = SystemdContainer(build_image(), ports={published: published})
    running.published = published
    running.start()
    try:
        yield running
    finally:
        running.stop()


@pytest.fixture(scope="session")
def webnode(node_in_container) -> dict:
    """The node there, set up by `ocx node init` (web_node_inside.setup)."""
    return inside(node_in_container, "setup", str(node_in_container.published))
