"""A real node in the systemd container, driven as people drive one.

Records go through Fossil's web forms as real logins; runner pages and
check-ins by sync; the answers are read back from the repository with
their senders. Nothing of OCX's is stood in for: the node is set up by
`ocx node init`, and its own units do the rest.
"""
from __future__ import annotations

import json
import os
import secrets
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from ocx.fossil import admin
from ocx.fossil.repository import Repository
from ocx.fossil.sync import CallerClone
from ocx.fossil.web import WebSession
from ocx.node import config as node_config
from ocx.node.host_paths import RELEASES_DIRECTORY
from ocx.node.releases.services import OWN_SERVICES
from ocx.protocol import Response, parse_message, render_message
from ocx.protocol.finder import find_message

PROGRAM = Path(__file__).with_name("session_program.py")
PYTHON = "/opt/ocx/venv/bin/python"
RUNNER = "testrun"


def ocx(*args: str, check: bool = True, timeout: float = 120) -> subprocess.CompletedProcess:
    done = subprocess.run([PYTHON, "-m", "ocx.cli.launch", *args], capture_output=True, text=True, timeout=timeout)
    if check and done.returncode != 0:
        raise AssertionError(f"ocx {' '.join(args)} exited {done.returncode}:\n{done.stdout}\n{done.stderr}")
    return done


def systemctl(*args: str) -> str:
    return subprocess.run(["systemctl", *args], capture_output=True, text=True).stdout


def journal(unit: str) -> str:
    return subprocess.run(["journalctl", "-u", unit, "-o", "cat", "--no-pager"], capture_output=True, text=True).stdout


def node_idle(name: str) -> bool:
    """The node's service has no pass running and nothing pending: its status line says
    `idle` (ocx/node_service/serve.py), or it is not up at all."""
    shown = systemctl("show", f"ocx-node@{name}.service", "-p", "ActiveState", "-p", "StatusText")
    values = dict(line.split("=", 1) for line in shown.splitlines() if "=" in line)
    return values.get("ActiveState") != "active" or values.get("StatusText", "").startswith("idle")


def wait_for(check, timeout: float = 30.0, every: float = 0.1, what: str = "condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(every)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


def back_on_the_installation() -> None:
    """After a test moved the container's releases (D46): the links removed, then every node's own services
    restarted (they moved with the links) onto the installation, then the releases' root removed whole, as
    the container began; in this order, else the next module's runs name a release's python that is gone."""
    for link in [path for name in ("current", "previous", "next")
                 if os.path.lexists(path := f"{RELEASES_DIRECTORY}/{name}")]:
        os.unlink(link)
    subprocess.run(["systemctl", "try-restart", *OWN_SERVICES], timeout=300, check=False)
    shutil.rmtree(RELEASES_DIRECTORY, ignore_errors=True)


@dataclass
class Login:
    name: str
    password: str

    def web(self, url: str) -> WebSession:
        return WebSession(url, self.name, self.password)


@dataclass
class Node:
    name: str
    config: node_config.NodeConfig
    admin: Login
    home: Path
    logins: dict[str, Login] = field(default_factory=dict)

    @property
    def url(self) -> str:
        return self.config.url

    @property
    def server_code(self) -> str:
        with Repository(self.config.repository) as repository:
            return repository.server_code

    def repository(self) -> Repository:
        return Repository(self.config.repository)

    def login(self, name: str, capabilities: str) -> Login:
        """A person's login on the served repository, with exactly these letters."""
        with self.repository() as repository:
            exists = any(user.login == name for user in repository.users())
        if not exists:
            password = admin.create_user(self.config.repository, name, capabilities, f"{name}@test",
                                         home=self.home)
            self.logins[name] = Login(name, password)
        else:
            admin.set_capabilities(self.config.repository, name, capabilities, home=self.home)
        return self.logins.get(name) or Login(name, "")

    def clone_of(self, login: Login) -> CallerClone:
        path = self.home / f"{login.name}-{secrets.token_hex(3)}.fossil"
        return CallerClone.create(path, self.url, login.name, login.password, home=self.home)

    def runner_page(self, author: Login, env: dict[str, str] | None = None, name: str = RUNNER,
                    remote: list[str] | None = None) -> str:
        page = {"command": [PYTHON, str(PROGRAM)], "homes": [], "env": env or {}}
        if remote is not None:
            page["remote"] = remote
        text = f"# Runner {name} for tests\n\n```json\n{json.dumps(page)}\n```\n"
        return self.clone_of(author).write_wiki(f"sandbox/{name}", text)

    def record(self, **fields) -> dict:
        base = {"ocx": 1, "kind": "record", "node": self.server_code, "user": f"run-{secrets.token_hex(3)}",
                "runner": RUNNER, "objective": "exit 0", "checkins": [], "hears": [self.admin.name],
                "remote": False, "restrict": {}, "sandbox": {"network": True, "read_only": [], "read_write": []},
                "budget": {"wall": "2m"}}
        base.update(fields)
        return base

    def post(self, message: dict, by: Login | None = None, title: str = "OCX record") -> str:
        """A new thread whose first post is MESSAGE, written through the web page."""
        body = "A record for the node.\n\n```json\n" + json.dumps(message) + "\n```\n"
        return (by or self.admin).web(self.url).new_thread(title, body)

    def barrier(self) -> str:
        """A record posted after everything before it, and its response: the
        node reads receipts in order (D26), so once this one is answered every
        earlier artifact was read and acted on. What a test says did NOT happen
        is checked after a barrier, never after a sleep: a slow machine makes
        a sleep prove nothing."""
        record = self.post(self.record(objective="exit 0"))
        self.response(record, timeout=120)
        return record

    def reply(self, to: str, text: str, by: Login | None = None) -> str:
        return (by or self.admin).web(self.url).reply(to, text)

    def stop(self, record_hash: str, by: Login | None = None) -> str:
        stop = {"ocx": 1, "kind": "stop", "node": self.server_code, "stops": record_hash}
        return self.reply(record_hash, "Stop it.\n\n```json\n" + json.dumps(stop) + "\n```\n", by)

    def responses(self, record_hash: str) -> list[tuple[Response, str | None]]:
        """Every response to RECORD_HASH in its thread, with its sender (rcvfrom)."""
        found = []
        with self.repository() as repository:
            for post in repository.thread(record_hash):
                message = find_message(post.body)
                if message and message.get("kind") == "response" and message.get("answers") == record_hash:
                    found.append((parse_message(message), post.sender.login))
        return found

    def response(self, record_hash: str, timeout: float = 60.0) -> Response:
        try:
            answers = wait_for(lambda: self.responses(record_hash), timeout, 0.2, f"a response to {record_hash[:12]}")
        except AssertionError as error:
            def journal(unit: str, lines: int) -> str:
                return subprocess.run(["journalctl", "-u", unit, "-n", str(lines), "--no-pager", "-o", "short-precise"],
                                      capture_output=True, text=True).stdout
            raise AssertionError(f"{error}\n--- the node's journal ---\n{journal(f'ocx-node@{self.name}.service', 40)}"
                                 f"--- the run's unit ---\n{journal(self.unit(record_hash), 20)}") from None
        assert len(answers) == 1, answers
        response, sender = answers[0]
        assert sender == self.config.node_user, f"response sent by {sender}"
        return response

    def unit(self, record_hash: str) -> str:
        return f"ocx-{self.server_code[:12]}-{record_hash[:12]}.service"

    def capabilities(self, login: str) -> str:
        with self.repository() as repository:
            return repository.user(login).capabilities


def fenced(message: dict, text: str = "A record for the node.") -> str:
    return f"{text}\n\n```json\n{json.dumps(message)}\n```\n"


def ticket_responses(node: Node, ticket: str, record_hash: str) -> list[tuple[Response, str | None]]:
    """Every response to RECORD_HASH among the ticket's changes, with its sender (D12)."""
    found = []
    with node.repository() as repository:
        for change in repository.ticket_changes(ticket):
            message = find_message(change.comment or "")
            if message and message.get("kind") == "response" and message.get("answers") == record_hash:
                found.append((parse_message(message), change.sender.login))
    return found
