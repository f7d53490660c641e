"""`push`: a socket-served run's new check-ins, copied into the node's
repository as its user, then the node woken (C6, D22, D34).

Decided on the node's side from the artifacts themselves, never from what
the run's clone's tables say (C6, D22; docs/tools.md, '`push`, from the artifacts'): the clone is opened as the
run's own file, not through a link (run_clone.py); the artifacts the node
lacks are rebuilt and checked against their names; only check-ins (on the
record's branch when it restricts one) and the files they need are sent
(push_plan.py), by sync in the run user's session, so each is received from
the run's user (D21) and no password reaches a command line (D41).
"""
from __future__ import annotations

from ..fossil.errors import WrongKind
from ..fossil.push_plan import Line, Plan, PlanRefused, plan_push
from ..fossil.repository import Repository
from ..fossil.run_clone import MAX_ARTIFACT_BYTES, CloneRefused, RunClone
from ..node.socket_served import served_by_socket
from ..node.wake import poke
from ..protocol.errors import FieldError
from .caller import Caller
from .framework import Act, Capability, Tool, ToolInput

MAX_PUSH_BYTES = 4 * MAX_ARTIFACT_BYTES  # all the new artifacts of one push, read
SEND_BYTES = 8 * 1024 * 1024  # one sync request's files
SHOWN = 20  # artifacts left out, named one by one in the log


class PushInput(ToolInput):
    pass


def new_artifacts(clone: RunClone, served: Repository) -> dict[str, bytes]:
    """Every artifact in CLONE that SERVED lacks: its name and its checked bytes."""
    stored = clone.stored()
    held = served.holding([name for _, name in stored])
    found, total = {}, 0
    for rid, name in stored:
        if name in held or name in found:
            continue
        found[name] = clone.artifact(rid, name)
        total += len(found[name])
        if total > MAX_PUSH_BYTES:
            raise CloneRefused(f"its new artifacts pass {MAX_PUSH_BYTES} bytes: push fewer at a time")
    return found


def _plan(act: Act, branch: str | None) -> Plan:
    caller = act.caller
    if caller.run_clone is None:  # act() refused such a caller already; the check narrows the type
        raise CloneRefused("it is not known on this node")
    with RunClone(caller.run_clone) as clone, caller.reading() as served:
        new = new_artifacts(clone, served)

        def line_of(hash_: str) -> Line:
            try:
                return Line(served.checkin(hash_).branch, served.symbols_passed_on(hash_))
            except WrongKind:
                raise PlanRefused("caller", f"a new check-in names {hash_[:12]} as its parent, which is no "
                                            "check-in") from None

        return plan_push(new, served_has=lambda h: bool(served.holding([h])), served_line=line_of, branch=branch)


def _batches(files: list[tuple[str, bytes]]) -> list[list[tuple[str, bytes]]]:
    batches: list[list[tuple[str, bytes]]] = [[]]
    size = 0
    for item in files:
        if batches[-1] and size + len(item[1]) > SEND_BYTES:
            batches.append([])
            size = 0
        batches[-1].append(item)
        size += len(item[1])
    return [batch for batch in batches if batch]


class PushTool(Tool):
    name = "push"
    summary = ("Copy this run's new check-ins (on its record's branch, when it restricts one) into the node's "
               "repository, as its user (C6, D34).")
    Input = PushInput
    Result = str | None
    # No letter decides who may push: the caller's record does, below (Part 4).
    capability = Capability(letters="", means="a run whose record restricts no_password, or has no network")

    def act(self, act: Act, given: PushInput) -> str | None:
        caller = act.caller
        run = caller.open_run()
        if run is None or not served_by_socket(run):
            raise FieldError("caller", f"{caller.login} is not the user of an open record on this node that restricts "
                                 "no_password or has no network: only such a run pushes through OCX (C6, D34)")
        if caller.run_clone is None:
            raise FieldError("caller", f"the clone of record {run.hash[:12]}'s run is not known on this node")
        act.check(f"{caller.login} runs record {run.hash[:12]}, served by its tool socket", "caller")
        branch = run.record.restrict.branch if run.record.restrict.no_password else None
        try:
            plan = _plan(act, branch)
        except CloneRefused as refused:
            raise FieldError("caller", f"the run's clone: {refused}") from None
        for hash_, what in plan.left_out[:SHOWN]:
            act.check(f"left out {what}, {hash_}: push copies check-ins and their files only (C6)")
        if len(plan.left_out) > SHOWN:
            act.check(f"left out {len(plan.left_out) - SHOWN} more artifacts that are not check-ins")
        if not plan.checkins:
            act.check("the run's clone holds no check-in the node's repository lacks")
            return None
        for checkin in plan.checkins:
            act.check(f"check-in {checkin.hash} on {checkin.branch}" + (f" (branch {branch})" if branch else ""))
        last = plan.checkins[-1].hash
        what = f"{len(plan.checkins)} check-in(s) and {len(plan.files)} file(s), last {last}"
        written = act.write(f"{what}, into the node's repository as {caller.login}", lambda: _send(caller, plan))
        if written is not None and caller.node is not None:
            # C6: a push runs the backoffice's work at once: the node is woken, not left to its path unit.
            act.step("wrote", f"poked node {caller.node.name}: {poke(caller.node.name, 'push') or 'ok'}")
        return written


def _send(caller: Caller, plan: Plan) -> str:
    from ..fossil.web import WebError

    with caller.reading() as served:
        project_code = served.project_code
    web = caller.web()
    for batch in _batches(plan.files):
        web.push_artifacts(batch, project_code)
    web.push_artifacts([(c.hash, c.data) for c in plan.checkins], project_code)
    if caller.node is not None and caller.node.elsewhere:
        from ..node.served import Elsewhere

        Elsewhere(caller.node).pull()  # a node elsewhere's clone: what the server now holds (D36)
    with caller.reading() as served:
        for checkin in plan.checkins:
            try:
                kept = served.checkin(checkin.hash).branch == checkin.branch
            except (WrongKind, LookupError):
                kept = False
            if not kept:
                raise WebError(f"the served repository did not take check-in {checkin.hash} on {checkin.branch}")
    return plan.checkins[-1].hash
