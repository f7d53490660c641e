"""`ocx activity` starts without the message models (pydantic) and asyncio
(docs/node.md, 'The readers'): they were most of its start-up. It imports the models only once
a post holds a message for its own node, whose fields it then shows."""
from __future__ import annotations

import ast
import json
import subprocess
import sys

import pytest


from .conftest import record_text

HEAVY = ("pydantic", "asyncio", "dbus_next", "typer", "rich", "click")
PROBE = ("import sys\nfrom ocx.cli import launch\nsys.argv = ['ocx', *sys.argv[1:]]\n"
         "try:\n    launch.main()\nexcept SystemExit as done:\n    code = done.code\n"
         f"print(code, sorted({{m.split('.')[0] for m in sys.modules}} & set({HEAVY!r})), file=sys.stderr)")


def heavy_imported(code: str) -> list[str]:
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_the_activity_readers_modules_import_no_models_nor_asyncio() -> None:
    code = ("import json, sys\nimport ocx.cli.cli_reading, ocx.node.activity, ocx.reading.activity\n"
            "ocx.cli.cli_reading.parsers()\n"
            f"print(json.dumps(sorted({{m.split('.')[0] for m in sys.modules}} & set({HEAVY!r}))))")
    assert heavy_imported(code) == []


def test_its_places_are_the_nodes() -> None:
    from ocx.node import record_dirs
    from ocx.node import activity

    assert (activity.THREAD, activity.TICKET) == (record_dirs.THREAD, record_dirs.TICKET)


def activity_probe(path: str) -> tuple[dict, list[str]]:
    done = subprocess.run([sys.executable, "-c", PROBE, "activity", "-R", path, "--json"],
                          capture_output=True, text=True, timeout=120)
    code, _, modules = done.stderr.strip().splitlines()[-1].partition(" ")
    assert code == "0", done.stderr
    return json.loads(done.stdout), ast.literal_eval(modules)  # PROBE's list of names


@pytest.mark.fossil
def test_no_models_until_a_post_holds_a_message_for_this_node(fresh) -> None:
    served, node = fresh
    admin = served.web("admin")
    # another node's record that names this one: its bytes pass the cheap check, its `node` does not
    admin.new_thread("OCX record: elsewhere", record_text("ab" * 20, ["dev"], f"not for {node}"))
    shown, heavy = activity_probe(str(served.path))
    assert (shown["node"], shown["open"], heavy) == (node, [], [])
    mine = admin.new_thread("OCX record: here", record_text(node, ["dev"], "for this node"))
    shown, heavy = activity_probe(str(served.path))
    assert [entry["hash"] for entry in shown["open"]] == [mine] and heavy == ["pydantic"]
