"""The same input through each way in gives the same answer (D23): the
framework itself on the node, the `ocx` command line (installed, run as a
person runs it) and MCP (`ocx mcp`, driven by the SDK's own client over
stdio), both of which send the call to the node's web page as the caller,
with nothing but a URL, a login and a password file (no repository file)."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from ocx.tools.registry import TOOLS


def ocx_path() -> str:
    found = shutil.which("ocx") or str(Path(sys.executable).with_name("ocx"))
    assert Path(found).exists(), "the ocx command is not installed (pip install -e .)"
    return found


def where(world, login: str) -> list[str]:
    return ["--login", login, "--password-file", str(world.password_file(login)), "--url", world.served.base_url]


def by_cli(world, login: str, tool: str, raw: dict) -> dict:
    command = ["release", "tool"] if tool == "release" else [tool]  # `ocx release` is root's group (D46)
    done = subprocess.run([ocx_path(), *command, "--input", json.dumps(raw), "--json", *where(world, login)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode in (0, 1), done.stderr
    return json.loads(done.stdout)


def by_mcp(world, login: str, calls: list[tuple[str, dict]]) -> tuple[list, list[dict]]:
    params = StdioServerParameters(command=ocx_path(), args=["mcp", *where(world, login)])

    async def talk():
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                listed = (await session.list_tools()).tools
                answers = []
                for tool, raw in calls:
                    result = await session.call_tool(tool, raw)
                    answers.append(json.loads(result.content[0].text))
                return listed, answers

    return anyio.run(talk)


def direct(world, login: str, tool: str, raw: dict) -> dict:
    return world.run(tool, raw, login=login).model_dump(mode="json")


CASES = [
    ("status", {}),
    ("post", {"to": "THREAD", "text": "hello", "dry_run": True}),
    ("post", {"to": "THREAD", "text": "hello", "colour": "red"}),
    ("audit", {"checkin": "CHECKIN", "verdict": "pass", "reason": "fine", "against": "PLAN.md", "dry_run": True}),
    ("create", {"objective": "o", "budget": {"wall": "1h"}, "user": "claude-000001", "dry_run": True}),
    ("stop", {"record": "0000000000"}),
    ("release", {"action": "accept", "dry_run": True}),  # nothing staged here: refused alike, naming action
]


def filled(world, raw: dict) -> dict:
    return {k: world.thread[:10] if v == "THREAD" else world.checkin[:12] if v == "CHECKIN" else v for k, v in raw.items()}


@pytest.mark.parametrize("login", ["bob", "admin"])
def test_same_input_same_answer_from_every_way_in(world, login):
    calls = [(tool, filled(world, raw)) for tool, raw in CASES]
    before = world.snapshot()
    listed, from_mcp = by_mcp(world, login, calls)
    for (tool, raw), mcp_answer in zip(calls, from_mcp):
        expected = direct(world, login, tool, raw)
        assert by_cli(world, login, tool, raw) == expected
        assert mcp_answer == expected
    assert world.snapshot() == before  # every call above was a dry run or a refusal
    assert {t.name: t.input_schema for t in listed} == {n: t.Input.model_json_schema() for n, t in TOOLS.items()}


def test_cli_fields_as_options_equal_the_whole_input(world):
    raw = {"checkin": world.checkin[:12], "verdict": "fail", "reason": "no docs", "against": "PLAN.md", "dry_run": True}
    options = ["--checkin", raw["checkin"], "--verdict", "fail", "--reason", "no docs", "--against", "PLAN.md", "--dry-run"]
    done = subprocess.run([ocx_path(), "audit", *options, "--json", *where(world, "bob")],
                          capture_output=True, text=True, timeout=120)
    assert json.loads(done.stdout) == by_cli(world, "bob", "audit", raw)
    readable = subprocess.run([ocx_path(), "audit", *options, *where(world, "bob")], capture_output=True, text=True, timeout=120)
    assert readable.returncode == 0 and "would_write" in readable.stdout and "audit (dry run):" in readable.stdout
    bad = subprocess.run([ocx_path(), "create", "--budget", "{not json", *where(world, "admin")], capture_output=True, text=True)
    assert bad.returncode == 1 and "stopped at budget" in bad.stdout


def test_an_optional_string_field_is_taken_as_typed_and_a_clone_path_may_be_relative(world, tmp_path):
    """`--user reviewer-1`, not `--user '"reviewer-1"'`: a field that is a
    (constrained, optional) string is a string on the command line, as the
    README shows it; and `--clone` relative to where the person stands."""
    raw = {"objective": "o", "budget": {"wall": "1h"}, "user": "reviewer-1", "checkins": ["trunk"], "dry_run": True}
    options = ["--objective", "o", "--budget", '{"wall": "1h"}', "--user", "reviewer-1", "--checkins", '["trunk"]',
               "--dry-run"]
    done = subprocess.run([ocx_path(), "create", *options, "--json", *where(world, "admin")],
                          capture_output=True, text=True, timeout=120)
    assert json.loads(done.stdout) == by_cli(world, "admin", "create", raw)
    assert json.loads(done.stdout)["stopped"] is None or json.loads(done.stdout)["stopped"]["field"] != "user"
    clone = world.served.clone("bob")
    status = subprocess.run([ocx_path(), "status", "--json", "--clone", clone.path.name,
                             "--password-file", str(world.password_file("bob"))],
                            capture_output=True, text=True, timeout=120, cwd=clone.path.parent)
    answer = json.loads(status.stdout)
    assert answer["stopped"] is None and answer["result"]["login"] == "bob", answer
