"""The runner pages in contrib/runners/ (D14), checked against each program's
own command-line parser: the real `claude` and `codex` from npm, installed by
`contrib/setup.sh --test`, run offline (only loopback exists, offline.py).

Each page is read with the node's own parser (runner_pages.py) and run as
the node would run it (its argv with and without remote, D15's environment
with the page's env), with three things mapped to this host: the node's
venv (/opt/ocx/venv/bin) is this checkout's, the page's homes are fresh
temporary directories, and PATH starts where setup put the CLIs.

What each CLI does offline, with no credential (claude 2.1.197, codex
0.171.0), is what the tests assert: claude parses its flags, connects to
`ocx mcp`, echoes each stream-json user message (`--replay-user-messages`)
and answers each `Not logged in`, exit 1; codex parses its flags and config,
sends the prompt to its service (here a loopback stand-in that refuses the
key: 401) and ends its turn failed, exit 1. An unknown flag is refused by
either before anything else, which the controls show.
"""
import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from ocx.inside_run.feeder import KEEP, program_environment
from ocx.inside_run.relay import argv_for, parse
from ocx.node.runner_pages import RunnerPage, parse_page
from ocx.node_service.run_units import environment
from ocx.protocol.deliveries import post_delivery, record_delivery
from ocx.tools.registry import TOOLS
from tests.process_tree import descendants

ROOT = Path(__file__).resolve().parents[2]
OFFLINE = Path(__file__).with_name("offline.py")
AGENTS = Path(os.environ.get("OCX_AGENTS_DIR", "/var/cache/ocx-tests/agents")) / "node_modules" / ".bin"
NODE_BIN = "/opt/ocx/venv/bin/"  # where a node has OCX (vagrant/provision.sh, NodeConfig.python)
HERE_BIN = str(Path(sys.executable).parent) + "/"
RECORD = "c0ffee" * 6 + "abcd"
POST = "5" * 64
DELIVERIES = [record_delivery(RECORD, "Keep docs/ in step; a check-in passes when each command is documented."),
              post_delivery(POST, "pat", 'Also "quotes", a {placeholder},\nand a second line: ünïcode')]
NOT_LOGGED_IN = "Not logged in · Please run /login"


@pytest.fixture(scope="module")
def agents() -> Path:
    missing = [name for name in ("claude", "codex") if not (AGENTS / name).exists()]
    if missing:  # loudly: CI reaches npm, so a missing CLI is a broken set-up
        pytest.fail(f"{', '.join(missing)} not in {AGENTS}: `bash contrib/setup.sh --test` installs them")
    return AGENTS


def page(name: str) -> RunnerPage:
    return parse_page((ROOT / "contrib" / "runners" / f"{name}.md").read_text())


class Run:
    """A page's program as the node would run it, here."""

    def __init__(self, page: RunnerPage, tmp_path: Path, agents: Path):
        self.workspace = tmp_path / "workspace"
        self.workspace.mkdir()
        self.homes = {home: tmp_path / f"home{n}" for n, home in enumerate(page.homes)}
        for path in self.homes.values():
            path.mkdir()
        self.log = tmp_path / "service.jsonl"
        # The unit's environment (D15), which the feeder narrows to what the node set (KEEP).
        unit = {name: self.here(value) for name, value in environment(str(self.workspace), "run-0a1b2c", page.env).items()}
        unit["PATH"] = f"{agents}:{unit['PATH']}"
        if os.geteuid() == 0:  # a node's run has a dynamic user; this test may be root, which claude refuses
            unit["IS_SANDBOX"] = "1"
            unit[KEEP] += ",IS_SANDBOX"
        self.unit_env = unit
        self.env = program_environment(unit)

    def here(self, value: str) -> str:
        value = value.replace(NODE_BIN, HERE_BIN)
        for home, path in self.homes.items():
            value = value.replace(home, str(path))
        return value

    def home(self, node_path: str) -> Path:
        return self.homes[node_path]

    def offline(self, argv: list[str]) -> list[str]:
        return ["unshare", "--net", sys.executable, str(OFFLINE), str(self.log), "--", *[self.here(a) for a in argv]]

    def run(self, argv: list[str], deliveries=DELIVERIES) -> subprocess.CompletedProcess:
        lines = "".join(d.line() for d in deliveries)
        return subprocess.run(self.offline(argv), input=lines, env=self.env, cwd=self.workspace,
                              capture_output=True, text=True, timeout=180)

    def requests(self) -> list[dict]:
        return [json.loads(line) for line in self.log.read_text().splitlines()] if self.log.exists() else []


def events(stdout: str) -> list[dict]:
    return [json.loads(line) for line in stdout.splitlines() if line.startswith("{")]


# claude

def test_the_claude_page_offers_its_remote_control_and_reads_deliveries_through_the_relay():
    claude = page("claude")
    assert claude.offer("claude").remote
    assert claude.argv(True) == claude.argv(False) + ["--remote-control"]
    assert "claude" in claude.command and "CLAUDE_CONFIG_DIR" in claude.env


@pytest.mark.parametrize("remote", [False, True], ids=["no-remote", "remote"])
def test_claude_parses_the_pages_argv_takes_each_delivery_as_a_user_message_and_fails_only_on_sign_in(
        remote, tmp_path, agents):
    claude = page("claude")
    run = Run(claude, tmp_path, agents)
    done = run.run(claude.argv(remote))
    assert "unknown option" not in done.stderr and "error:" not in done.stderr, done.stderr
    seen = events(done.stdout)
    init = next(e for e in seen if e["type"] == "system" and e["subtype"] == "init")
    # --mcp-config and --strict-mcp-config: `ocx mcp` is its one server, connected, with the six tools.
    assert init["mcp_servers"] == [{"name": "ocx", "status": "connected"}]
    assert {f"mcp__ocx__{name}" for name in TOOLS} <= set(init["tools"])
    assert init["permissionMode"] == "bypassPermissions"
    # The relay's lines are claude's user messages: it echoes each, in order, its content the delivery's text.
    replayed = [e["message"] for e in seen if e["type"] == "user" and e.get("isReplay")]
    assert replayed == [{"role": "user", "content": d.text} for d in DELIVERIES]
    # Each turn ends at the sign-in, never at a flag: the only failure is the missing credential.
    results = [e for e in seen if e["type"] == "result"]
    assert [(r["is_error"], r["result"]) for r in results] == [(True, NOT_LOGGED_IN)] * len(DELIVERIES)
    assert done.returncode == 1
    # Its sign-in and sessions are kept in the page's home, not the run's own $HOME.
    assert (run.home("/var/lib/ocx-homes/claude") / ".claude.json").exists()
    assert not (run.workspace / ".claude").exists()


def drop(inbox: Path, sequence: int, delivery) -> None:
    """As the node hands a delivery to a run (D13): written aside, renamed into its inbox."""
    aside = inbox / f".{sequence}.tmp"
    aside.write_text(delivery.line())
    os.rename(aside, inbox / f"{sequence:08d}-{delivery.hash}.json")


def test_claude_behind_the_feeder_as_its_unit_runs_it_takes_deliveries_as_they_come_until_stopped(tmp_path, agents):
    claude = page("claude")
    run = Run(claude, tmp_path, agents)
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    for sequence, delivery in enumerate(DELIVERIES, 1):
        drop(inbox, sequence, delivery)
    # The unit's main process (run_units.py): the feeder, then the page's argv; a group, as the unit's cgroup.
    # With the terminal a session's unit holds (D32): the relay reads its deliveries from it.
    terminal = tmp_path / "terminal.sock"
    unit = subprocess.Popen(run.offline([sys.executable, "-m", "ocx.inside_run.feeder", str(inbox), "--terminal",
                                         str(terminal), "--", *claude.argv(False)]),
                            env=run.unit_env, cwd=run.workspace, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)
    # Never a hung test: a session that stops answering is killed, and the reads below fail.
    watchdog = threading.Timer(120, lambda: os.killpg(unit.pid, signal.SIGKILL))
    watchdog.start()
    try:
        def results(count: int) -> list[dict]:
            seen = []
            while sum(e["type"] == "result" for e in seen) < count:
                line = unit.stdout.readline()
                assert line, f"the session ended early: {unit.stderr.read()[-2000:]}"
                if line.startswith("{"):  # the terminal carries the program's standard error too
                    seen.append(json.loads(line))
            return seen

        first = results(len(DELIVERIES))
        assert unit.poll() is None  # a session waits for its next delivery
        late = post_delivery("6" * 64, "pat", "one more, while it waits")
        drop(inbox, len(DELIVERIES) + 1, late)
        later = results(1)
        replayed = [e["message"]["content"] for e in first + later if e["type"] == "user" and e.get("isReplay")]
        assert replayed == [d.text for d in [*DELIVERIES, late]]
        # A stop: systemd signals every process of the unit's cgroup, the program's
        # own session under the terminal included (D32), not only the feeder's group.
        for pid in [unit.pid, *descendants(unit.pid)]:
            os.kill(pid, signal.SIGTERM)
        assert unit.wait(timeout=60) == 128 + signal.SIGTERM  # claude's own end, passed up by relay and feeder
    finally:
        watchdog.cancel()
        if unit.poll() is None:
            os.killpg(unit.pid, signal.SIGKILL)
            unit.wait()


def test_control_claude_refuses_an_unknown_flag_before_it_reads_anything(tmp_path, agents):
    claude = page("claude")
    run = Run(claude, tmp_path, agents)
    done = run.run(claude.argv(False) + ["--no-such-flag"])
    assert done.returncode == 1 and "error: unknown option '--no-such-flag'" in done.stderr
    assert events(done.stdout) == []


# codex

LOOPBACK_PROVIDER = """model_provider = "loopback"
[model_providers.loopback]
name = "loopback"
base_url = "http://127.0.0.1:18999/v1"
wire_api = "responses"
request_max_retries = 0
stream_max_retries = 0
"""


def codex_run(tmp_path: Path, agents: Path) -> tuple[RunnerPage, Run]:
    codex = page("codex")
    run = Run(codex, tmp_path, agents)
    # Its service, as a loopback stand-in that refuses the missing key (offline.py).
    (run.home("/var/lib/ocx-homes/codex") / "config.toml").write_text(LOOPBACK_PROVIDER)
    return codex, run


def user_texts(request: dict) -> list[str]:
    body = json.loads(request["body"])
    return [part["text"] for item in body["input"] if item.get("role") == "user" for part in item["content"]
            if not part["text"].startswith("<environment_context>")]


def test_the_codex_page_offers_no_remote_control():
    codex = page("codex")
    assert codex.remote is None and not codex.offer("codex").remote
    assert codex.argv(True) == codex.argv(False)


def test_codex_parses_the_first_and_the_later_argv_the_relay_builds_and_fails_only_at_its_service(tmp_path, agents):
    codex, run = codex_run(tmp_path, agents)
    # The first delivery, through the page's own command (the relay and codex exec).
    first = run.run(codex.argv(False), DELIVERIES[:1])
    assert "unexpected argument" not in first.stderr and "Error loading config" not in first.stderr, first.stderr
    seen = events(first.stdout)
    thread = next(e["thread_id"] for e in seen if e["type"] == "thread.started")
    failed = [e for e in seen if e["type"] == "turn.failed"]
    assert len(failed) == 1 and failed[0]["error"]["message"].startswith("unexpected status 401 Unauthorized")
    assert first.returncode == 1 and "ended with 1: the session ends with it" in first.stderr
    (asked,) = run.requests()
    assert asked["method"] == "POST" and asked["path"] == "/v1/responses"
    assert user_texts(asked) == [DELIVERIES[0].text]
    assert "mcp__ocx" in asked["body"]  # -c mcp_servers.ocx: OCX's tools are offered to the model

    # A later delivery: the argv the relay builds from the page's --then, resuming the same conversation.
    mode, _, later = parse(codex.command[3:])
    assert mode == "run" and later[:4] == ["codex", "exec", "resume", "--last"]
    again = run.run(argv_for(later, DELIVERIES[1].line()), [])
    assert "unexpected argument" not in again.stderr, again.stderr
    seen = events(again.stdout)
    assert next(e["thread_id"] for e in seen if e["type"] == "thread.started") == thread
    assert any(e["type"] == "turn.failed" and "401 Unauthorized" in e["error"]["message"] for e in seen)
    assert again.returncode == 1
    assert user_texts(run.requests()[-1]) == [d.text for d in DELIVERIES]
    assert not (run.workspace / ".codex").exists()  # its sessions live in the page's home


def test_control_codex_refuses_an_unknown_flag_before_it_reaches_its_service(tmp_path, agents):
    codex, run = codex_run(tmp_path, agents)
    _, first, _ = parse(codex.command[3:])
    done = run.run(argv_for([*first[:2], "--no-such-flag", *first[2:]], DELIVERIES[0].line()), [])
    assert done.returncode == 2 and "error: unexpected argument '--no-such-flag' found" in done.stderr
    assert run.requests() == []
