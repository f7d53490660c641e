"""The one way the command line writes a line to its terminal: through
protocol/terminal.py's `terminal_safe`, since what it prints may be a run's
or a check-in sender's bytes (a comment, a tag's value, an objective, a
note, a tool's answer; D41). tests/guards/test_terminal_output.py fails on
any other print in the command line's modules. No Typer, no pydantic: the
readers start on it."""
from __future__ import annotations

import sys

from ..protocol.terminal import terminal_safe


def say(text: object = "", *, err: bool = False, keep: str = "") -> None:
    """TEXT as one terminal-safe line (KEEP: controls left as they are, say "\\n")."""
    print(terminal_safe(str(text), keep), file=sys.stderr if err else sys.stdout)
