"""Inside a session's unit: turn delivery lines (D13) into a program's own input.

    python -m ocx.node.inside.relay --line TEMPLATE -- PROGRAM [ARG...]
    python -m ocx.node.inside.relay --run FIRST [--then LATER]

A runner page (D14) names it in its `command` when its program does not
read D13's lines as they are. OCX names no agent here: the templates are
the page's data.

`--line`: starts PROGRAM once and writes each delivery to its standard
input as one line of JSON: TEMPLATE (a JSON value) with every `{NAME}` in
its strings replaced by the delivery's field NAME (`text`, `hash`,
`delivery`, `objective`, `branch`, `user`, `ticket`, `body`; a field the
delivery lacks gives ""). The relay ends as PROGRAM ends (the unit reports
the program's end, D4); its own input ending closes PROGRAM's.

`--run`: runs a program once per delivery, to completion, one at a time
(D18): the first delivery with FIRST (a JSON list of strings, placeholders
as above), each later one with LATER (FIRST when not given). Each gets no
standard input; what it prints goes to the journal. A run that does not
exit 0 ends the session the same way, so its response says so (C4)
rather than the session idling until its budget ends.

Standard library only, like the feeder that starts it.
"""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
from typing import Any, BinaryIO

from ...protocol.errors import OcxError
from .feeder import _end_like as end_like

PLACEHOLDER = re.compile(r"\{([a-z_]+)\}")
USAGE = ("usage: python -m ocx.node.inside.relay --line TEMPLATE -- PROGRAM [ARG...]\n"
         "       python -m ocx.node.inside.relay --run FIRST [--then LATER]")


class NotADelivery(OcxError, ValueError):
    """A line that is not one JSON object."""


def delivery_fields(line: bytes | str) -> dict[str, str]:
    """The fields of one delivery line, each as text, for the placeholders."""
    try:
        delivery = json.loads(line)
    except ValueError as error:
        raise NotADelivery(f"not JSON: {error}") from None
    if not isinstance(delivery, dict):
        raise NotADelivery("not a JSON object")
    return {name: value if isinstance(value, str) else json.dumps(value) for name, value in delivery.items()}


def fill(template: Any, fields: dict[str, str]) -> Any:
    """TEMPLATE with each `{NAME}` in its strings (keys too) replaced by FIELDS[NAME]."""
    if isinstance(template, str):
        return PLACEHOLDER.sub(lambda found: fields.get(found.group(1), ""), template)
    if isinstance(template, list):
        return [fill(item, fields) for item in template]
    if isinstance(template, dict):
        return {fill(key, fields): fill(value, fields) for key, value in template.items()}
    return template


def line_for(template: Any, delivery_line: bytes | str) -> bytes:
    """One delivery as the program's own line of input."""
    filled = fill(template, delivery_fields(delivery_line))
    return json.dumps(filled, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"


def argv_for(template: list[str], delivery_line: bytes | str) -> list[str]:
    argv: list[str] = fill(template, delivery_fields(delivery_line))  # fill keeps the shape: a list of str stays one
    return argv


def say(text: str) -> None:
    print(f"ocx relay: {text}", file=sys.stderr, flush=True)


def relay_lines(template: Any, program: list[str], source: BinaryIO) -> int:
    """`--line`: the program's status once it ends (negative: its signal)."""
    child = subprocess.Popen(program, stdin=subprocess.PIPE, close_fds=True)
    program_input = child.stdin
    assert program_input is not None  # stdin=PIPE

    def pass_on() -> None:
        try:
            for line in source:
                if not line.strip():
                    continue
                try:
                    program_input.write(line_for(template, line))
                except NotADelivery as error:
                    say(f"skipped a line that is {error}")
                    continue
                program_input.flush()
            program_input.close()  # our input ended: so does the program's
        except (BrokenPipeError, ValueError):
            pass  # it closed its input, or ended; its end is what counts

    # A daemon: the program's end ends the relay, even while this waits for a line.
    threading.Thread(target=pass_on, daemon=True).start()
    return child.wait()


class Runs:
    """`--run`: one program per delivery; 0 when the input ends with every run
    exited 0, else the status of the run that did not."""

    def __init__(self, first: list[str], later: list[str]):
        self.first, self.later = first, later
        self.child: subprocess.Popen[bytes] | None = None
        self.terminated = False

    def relay(self, source: BinaryIO) -> int:
        template = self.first
        for line in source:
            if not line.strip():
                continue
            try:
                argv = argv_for(template, line)
            except NotADelivery as error:
                say(f"skipped a line that is {error}")
                continue
            try:
                self.child = subprocess.Popen(argv, stdin=subprocess.DEVNULL, close_fds=True)
            except OSError as error:
                if isinstance(error, FileNotFoundError):
                    raise
                # E2BIG: a text longer than one argument may be (128 KiB on Linux).
                say(f"skipped a delivery {argv[0]} cannot be given: {error.strerror}")
                continue
            status = self.child.wait()
            self.child = None
            if self.terminated and status == 0:
                end_like(-signal.SIGTERM)
            if status != 0:
                say(f"{argv[0]} ended with {status}: the session ends with it")
                return status
            template = self.later
        return 0

    def stopped(self, *_: object) -> None:
        """SIGTERM: the relay ends as a program would. A running program got
        it too (systemd signals the whole unit): the relay ends when it does."""
        self.terminated = True
        if self.child is None:
            end_like(-signal.SIGTERM)


def _argv_template(text: str, option: str) -> list[str]:
    try:
        value = json.loads(text)
    except ValueError as error:
        raise SystemExit(f"ocx relay: {option} is not JSON: {error}\n{USAGE}") from None
    if not (isinstance(value, list) and value and all(isinstance(item, str) for item in value)):
        raise SystemExit(f"ocx relay: {option} must be a non-empty JSON list of strings\n{USAGE}")
    return value


def parse(args: list[str]) -> tuple[str, Any, list[str]]:
    """("line", TEMPLATE, PROGRAM) or ("run", FIRST, LATER)."""
    if len(args) >= 4 and args[0] == "--line" and args[2] == "--":
        try:
            return "line", json.loads(args[1]), args[3:]
        except ValueError as error:
            raise SystemExit(f"ocx relay: --line's TEMPLATE is not JSON: {error}\n{USAGE}") from None
    if len(args) == 2 and args[0] == "--run":
        first = _argv_template(args[1], "--run")
        return "run", first, first
    if len(args) == 4 and args[0] == "--run" and args[2] == "--then":
        return "run", _argv_template(args[1], "--run"), _argv_template(args[3], "--then")
    raise SystemExit(USAGE)


def main(args: list[str]) -> None:
    mode, first, rest = parse(args)
    runs = Runs(first, rest) if mode == "run" else None
    # As the feeder does: systemd signals the whole control group on stop, and
    # the program's own end is what the unit reports. A handler, not SIG_IGN,
    # which the program would inherit.
    signal.signal(signal.SIGTERM, runs.stopped if runs else lambda *_: None)
    source = sys.stdin.buffer
    try:
        status = runs.relay(source) if runs else relay_lines(first, rest, source)
    except FileNotFoundError as error:
        say(f"cannot start {error.filename}: {error.strerror}")
        sys.exit(203)  # what systemd says when it cannot exec a program
    if status >= 0:
        # Not sys.exit: a thread may still be blocked reading our input, and
        # the interpreter's shutdown would abort on its lock.
        sys.stderr.flush()
        os._exit(status)
    end_like(status)


if __name__ == "__main__":
    main(sys.argv[1:])
