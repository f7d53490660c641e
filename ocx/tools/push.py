"""`push`: a `no_password` run's new check-ins, copied from its clone into the
node's repository as its user, then the node woken (C6, D22, D34)."""
from __future__ import annotations

from ..fossil.callers import new_checkins, push_as
from ..fossil.repository import Repository
from ..node.wake import poke
from .framework import Act, Capability, Stop, Tool, ToolInput


class PushInput(ToolInput):
    pass


def _home(caller) -> object:
    # Fossil's HOME for the push: the node's own, never the run's (it must not see the URL).
    return caller.node.state_dir / "home" if caller.node else caller.run_clone.parent / ".ocx-push-home"


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
        if caller.run_clone is None or not caller.run_clone.is_file():
            raise Stop("caller", f"the clone of record {run.hash[:12]}'s run is not found on this node")
        act.check(f"{caller.login} runs record {run.hash[:12]}, which restricts no_password", "caller")
        branch = run.record.restrict.branch
        with Repository(caller.run_clone) as clone, caller.reading() as served:
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
            push_as(caller.run_clone, caller.base_url, caller.login, caller.password_or_refuse(), home=_home(caller))
            return last

        written = act.write(f"{len(fresh)} check-in(s), last {last}, into the node's repository as {caller.login}", copy)
        if written is not None and caller.node is not None:
            # C6: a push runs the backoffice's work at once: the node is woken, not left to its path unit.
            act.step("wrote", f"poked node {caller.node.name}: {poke(caller.node.name, 'push') or 'ok'}")
        return written
