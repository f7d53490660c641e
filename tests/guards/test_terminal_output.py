"""Every line the command line prints goes through cli/say.py, the one
terminal-safe rendering (protocol/terminal.py): a comment, a tag's value, an
objective or a note may be a run's bytes (D41). Fails on any other way of
writing to the terminal in the command line's modules."""
from __future__ import annotations

import ast

from . import scan

COMMAND_LINE = [path for path in scan.tracked_python_files()
                if path.startswith("ocx/cli/cli") or path == "ocx/cli/launch.py"]
WRITERS = {"print", "echo", "secho", "write", "writelines"}  # print, typer/click.echo, sys.stdout.write


def writes(source: str) -> list[int]:
    """Lines calling a writer other than `say` (a method named so on a file object too)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call):
            name = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", None)
            if name in WRITERS:
                found.append(node.lineno)
    return found


def test_the_command_line_prints_only_through_say() -> None:
    assert "ocx/cli/cli_reading.py" in COMMAND_LINE and "ocx/cli/cli.py" in COMMAND_LINE
    offenders = {path: lines for path in COMMAND_LINE if (lines := writes((scan.ROOT / path).read_text()))}
    assert not offenders, f"print through ocx/cli/say.py's say: {offenders}"


def test_the_guard_sees_each_way_of_writing() -> None:
    for call in ("print(x)", "typer.echo(x)", "sys.stdout.write(x)", "click.secho(x)"):
        assert writes(call) == [1], call
    assert writes("say(x)") == []
