"""claude and codex, as the runner pages in contrib/runners/ run them, start
under the hardened unit of a real run (docs/security.md, 'The unit's sandbox'), with and without network.

tests/contrib checks each page against its CLI's own parser on the host;
here the same CLIs (the host's, mounted read-only at AGENTS) run as a
node runs them: a record for each page's runner, its unit with every
property of the unit's sandbox (sandbox.py), its relay, `ocx mcp` as its
tools. The pages are the contrib pages with two things mapped: PATH starts
where the CLIs are, and the command runs under tests/contrib/offline.py,
which stands in for the CLI's service on the run's own loopback (a 401 for
the missing key, each request on the journal), so nothing leaves the host.

What each must do, as offline on the host: claude connects `ocx mcp` with
OCX's six tools, takes the record's delivery as its user message and ends
its turn at the sign-in; codex sends the record's text to its service with
OCX's tools offered and ends its turn at the 401. Without network a unit
allows no IP socket at all, so codex's service is out of reach: it still
starts, reads its flags and config, starts its turn and waits for the
network, as on any host without one, until the record is stopped.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from ocx.node.runner_pages import RunnerPage, parse_page
from ocx.protocol import Outcome
from ocx.tools.registry import TOOLS

from .harness import PYTHON, journal, systemctl, wait_for

pytestmark = pytest.mark.systemd

ROOT = Path(__file__).resolve().parents[2]
AGENTS = Path(os.environ.get("OCX_AGENTS_DIR", "/var/cache/ocx-tests/agents")) / "node_modules" / ".bin"
OFFLINE = ROOT / "tests" / "contrib" / "offline.py"
NOT_LOGGED_IN = "Not logged in · Please run /login"
OBJECTIVE = "Keep docs/ in step; a check-in passes when each command is documented."
LOOPBACK_PROVIDER = """model_provider = "loopback"
[model_providers.loopback]
name = "loopback"
base_url = "http://127.0.0.1:18999/v1"
wire_api = "responses"
request_max_retries = 0
stream_max_retries = 0
"""


@pytest.fixture(scope="module")
def agents() -> Path:
    missing = [name for name in ("claude", "codex") if not (AGENTS / name).exists()]
    if missing:  # loudly: the container mounts the host's CLIs (tests/container/systemd_container.py)
        pytest.fail(f"{', '.join(missing)} not in {AGENTS}: `bash contrib/setup.sh --test` installs them")
    return AGENTS


def contrib_page(name: str) -> RunnerPage:
    return parse_page((ROOT / "contrib" / "runners" / f"{name}.md").read_text())


def offline_runner(node, name: str, page: RunnerPage) -> str:
    """The page as the node reads it, its command under offline.py and PATH where the CLIs are."""
    runner = f"{name}-offline"
    body = {"command": [PYTHON, str(OFFLINE), "-", "--", *page.command], "homes": page.homes,
            "env": {**page.env, "PATH": f"{AGENTS}:/usr/local/bin:/usr/bin:/bin"}}
    if page.remote is not None:
        body["remote"] = page.remote
    for home in page.homes:
        os.makedirs(home, exist_ok=True)
    node.clone_of(node.admin).write_wiki(f"sandbox/{runner}", f"# Runner {runner}\n\n```json\n{json.dumps(body)}\n```\n")
    return runner


def events(text: str) -> list[dict]:
    found = []
    for line in text.splitlines():
        if line.startswith("{"):
            try:
                found.append(json.loads(line))
            except ValueError:
                pass  # a line the terminal cut: not the one asserted
    return found


def sandboxed(network: bool) -> dict:
    return {"network": network, "read_only": [], "read_write": []}


@pytest.mark.parametrize("network", [True, False], ids=["network", "no-network"])
def test_claude_starts_under_the_hardened_unit_connects_its_tools_and_fails_only_at_sign_in(node, agents, network):
    runner = offline_runner(node, "claude", contrib_page("claude"))
    record = node.post(node.record(runner=runner, objective=OBJECTIVE, sandbox=sandboxed(network),
                                   budget={"wall": "10m"}))
    unit = node.unit(record)

    def turn_ended() -> list[dict]:
        seen = events(journal(unit))
        return seen if any(e.get("type") == "result" for e in seen) else []

    try:
        seen = wait_for(turn_ended, 240, 0.5, f"claude's first turn in {unit}")
    except AssertionError as error:
        raise AssertionError(f"{error}\n{journal(unit)[-4000:]}") from None
    finally:
        hardened = systemctl("show", unit, "-p", "RestrictNamespaces", "--value").strip()
        node.stop(record)  # a session waits for its next delivery: the port of its stand-in is freed
    assert hardened == "yes"  # the unit it ran in is the hardened one
    init = next(e for e in seen if e.get("type") == "system" and e.get("subtype") == "init")
    assert init["mcp_servers"] == [{"name": "ocx", "status": "connected"}]
    assert {f"mcp__ocx__{name}" for name in TOOLS} <= set(init["tools"])
    replayed = [e["message"]["content"] for e in seen if e.get("type") == "user" and e.get("isReplay")]
    assert replayed == [f"Record {record}: {OBJECTIVE}"]
    results = [(e["is_error"], e["result"]) for e in seen if e.get("type") == "result"]
    assert results == [(True, NOT_LOGGED_IN)]
    assert "Bad system call" not in journal(unit)  # no call of its refused by the filter killed it
    assert node.response(record).outcome is Outcome.stopped


@pytest.mark.parametrize("network", [True, False], ids=["network", "no-network"])
def test_codex_starts_under_the_hardened_unit_and_fails_only_at_its_service(node, agents, network):
    page = contrib_page("codex")
    runner = offline_runner(node, "codex", page)
    (Path(page.homes[0]) / "config.toml").write_text(LOOPBACK_PROVIDER)
    record = node.post(node.record(runner=runner, objective=OBJECTIVE, sandbox=sandboxed(network),
                                   budget={"wall": "10m"}))
    unit = node.unit(record)
    if network:
        # The relay ends the session with codex's own exit 1: its turn failed at the service (C4).
        response = node.response(record, timeout=240)
        text = journal(unit)
        assert (response.outcome, response.note.split(" after ")[0]) == (Outcome.exited, "exit 1"), text[-4000:]
    else:  # its service out of reach, codex waits for the network, as it does on any host without one
        try:
            text = wait_for(lambda: "waiting for network" in (seen := journal(unit)) and seen, 240, 0.5,
                            f"codex reaching for its service in {unit}")
        finally:
            node.stop(record)
        assert node.response(record).outcome is Outcome.stopped
    assert "unexpected argument" not in text and "Error loading config" not in text, text[-4000:]
    seen = events(text)
    assert [e["type"] for e in seen if e.get("type") in ("thread.started", "turn.started")] == \
        ["thread.started", "turn.started"], text[-4000:]
    requests = [json.loads(line.split("offline-request ", 1)[1]) for line in text.splitlines()
                if "offline-request " in line]
    if network:  # its service, the stand-in on the run's own loopback, was reached and refused the key
        failed = [e for e in seen if e.get("type") == "turn.failed"]
        assert len(failed) == 1 and failed[0]["error"]["message"].startswith("unexpected status 401"), failed
        assert requests == [{"method": "POST", "path": "/v1/responses", "mcp_ocx": True,
                             "texts": [f"Record {record}: {OBJECTIVE}"]}]
    else:  # no IP socket at all: nothing reached, and nothing but the connection failed
        assert requests == [] and "no IP socket here" in text
        assert "Connection failed" in text
