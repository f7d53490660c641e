"""Two helpers of a run's preparation (prepare.py): each step's duration for the unit's journal, and
one step run in a thread beside the others. Standard library only: the preparation starts fast."""
from __future__ import annotations

import threading
import time
from collections.abc import Callable


class Steps:
    """Each step's duration, printed as it ends: ExecStartPre's output is the unit's journal."""

    def __init__(self) -> None:
        self.began = self.last = time.monotonic()

    def done(self, what: str) -> None:
        now = time.monotonic()
        print(f"prepare: {what}: {(now - self.last) * 1000:.0f} ms", flush=True)
        self.last = now

    def total(self) -> float:
        return time.monotonic() - self.began


class Meanwhile:
    """FUNCTION run in a thread of its own; result() waits for it and gives what it returned or raises what
    it raised (concurrent.futures would do, at the cost of its imports on every run's start; and typing's,
    for a generic one, so callers say what they expect)."""

    def __init__(self, function: Callable[[], object]):
        self._function = function
        self._value: object = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            self._value = self._function()
        except Exception as error:  # handed to whoever waits for the result, as a future would
            self._error = error

    def join(self) -> None:
        self._thread.join()

    def result(self) -> object:
        self._thread.join()
        if self._error is not None:
            raise self._error
        assert self._value is not None
        return self._value
