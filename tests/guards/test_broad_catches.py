"""OCX's errors are caught by the type meant (docs/architecture.md, "Errors").

A handler that catches everything is allowed only at a boundary where the
design needs it: one record's, receipt's or run's failure must never stop
the others, and is counted, tried again and answered (C4); a run's
privileged step must leave its failure for the node; a process that loops
for ever must outlive one turn. Each is named here with its reason; any other
fails, and so does an entry here that no longer names one.
"""
from __future__ import annotations

from collections import Counter

from . import scan

# (file, function): (how many handlers, why it catches everything)
ALLOWED: dict[tuple[str, str], tuple[int, str]] = {
    ("ocx/node_service/git_update.py", "after_pass"): (
        1, "the git mirror's start never stops a pass (D49): whatever fails is logged, tried at the next receipt"),
    ("ocx/node_service/release_requests.py", "after_pass"): (
        1, "release requests never stop a pass (D46): whatever fails is logged, tried after the next pass"),
    ("ocx/node_service/release_following.py", "after_pass"): (
        1, "following the server's release never stops a pass (D48): whatever fails is logged, tried after the next"),
    ("ocx/cli/release_asked.py", "told"): (
        1, "a release step is done (or refused) whatever the forum says: the post's failure is said, not raised"),
    ("ocx/node_service/serve.py", "one_pass"): (
        1, "the pass: a pass that fails as a whole is logged and tried again, backing off"),
    ("ocx/node_service/serve.py", "serve"): (
        1, "the service's start: whatever stops it, the pokes that started it are read, or systemd starts it for ever"),
    ("ocx/node_service/machines.py", "MachinesThread._serve"): (
        2, "runs listed as machines (D32), in their own thread: no record waits on it; the next pass asks again"),
    ("ocx/node_service/check.py", "_one_pass"): (
        1, "the deliberate check's pass, tried again twice before it fails"),
    ("ocx/node_service/tend.py", "Tending.all"): (
        1, "one record's trouble stops no other record's tending"),
    ("ocx/node_service/tend.py", "Tending.answer"): (
        1, "a record's step: counted (Tending.failed), tried again, then given up (C4)"),
    ("ocx/node_service/tend.py", "Tending.session"): (
        1, "a record's step (its stop): counted, tried again (C4)"),
    ("ocx/node_service/tend.py", "Tending.start"): (
        1, "a record's step: counted, tried again, then answered lost or refused (C4)"),
    ("ocx/node_service/checkin_runs.py", "start_checkin"): (
        1, "a check-in run's start: counted, tried again, then judged `fail: not run` (C4)"),
    ("ocx/node_service/checkin_runs.py", "judge"): (
        1, "a verdict's tag: counted, tried again, then given up, the queue going on (C4)"),
    ("ocx/node_service/checkin_runs.py", "_stop"): (
        1, "a check-in run's stop: counted, tried again (C4)"),
    ("ocx/node_service/intake.py", "handle"): (
        2, "one artifact of a receipt, and one action on it: stops no other, counted against the receipt (C4, D41)"),
    ("ocx/node_service/intake.py", "_retried"): (
        1, "a given-up receipt's records are each answered: one failing answer stops no other's"),
    ("ocx/node_service/look_back.py", "look_back"): (
        3, "reading again for a record opened late, one artifact and one action at a time, as intake.handle: "
           "any failure keeps the record's receipt on the retry list (D18; docs/node.md, 'Faults')"),
    ("ocx/node_service/enforcement.py", "hold_enforcement"): (
        3, "the enforcement check of one record (its marks, its run) stops no other's, and the one read of "
           "the run users' letters failing (the server's node cut off, D39) stops the pass of none (D24)"),
    ("ocx/run_steps/prepare.py", "main"): (
        1, "a run's preparation, run once by systemd: any failure is kept for the node to answer (UNPREPARED)"),
    ("ocx/run_steps/meanwhile.py", "Meanwhile._run"): (
        1, "the run user made beside the run's home: its failure is handed to the preparation, as a future's"),
    ("ocx/run_steps/stop_step.py", "main"): (
        1, "a run's stop step, run once by systemd: whatever fails, the node is still poked (D4, D6)"),
    ("ocx/page/page_service.py", "answer_one"): (
        1, "one request of the page service: its failure is answered as the ext program's was, and counted"),
    ("ocx/page/page_service.py", "serve"): (
        1, "the page service's loop: nothing one request brings stops it; it takes the next"),
    ("ocx/page/page_service.py", "_take_one"): (
        1, "a request's own forked process: whatever ends it, it exits with a code, never returns into the loop"),
    ("ocx/run_steps/in_order.py", "wait_then_leave"): (
        1, "a prepared session's wait for the one before it: a courtesy to the order, never a reason it fails"),
    ("ocx/run_steps/step_server.py", "_stepped"): (
        1, "a run's step forked by the step service: whatever it raises is its exit status, as its own process's"),
    ("ocx/run_steps/step_server.py", "serve"): (
        1, "a step's own forked process: whatever ends it, it exits with a code, never returns into the loop"),
    ("ocx/follower/follow.py", "Follower.step"): (
        1, "the follower's held request, for ever: whatever fails, it asks again after a pause (D39)"),
}


def found() -> Counter[tuple[str, str]]:
    counts: Counter[tuple[str, str]] = Counter()
    for path in scan.tracked_python_files():
        if path.startswith("ocx/"):
            counts.update((path, where) for where in scan.broad_catches((scan.ROOT / path).read_text()))
    return counts


def test_everything_is_caught_only_where_a_boundary_needs_it():
    counts = found()
    unlisted = {key: n for key, n in counts.items() if key not in ALLOWED}
    assert not unlisted, f"catch the type meant (or list the boundary here, with why): {unlisted}"
    more = {key: (n, ALLOWED[key][0]) for key, n in counts.items() if key in ALLOWED and n > ALLOWED[key][0]}
    assert not more, f"more catch-alls than listed: {more}"


def test_each_allowed_catch_all_is_still_there():
    counts = found()
    stale = [key for key, (n, _why) in ALLOWED.items() if counts[key] != n]
    assert not stale, f"listed, not found as listed (moved, renamed or narrowed? update ALLOWED): {stale}"


def test_the_detector_sees_a_catch_all_and_lets_a_cleanup_pass():
    assert scan.broad_catches("try:\n    f()\nexcept Exception:\n    pass\n") == ["<module>"]
    assert scan.broad_catches("def g():\n    try:\n        f()\n    except:\n        log()\n") == ["g"]
    assert scan.broad_catches("class C:\n    async def m(self):\n        try:\n            f()\n"
                              "        except (OSError, BaseException) as e:\n            log(e)\n") == ["C.m"]
    assert scan.broad_catches("try:\n    f()\nexcept builtins.Exception:\n    pass\n") == ["<module>"]
    assert scan.broad_catches("try:\n    f()\nexcept BaseException:\n    close()\n    raise\n") == []
    assert scan.broad_catches("try:\n    f()\nexcept (OSError, ValueError):\n    pass\n") == []


# Exceptions of OCX's own that are not OcxErrors, with why.
STANDARD_ONLY: dict[str, str] = {}


def test_every_error_ocx_defines_is_an_ocx_error():
    import importlib
    import inspect

    from ocx.protocol.errors import OcxError

    outside = []
    for path in scan.tracked_python_files():
        if not path.startswith("ocx/") or path.endswith("__main__.py"):
            continue
        name = path[:-3].replace("/", ".").removesuffix(".__init__")
        module = importlib.import_module(name)
        for _, value in inspect.getmembers(module, inspect.isclass):
            qualified = f"{value.__module__}.{value.__qualname__}"
            if (value.__module__ == name and issubclass(value, BaseException) and not issubclass(value, OcxError)
                    and qualified not in STANDARD_ONLY):
                outside.append(qualified)
    assert not outside, f"derive these from OcxError (ocx/protocol/errors.py), or say why not: {outside}"
