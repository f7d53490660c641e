"""The page kept up (docs/console.md, 'Fast'): the door Fossil runs for /ext/ocx
(ocx/page/page_door.py) hands each request to the page service
(ocx/page/page_service.py), which answers as the page in its own process
would; when the service is gone the door runs the page itself. Against a
real `fossil server` whose ext program is the door, and the service on a
socket of the test's, its sd_notify status read as systemd reads it. The
units, the socket's owner and a run's attempt on it are in the systemd
container (test_console_on_node.py, tests/node_system/test_boundary_page.py)."""
from __future__ import annotations

import ast
import json
import re
import socket
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from ocx.page import page_door, page_service

from .conftest import door_program, remove_state, serve_with_page

DOOR = Path(page_door.__file__)


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    served, node = serve_with_page(tmp_path_factory.mktemp("page"), "page-test")
    try:
        yield served
    finally:
        served.server.stop()
        remove_state(node)


def counts(site) -> dict[str, int]:
    """The service's tally, from its newest status line (what `systemctl status` shows)."""
    found = re.match(r"answered (\d+) requests, (\d+) failed, (\d+) not taken", site.server.page.status)
    assert found, site.server.page.status
    return dict(zip(("answered", "failed", "not taken"), map(int, found.groups())))


def tally_after(site, what: str, before: dict[str, int], more: int = 1) -> dict[str, int]:
    """The tally once WHAT has grown by MORE past BEFORE (the service sends its status as requests end)."""
    site.server.page.wait(lambda: counts(site)[what] >= before[what] + more, f"{more} more {what}")
    return counts(site)


def cgi_env(site, query: str = "json", method: str = "GET", login: str = "admin", **more: str) -> dict[str, str]:
    """What Fossil gives its ext program (2.21 extcgi.c: its environment cleared, then these)."""
    host = site.base_url.removeprefix("http://")
    return {"FOSSIL_REPOSITORY": str(site.path), "FOSSIL_USER": login, "FOSSIL_CAPABILITIES": "as",
            "REQUEST_METHOD": method, "QUERY_STRING": query, "SCRIPT_NAME": "/ext/ocx", "HTTP_HOST": host,
            "REQUEST_SCHEME": "http", "HTTP_ACCEPT_ENCODING": "", **more}


def config_file(site) -> str:
    return str(site.server.page.config_file)


def through_door(site, env: dict[str, str], body: bytes = b"", socket_path: str | None = None):
    path = socket_path or str(site.server.page.socket_path)
    return subprocess.run([sys.executable, "-I", "-S", str(DOOR), config_file(site), path], env=env, input=body,
                          capture_output=True, timeout=120, cwd="/")


def in_process(site, env: dict[str, str], body: bytes = b""):
    return subprocess.run([sys.executable, "-m", "ocx.page.web", config_file(site)], env=env, input=body,
                          capture_output=True, timeout=120, cwd="/")


def test_a_look_through_fossil_is_answered_by_the_page_service(site):
    before = counts(site)
    answer = json.loads(site.web("admin").get("/ext/ocx?json").text)
    assert answer["login"] == "admin" and re.fullmatch(r"[0-9a-f]{64}", answer["token"])
    after = tally_after(site, "answered", before)
    assert after["answered"] == before["answered"] + 1 and after["failed"] == before["failed"]
    page = site.web("admin").get("/ext/ocx").text
    assert 'id="ocx-console"' in page and 'id="tool-create"' in page
    tally_after(site, "answered", after)


def test_the_service_answers_exactly_what_the_page_in_its_own_process_answers(site):
    calls = [(cgi_env(site), b""), (cgi_env(site, login="carol"), b""),
             (cgi_env(site, "output=" + "0" * 40), b""),
             (cgi_env(site, method="POST", CONTENT_TYPE="application/json", CONTENT_LENGTH="47",
                      HTTP_REFERER=site.base_url + "/ext/ocx"), b'{"tool": "status", "input": {}, "token": "bad"}')]
    for env, body in calls:
        door, alone = through_door(site, env, body), in_process(site, env, body)
        assert door.returncode == alone.returncode == 0, (door.stderr, alone.stderr)
        assert door.stdout == alone.stdout and door.stdout.startswith(b"Content-Type: application/json\r\n\r\n")
    refused = json.loads(door.stdout.split(b"\r\n\r\n", 1)[1])
    assert refused["stopped"]["field"] == "caller" and "D43" in refused["stopped"]["why"]


def test_with_the_service_gone_the_door_runs_the_page_itself(site, tmp_path):
    page = site.server.page
    expected = in_process(site, cgi_env(site)).stdout
    assert through_door(site, cgi_env(site), socket_path=str(tmp_path / "none.sock")).stdout == expected
    page.stop()  # its socket file stays, and nothing listens on it
    try:
        assert through_door(site, cgi_env(site)).stdout == expected
        answer = json.loads(site.web("admin").get("/ext/ocx?json").text)
        assert answer["login"] == "admin"
        assert 'id="tool-create"' in site.web("admin").get("/ext/ocx").text
    finally:
        page.start()


def test_a_request_the_door_gave_up_on_is_never_run_and_bad_ones_stop_nothing(site):
    before = counts(site)
    path = str(site.server.page.socket_path)
    with socket.socket(socket.AF_UNIX) as given_up:  # a whole request, then no go
        given_up.connect(path)
        given_up.sendall(page_door.request({b"REQUEST_METHOD": b"GET"}, b"/", b""))
        assert given_up.recv(1) == b"R"
    after = tally_after(site, "not taken", before)
    assert after["answered"] == before["answered"]
    with socket.socket(socket.AF_UNIX) as oversized:  # a block larger than the service reads
        oversized.connect(path)
        oversized.sendall((page_service.ENV_MAX + 1).to_bytes(4, "big") + b"x" * 1024)
        try:
            unanswered = oversized.recv(1) == b""
        except ConnectionResetError:  # closed with what it did not read still queued
            unanswered = True
        assert unanswered
    after = tally_after(site, "not taken", after)
    broken = through_door(site, cgi_env(site, FOSSIL_REPOSITORY=str(DOOR)))  # the page itself fails
    assert broken.returncode == 1 and broken.stdout == b""
    after = tally_after(site, "failed", after)
    answers = []

    def look() -> None:
        answers.append(json.loads(through_door(site, cgi_env(site)).stdout.split(b"\r\n\r\n", 1)[1]))

    looks = [threading.Thread(target=look) for _ in range(page_service.CONCURRENT + 4)]
    for thread in looks:
        thread.start()
    for thread in looks:
        thread.join(120)
    assert len(answers) == len(looks) and {a["login"] for a in answers} == {"admin"}
    tally_after(site, "answered", after, len(looks))
    assert site.server.page.process.poll() is None


def test_the_socket_is_its_accounts_alone_and_the_door_imports_only_the_standard_library(site):
    mode = Path(site.server.page.socket_path).stat().st_mode
    assert stat.S_ISSOCK(mode) and stat.S_IMODE(mode) == 0o600
    imported = {alias.name.split(".")[0] for node in ast.walk(ast.parse(DOOR.read_text()))
                if isinstance(node, (ast.Import, ast.ImportFrom)) for alias in node.names}
    assert imported <= set(sys.stdlib_module_names), imported
    started = subprocess.run([sys.executable, "-I", "-S", "-X", "importtime", str(DOOR), config_file(site),
                              str(site.server.page.socket_path)], env=cgi_env(site), capture_output=True, timeout=60)
    modules = {line.rsplit("|", 1)[-1].strip() for line in started.stderr.decode().splitlines() if "|" in line}
    assert "site" not in modules and not any(m.startswith("ocx") for m in modules), modules
    assert json.loads(started.stdout.split(b"\r\n\r\n", 1)[1])["login"] == "admin"
    assert door_program("PY", Path("/etc/ocx/n.json"), Path("/run/ocx/n/page.sock")).endswith(
        f"PY -I -S {DOOR.resolve()} /etc/ocx/n.json /run/ocx/n/page.sock\n")
