"""The CI record in contrib/records/ (C2) as docs/runners.md says to post it:
checked by the create tool's own input type, by a dry run of `ocx create
--input "$(cat contrib/records/ci-dev.json)"` on a real `fossil server`, on
the node (its own refusal checks, C6, D35), and the record it would write
by `ocx message check`. Its example script runs for real."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

from ocx.tools.framework import validate_input
from ocx.tools.registry import TOOLS

from .test_ways_in import ocx_path, where

ROOT = Path(__file__).resolve().parents[2]
RECORD_FILE = ROOT / "contrib" / "records" / "ci-dev.json"
CHECK_SCRIPT = ROOT / "contrib" / "records" / "check.sh"


def example() -> dict:
    return json.loads(RECORD_FILE.read_text())


def test_the_example_is_c2s_ci_record_and_the_create_tools_input():
    raw = example()
    given = validate_input(TOOLS["create"], raw)
    assert given.runner == "command" and given.command == ["/bin/sh", "ci/check.sh"]
    assert given.checkins == ["dev"] and given.hears == [] and given.budget.wall == "20m"


def test_a_dry_run_from_the_file_as_docs_say_would_write_it_and_writes_nothing(world):
    before = world.snapshot()
    done = subprocess.run([ocx_path(), "create", "--input", RECORD_FILE.read_text(), "--dry-run", "--json",
                           *where(world, "admin")], capture_output=True, text=True, timeout=120)
    answer = json.loads(done.stdout)
    assert done.returncode == 0 and answer["stopped"] is None, answer
    assert answer["dry_run"] and answer["log"][-1]["kind"] == "would_write"
    assert world.snapshot() == before


def test_on_the_node_its_own_checks_pass_and_the_record_it_would_write_is_valid(world, tmp_path):
    answer = world.run("create", {**example(), "dry_run": True})
    assert answer.stopped is None, answer
    assert any(step.text.startswith("the node's own checks (C6, D35) pass") for step in answer.log)
    written = next(step.text for step in answer.log if step.text.startswith("the record, written out in full: "))
    record = json.loads(written.removeprefix("the record, written out in full: "))
    (server_code,) = world.served.sql("SELECT value FROM config WHERE name='server-code'")[0]
    assert record["node"] == server_code and record["user"] == "ci-dev" and record["restrict"] == {}
    # The record as a node reads it from a post (D7), checked by `ocx message check`.
    post = tmp_path / "post.md"
    post.write_text(f"A CI record for dev.\n\n```json\n{json.dumps(record, indent=1)}\n```\n")
    checked = subprocess.run([ocx_path(), "message", "check", str(post)], capture_output=True, text=True, timeout=60)
    assert checked.returncode == 0 and checked.stdout.startswith("valid record: "), checked.stdout + checked.stderr


def run_check(directory: Path) -> subprocess.CompletedProcess:
    return subprocess.run(["/bin/sh", str(CHECK_SCRIPT)], cwd=directory, capture_output=True, text=True, timeout=60)


def test_the_example_check_passes_parsing_python_and_names_the_first_failure(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "good.py").write_text("x = 1\n")
    passed = run_check(tmp_path)
    assert passed.returncode == 0 and passed.stdout.splitlines()[-1] == "1 of 1 Python files parse"
    (tmp_path / "pkg" / "bad.py").write_text("def broken(:\n")
    failed = run_check(tmp_path)
    assert failed.returncode == 1
    assert failed.stdout.splitlines()[-1].startswith("1 of 2 Python files parse; first failure pkg/bad.py:1: ")
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["bad.py", "good.py", "pkg"]  # it wrote nothing
