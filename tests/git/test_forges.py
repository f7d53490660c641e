"""Forge mirrors (D50, D41), for real: a bare repository served by git's own
`git http-backend` over HTTP behind Basic authentication (a small CGI server
here), and the real `git` client pushing the mirror to it. The password is
only in a root-only credentials file: while the push is at the server, no
process the push started has it in its command line or environment."""
from __future__ import annotations

import base64
import os
import secrets
import shutil
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from pydantic import ValidationError

from ocx.git.forges import ForgePusher, ForgeResult, push_mirror
from ocx.git.program import run_git
from ocx.node.config import NodeConfig
from tests.process_tree import descendants, holding

if shutil.which("git") is None:  # pragma: no cover - the image has it
    pytest.skip("git is not installed", allow_module_level=True)

IDENTITY = {"GIT_AUTHOR_NAME": "n", "GIT_AUTHOR_EMAIL": "n@example.org", "GIT_COMMITTER_NAME": "n",
            "GIT_COMMITTER_EMAIL": "n@example.org"}


class ForgeServer(ThreadingHTTPServer):
    """Its end never waits on a request's thread (socketserver joins them by default): one held on a
    busy machine fails its own test, and never keeps the suite from going on."""

    block_on_close = False


@dataclass
class Forge:
    """A bare repository behind `git http-backend`, needing LOGIN:PASSWORD."""

    root: Path
    login: str
    password: str
    refused: int = 0
    admitted: int = 0
    seen_holding: list[str] = field(default_factory=list)
    server: ThreadingHTTPServer | None = None
    older: frozenset[int] = frozenset()  # processes this one had before the forge: none of the push's

    def start(self) -> None:
        """Serve on a port of 127.0.0.1's own choosing, from a thread of this process."""
        self.older = frozenset(descendants(os.getpid()))
        self.server = ForgeServer(("127.0.0.1", 0), self.handler())
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        assert self.server is not None
        self.server.shutdown()
        self.server.server_close()

    def pushing(self) -> list[int]:
        """The processes started since the forge was: the push's (and the forge's own git). Only these are
        read, never one of another test's, whose memory lock a busy machine may hold for long (process_tree)."""
        return [pid for pid in descendants(os.getpid()) if pid not in self.older]

    @property
    def url(self) -> str:
        assert self.server is not None
        return f"http://127.0.0.1:{self.server.server_address[1]}/mirror.git"

    def handler(self) -> type[BaseHTTPRequestHandler]:
        forge = self

        class Handler(BaseHTTPRequestHandler):
            timeout = 60  # a client gone quiet mid-request gives its thread back

            def log_message(self, *_args: object) -> None:
                pass

            def do_GET(self) -> None:
                self.cgi()

            def do_POST(self) -> None:
                self.cgi()

            def cgi(self) -> None:
                wanted = "Basic " + base64.b64encode(f"{forge.login}:{forge.password}".encode()).decode()
                if self.headers.get("Authorization") != wanted:
                    forge.refused += 1
                    self.send_response(401)
                    self.send_header("WWW-Authenticate", 'Basic realm="forge"')
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                forge.admitted += 1
                # Sampled while git's push waits on this answer: its processes are all alive now.
                forge.seen_holding += holding([forge.password.encode()], forge.pushing())
                path, _, query = self.path.partition("?")
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                env = {"PATH": "/usr/bin:/bin", "GIT_PROJECT_ROOT": str(forge.root), "GIT_HTTP_EXPORT_ALL": "1",
                       "REQUEST_METHOD": self.command, "PATH_INFO": path, "QUERY_STRING": query,
                       "CONTENT_TYPE": self.headers.get("Content-Type", ""), "CONTENT_LENGTH": str(len(body)),
                       "HTTP_CONTENT_ENCODING": self.headers.get("Content-Encoding", ""),
                       "REMOTE_USER": forge.login, "REMOTE_ADDR": "127.0.0.1", "GIT_CONFIG_NOSYSTEM": "1",
                       "HOME": str(forge.root)}
                done = subprocess.run(["git", "http-backend"], input=body, env=env, capture_output=True,
                                      timeout=60, check=False)
                head, _, payload = done.stdout.partition(b"\r\n\r\n")
                headers = [line.split(":", 1) for line in head.decode().split("\r\n") if ":" in line]
                status = next((int(v.split()[0]) for k, v in headers if k.lower() == "status"), 200)
                self.send_response(status)
                for name, value in headers:
                    if name.lower() != "status":
                        self.send_header(name, value.strip())
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        return Handler


@pytest.fixture
def forge(tmp_path: Path) -> Iterator[Forge]:
    root = tmp_path / "forge"
    run_git(["init", "-q", "--bare", str(root / "mirror.git")], home=tmp_path / "home")
    running = Forge(root, "mirror-bot", secrets.token_hex(16))
    running.start()
    try:
        yield running
    finally:
        running.stop()


@pytest.fixture
def mirror(tmp_path: Path) -> Path:
    """A mirror as the node keeps one: branches, a tag and the verdicts' notes (D49)."""
    work, home = tmp_path / "mirror", tmp_path / "home"

    def git(*args: str) -> None:
        run_git(list(args), home=home, cwd=work, env=IDENTITY)

    run_git(["init", "-q", "-b", "master", str(work)], home=home)
    (work / "a.txt").write_text("a\n")
    git("add", "a.txt")
    git("commit", "-q", "-m", "first")
    git("tag", "release-1")
    git("checkout", "-q", "-b", "feature")
    git("commit", "-q", "--allow-empty", "-m", "on feature")
    git("notes", "--ref=ocx", "add", "-m", "ci alice pass", "HEAD")
    return work


def credentials(tmp_path: Path, forge: Forge, password: str, mode: int = 0o600) -> Path:
    path = tmp_path / "node.git-credentials"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    with os.fdopen(fd, "w") as out:
        out.write(f"http://{forge.login}:{password}@127.0.0.1:{forge.server.server_address[1]}\n")  # type: ignore[union-attr]
    os.chmod(path, mode)
    return path


def refs(directory: Path, home: Path) -> dict[str, str]:
    out = run_git(["for-each-ref", "--format=%(refname) %(objectname)"], home=home, cwd=directory).stdout
    return dict(line.split(" ") for line in out.splitlines())


def test_the_mirror_reaches_the_forge_with_the_files_credentials_and_never_shows_them(
        forge: Forge, mirror: Path, tmp_path: Path) -> None:
    results = push_mirror(mirror, [forge.url], credentials(tmp_path, forge, forge.password), home=tmp_path / "h")
    assert [r.ok for r in results] == [True], results
    pushed = refs(forge.root / "mirror.git", tmp_path / "home")
    assert pushed == refs(mirror, tmp_path / "home")
    assert {"refs/heads/master", "refs/heads/feature", "refs/tags/release-1", "refs/notes/ocx"} <= set(pushed)
    assert forge.admitted > 0 and forge.seen_holding == [], forge.seen_holding
    assert forge.password not in repr(results)


def test_a_wrong_password_is_reported_and_never_raises(forge: Forge, mirror: Path, tmp_path: Path) -> None:
    results = push_mirror(mirror, [forge.url], credentials(tmp_path, forge, "not-it"), home=tmp_path / "h")
    assert len(results) == 1 and not results[0].ok and results[0].detail
    assert forge.refused > 0 and forge.admitted == 0
    assert refs(forge.root / "mirror.git", tmp_path / "home") == {}


def test_a_forge_that_is_down_does_not_keep_the_next_from_its_push(forge: Forge, mirror: Path,
                                                                   tmp_path: Path) -> None:
    with ThreadingHTTPServer(("127.0.0.1", 0), BaseHTTPRequestHandler) as closed:
        down = f"http://127.0.0.1:{closed.server_address[1]}/gone.git"  # bound, never listening: refused
    results = push_mirror(mirror, [down, forge.url], credentials(tmp_path, forge, forge.password),
                          home=tmp_path / "h")  # each push bounded as the node's are (PUSH_SECONDS)
    assert [r.ok for r in results] == [False, True], results


def test_credentials_others_may_read_push_nothing(forge: Forge, mirror: Path, tmp_path: Path) -> None:
    results = push_mirror(mirror, [forge.url], credentials(tmp_path, forge, forge.password, 0o644),
                          home=tmp_path / "h")
    assert not results[0].ok and "0600" in results[0].detail
    assert forge.admitted == 0 and forge.refused == 0


@pytest.mark.parametrize("url", ["https://bot:token@forge.example/r.git", "ssh://forge.example/r.git",
                                 "https://forge.example/r.git?token=x", "https://forge.example/a b", "-oops"])
def test_a_bad_forge_in_the_configuration_is_refused_naming_the_field_not_the_value(url: str) -> None:
    with pytest.raises(ValidationError) as refused:
        NodeConfig(name="n", repository="/r.fossil", url="http://127.0.0.1:8080", git_forges=(url,))
    assert refused.value.errors()[0]["loc"] == ("git_forges",)
    assert "token" not in str(refused.value)


def test_a_forge_that_never_answers_is_given_up_in_bounded_time(mirror: Path, tmp_path: Path) -> None:
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(8)  # connections are taken by the kernel and never answered
    try:
        started = time.monotonic()
        results = push_mirror(mirror, [f"http://127.0.0.1:{silent.getsockname()[1]}/r.git"],
                              tmp_path / "none", home=tmp_path / "h", timeout=3)
        took = time.monotonic() - started
    finally:
        silent.close()
    assert not results[0].ok and "timed out" in results[0].detail
    assert took < 30, took  # the push's own bound (3 s), far from git's stall timer or none


def test_the_pusher_returns_at_once_and_reports_each_push_off_the_callers_thread(
        forge: Forge, mirror: Path, tmp_path: Path) -> None:
    reports: list[list[ForgeResult]] = []
    threads: set[str] = set()

    def report(results: list[ForgeResult]) -> None:
        threads.add(threading.current_thread().name)
        reports.append(results)

    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(8)
    try:
        pusher = ForgePusher(mirror, [f"http://127.0.0.1:{silent.getsockname()[1]}/r.git", forge.url],
                             credentials(tmp_path, forge, forge.password), home=tmp_path / "h", report=report,
                             timeout=10)  # the real forge's push gets as long, on a busy machine
        started = time.monotonic()
        for _ in range(3):
            pusher.push_soon()
        assert time.monotonic() - started < 1.0  # the silent forge holds the worker, not the caller
        assert pusher.wait(120)
    finally:
        silent.close()
    assert 1 <= len(reports) <= 2, reports  # asks made while a push runs are one more push, not one each
    assert all([r.ok for r in results] == [False, True] for results in reports), reports
    assert threads == {"ocx-forge-push"}
    assert refs(forge.root / "mirror.git", tmp_path / "home") == refs(mirror, tmp_path / "home")


def test_a_hook_in_the_mirror_never_runs_when_the_node_pushes(forge: Forge, mirror: Path, tmp_path: Path) -> None:
    ran = tmp_path / "hook-ran"
    hook = mirror / ".git" / "hooks" / "pre-push"
    hook.write_text(f"#!/bin/sh\ntouch {ran}\n")
    hook.chmod(0o755)
    results = push_mirror(mirror, [forge.url], credentials(tmp_path, forge, forge.password), home=tmp_path / "h")
    assert results[0].ok, results
    assert not ran.exists()
