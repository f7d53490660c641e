"""The installed `ocx` command, run as a person runs it."""
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

NODE = "6cbe285e95a3a124176569ee9243f2a4e9ecdc20"


def ocx(*args: str, stdin: str = "") -> subprocess.CompletedProcess:
    found = shutil.which("ocx") or str(Path(sys.executable).with_name("ocx"))
    if not Path(found).exists():
        pytest.fail("the ocx command is not installed (pip install -e .)")
    return subprocess.run([found, *args], input=stdin, capture_output=True, text=True, timeout=60)


def test_help_lists_the_commands_that_exist():
    out = ocx("--help").stdout
    assert "message" in out and "version" in out


def test_message_check_names_the_field_at_fault():
    text = 'free text\n```json\n{"ocx": 1, "kind": "stop", "node": "%s", "stops": "x"}\n```\n' % NODE
    done = ocx("message", "check", "--json", stdin=text)
    assert done.returncode == 1
    assert json.loads(done.stdout)["error"]["field"] == "stops"


def test_message_check_accepts_a_valid_stop_and_reports_no_message():
    text = '```json\n{"ocx": 1, "kind": "stop", "node": "%s", "stops": "%s"}\n```' % (NODE, "ab" * 20)
    assert ocx("message", "check", stdin=text).returncode == 0
    assert ocx("message", "check", stdin="no message here").returncode == 2


def test_node_init_takes_a_join_token_one_way_only_and_only_to_join_a_server():
    both = ocx("node", "init", "--name", "b", "--server", "http://server:8080", "--admin-password-file", "/x",
               "--token-file", "/y")
    assert both.returncode == 1 and "an admin's login or a join token: give one of them" in both.stderr
    twice = ocx("node", "init", "--name", "b", "--server", "http://server:8080", "--token-file", "-", "--ask-token")
    assert twice.returncode == 1 and "one way" in twice.stderr
    alone = ocx("node", "init", "--name", "b", "--token-file", "/y")
    assert alone.returncode == 1 and "give --server URL too" in alone.stderr
