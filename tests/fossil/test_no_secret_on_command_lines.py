"""No password or sync secret in any process's command line or environment
(D41; docs/security.md, 'Class 3'): every process on a host can read /proc/PID/cmdline.

Each sync here goes through a relay that, when the `fossil` client connects,
reads the cmdline and environ of every process this test started (the client,
the server, and theirs) before passing anything on: the
client is then alive and waiting for its answer, so the scan is sure to
see it (the test asserts it did), and not one byte of the password, its
URL-quoted form or its sync secret may be there.
"""
from __future__ import annotations

import hashlib
import os
import socket
import threading
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path

from ocx.fossil.program import run_fossil
from ocx.fossil.repository import Repository
from ocx.fossil.sync import CallerClone
from tests.process_tree import children, descendants, holding


@dataclass
class Scan:
    fossil_clients: list[str] = field(default_factory=list)  # cmdlines of this test's own fossil children
    leaks: list[str] = field(default_factory=list)


def scan_processes(secrets: list[bytes]) -> Scan:
    """This test's processes (the fossil client, the server, theirs): the scan reads no other's (process_tree)."""
    found = Scan(leaks=[f"/proc/{where}" for where in holding(secrets, descendants(os.getpid()))])
    for pid in children(os.getpid()):
        try:
            data = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:  # gone meanwhile
            continue
        if data.startswith(b"fossil\0"):
            found.fossil_clients.append(data.replace(b"\0", b" ").decode(errors="replace"))
    return found


class ScanningRelay:
    """A TCP relay to the Fossil server that scans /proc as each client connects."""

    def __init__(self, target_port: int, secrets: list[bytes]):
        self.target_port, self.secrets = target_port, secrets
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.scans: list[Scan] = []
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            self.scans.append(scan_processes(self.secrets))
            server = socket.create_connection(("127.0.0.1", self.target_port))
            for a, b in ((client, server), (server, client)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    @staticmethod
    def _pipe(source: socket.socket, sink: socket.socket) -> None:
        try:
            while chunk := source.recv(65536):
                sink.sendall(chunk)
        except OSError:
            pass
        finally:
            for end in (source, sink):
                try:
                    end.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def close(self) -> None:
        self.listener.close()


def secret_forms(served, login: str) -> list[bytes]:
    password = served.passwords[login]
    with served.repository() as repository:
        project = repository.project_code
    shared = hashlib.sha1(f"{project}/{login}/{password}".encode()).hexdigest()  # what last-sync-pw becomes
    return [password.encode(), urllib.parse.quote(password, safe="").encode(), shared.encode()]


def test_clone_pull_and_push_as_a_login_put_no_secret_where_another_process_could_read_it(served, tmp_path):
    relay = ScanningRelay(served.server.port, secret_forms(served, "bob"))
    try:
        clone = CallerClone.create(tmp_path / "bob.fossil", relay.url, "bob", served.passwords["bob"],
                                   home=tmp_path / "home")
        clone.pull()
        checkout = clone.open_checkout(tmp_path / "checkout")
        (checkout / "hole3.txt").write_text("no secret on a command line\n")
        clone.commit(checkout, "no secret on a command line", push=False)
        # a no_password run's clone: the password not kept (its push runs no `fossil`: by sync in a session, push.py)
        bare = CallerClone.create(tmp_path / "bare.fossil", relay.url, "bob", served.passwords["bob"],
                                  home=tmp_path / "home2", save_password=False)
    finally:
        relay.close()
    assert relay.scans, "no sync went through the relay"
    for scan in relay.scans:
        assert scan.fossil_clients, "a scan saw no fossil client: it proved nothing"
        assert not scan.leaks, f"a secret was readable in {scan.leaks} while {scan.fossil_clients} ran"
    with Repository(bare.path) as repository:
        assert repository.config("last-sync-pw") is None  # save_password=False keeps none


def test_the_scan_sees_a_password_given_on_a_command_line(served, tmp_path):
    """The detector itself: a clone with the password in its URL is caught."""
    password = served.passwords["alice"]
    relay = ScanningRelay(served.server.port, [password.encode()])
    try:
        url = f"http://alice:{urllib.parse.quote(password, safe='')}@127.0.0.1:{relay.port}/"
        run_fossil(["clone", url, str(tmp_path / "leaky.fossil")], home=tmp_path / "home", user="alice")
    finally:
        relay.close()
    assert any(scan.leaks for scan in relay.scans)
