"""Preparations take turns (run_steps/turns.py; docs/node.md, 'Preparations take turns'): a free turn is
taken at once, as many at
once as there are turns, and a waiter gets one as soon as a holder ends, however it ends."""
from __future__ import annotations

import os
import select
import subprocess
import sys
from pathlib import Path

from ocx.run_steps.turns import take_turn

ROOT = Path(__file__).resolve().parents[2]
HOLDER = ("import sys; from pathlib import Path; from ocx.run_steps.turns import take_turn\n"
          "take_turn(Path(sys.argv[1]), 1); print('held', flush=True); sys.stdin.read()\n")


def holder(directory: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", HOLDER, str(directory)], cwd=ROOT, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)


def said_within(process: subprocess.Popen, seconds: float) -> str:
    ready, _, _ = select.select([process.stdout], [], [], seconds)
    return process.stdout.readline().strip() if ready else ""


def test_turns_are_taken_at_once_while_free(tmp_path) -> None:
    first, second = take_turn(tmp_path, 2), take_turn(tmp_path, 2)
    try:
        assert first != second and sorted(p.name for p in tmp_path.iterdir()) == ["turn-0", "turn-1"]
    finally:
        os.close(first)
        os.close(second)


def test_a_waiter_gets_the_turn_once_its_holder_ends(tmp_path) -> None:
    first = holder(tmp_path)
    second = None
    try:
        assert said_within(first, 30) == "held"
        second = holder(tmp_path)
        assert said_within(second, 0.5) == ""  # it waits: the one turn is held
        first.kill()  # ended without a word: its turn ends with its descriptor
        assert said_within(second, 30) == "held"
    finally:
        for process in (first, second):
            if process is not None:
                process.kill()
                process.wait()
                process.stdout.close()
                process.stdin.close()
