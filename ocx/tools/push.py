"""`push`: a `no_password` run's new check-ins, copied from its clone into the
node's repository as its user, then the node woken (C6, D22, D34)."""
from __future__ import annotations

import shutil
import tempfile
from contextlib import ExitStack
from pathlib import Path

from ..fossil.callers import new_checkins, push_as
from ..fossil.repository import Repository
from ..node.unit import bounded
from ..node.wake import poke
from .framework import Act, Capability, Stop, Tool, ToolInput

CLONE_BYTES = 8 << 30  # the most of a run's clone the node copies to read and push it


class PushInput(ToolInput):
    pass


class PushTool(Tool):
    name = "push"
    summary = "Copy this no_password run's new check-ins into the node's repository, as its user (C6)."
    Input = PushInput
    Result = str | None
    # No letter decides who may push: the caller's record does, below (Part 4).
    capability = Capability(letters="", means="a run whose record restricts no_password")

    def act(self, act: Act, given: PushInput) -> str | None:
        caller = act.caller
        run = caller.open_run()
        if run is None or not run.record.restrict.no_password:
            raise Stop("caller", f"{caller.login} is not the user of an open record restricting no_password "
                                 "on this node: only such a run pushes through OCX (C6)")
        if caller.run_clone is None:
            raise Stop("caller", f"the clone of record {run.hash[:12]}'s run is not found on this node")
        act.check(f"{caller.login} runs record {run.hash[:12]}, which restricts no_password", "caller")
        # The run's clone is the run's file (D41): a link to another run's clone,
        # a FIFO, anything. The node reads and pushes its own private copy of it.
        with ExitStack() as cleanup:
            scratch = Path(tempfile.mkdtemp(prefix="ocx-push-"))
            cleanup.callback(shutil.rmtree, scratch, ignore_errors=True)
            try:
                clone = cleanup.enter_context(bounded.private_copy(caller.run_clone, CLONE_BYTES, scratch))
            except OSError as error:
                raise Stop("caller", f"the clone of record {run.hash[:12]}'s run is not a plain file the node "
                                     f"reads: {error}") from None
            return self._push(act, caller, run, clone, scratch / "home")

    def _push(self, act: Act, caller, run, clone_copy: Path, home: Path) -> str | None:
        branch = run.record.restrict.branch
        with Repository(clone_copy) as clone, caller.reading() as served:
            fresh = new_checkins(clone, served)
        if not fresh:
            act.check("the run's clone holds no check-in the node's repository lacks")
            return None
        for checkin in fresh:
            if branch is not None and checkin.branch != branch:
                raise Stop("branch", f"check-in {checkin.hash} is on {checkin.branch!r}, and the record "
                                     f"restricts branch {branch!r} (C6): nothing was copied")
            act.check(f"check-in {checkin.hash} on {checkin.branch}" + (f" (branch {branch})" if branch else ""))
        last = fresh[-1].hash

        def copy() -> str:
            push_as(clone_copy, caller.base_url, caller.login, caller.password_or_refuse(), home=home)
            return last

        written = act.write(f"{len(fresh)} check-in(s), last {last}, into the node's repository as {caller.login}", copy)
        if written is not None and caller.node is not None:
            # C6: a push runs the backoffice's work at once: the node is woken, not left to its path unit.
            act.step("wrote", f"poked node {caller.node.name}: {poke(caller.node.name, 'push') or 'ok'}")
        return written
