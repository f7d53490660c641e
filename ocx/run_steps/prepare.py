"""A run's workspace, made before its program starts (C5, D16, D19, D34).

    python -I -m ocx.run_steps.prepare --repository R --url U --user LOGIN --home DIR
        --marks RECORD_DIR --stem STEM --template T [--pull] [--no-password] [--checkin HASH]

(its unit starts it without site, `python -I -S -c …`: node_service/run_units.python_module)

Where the run has network, systemd runs this as the unit's privileged
ExecStartPre (`+`: root, outside the sandbox, but inside the unit's network
namespace): every run prepares in its own unit, in parallel, and the node
only starts units. A run without network cannot reach the server from its
unit, so the node calls `prepare_run` itself before the start (D34).

Either way it gives the run user exactly D19's letters and a new random
password that only this process sees, makes the run's own clone from a copy
of the clone the node keeps current (node/template.py, fossil/copies.py:
a clone over HTTP per run cost 1.88 s of Fossil's CPU on click.fossil), and
checks out (exactly CHECKIN, for a `command` run). Each step's duration goes
to its standard output, which is the unit's journal. Its last act is the
`prepared-STEM` mark; on failure it writes `unprepared-STEM` with the reason
(never the password) and whether it was a fault of the node's own (its
server restarting, say: the node then starts the run again, within the
record's wall), and exits 1; otherwise the node answers the record refused.
Standard library and ocx.fossil only: no pydantic, so it starts fast.
"""
from __future__ import annotations

import os
import resource
import shutil
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import NamedTuple  # not dataclasses (fossil/program.py)

from ..fossil.admin import random_password
from ..fossil.copies import copy_bytes, copy_changed, lacking, make_own, pull_as
from ..fossil.errors import FOSSIL_FAILURES
from ..fossil.sync import CallerClone
from ..node import bounded, spare
from ..node.faults import describe, is_node_fault
from ..node.letters import LettersFound
from ..node.record_store import RecordStore
from ..node.run_layout import PASSWORD_FILE
from ..node.spare import CHECKOUT, CLONE
from ..node.states import Mark
from ..node.template import held, held_within
from ..node.wake import poke
from . import in_order
from .meanwhile import Meanwhile, Steps
from .run_user import RUN_USER_CAPABILITIES, ensure_run_user, granted_run_user  # noqa: F401  (grants.py and tests read the letters here)
from .turns import take_turn, turns_of

WAIT_FOR_PULL = 20.0  # seconds a preparation waits for the node's pull (--wait-for) before it pulls itself


class Preparation(NamedTuple):
    """Everything the step needs, none of it secret (it is the unit's argv)."""

    repository: str
    url: str
    user: str
    home: Path  # the run's home as the host sees it
    marks: Path  # the record's directory in the node's state
    stem: str
    fossil_home: Path  # HOME of the node's own `fossil` runs (its ~/.fossil), never the run's
    template: Path  # the clone the node keeps current, which the run's is copied from (node/template.py)
    pull: bool = False  # its copy lacks what it was given: it pulls first, as the run user (template.lacks)
    keep_password: bool = True
    checkin: str | None = None
    runner_homes: tuple[str, ...] = ()  # the page's homes, each copied into the run (runner_homes.py)
    keep: tuple[tuple[int, str], ...] = ()  # D42: (home's index, file) written back when the run ends
    # D34: a run without network is prepared by the node itself, never through argv below; its
    # clone cannot sync, so it gets no autosync (its commits would stop to ask, on its stdin).
    network: bool = True
    # D37, a node elsewhere: its run user's letters and password come from the server's node, asked
    # as this node user with the password in this root-only file; REPOSITORY is then its clone.
    server_login: str | None = None
    server_password_file: str | None = None
    # The node put a home made ahead in place before the unit's start (node/spare.py): the mark of
    # the runs' clone it was made from, so a session's preparation copies a newer one over it.
    ahead: int | None = None
    wait_for: int | None = None  # the node pulls its clone up to this receipt after the start: wait for it
    order: int | None = None  # a session's record's receipt: its program starts after those before it (in_order.py)

    def argv(self) -> list[str]:
        args = ["--repository", self.repository, "--url", self.url, "--user", self.user,
                "--home", str(self.home), "--marks", str(self.marks), "--stem", self.stem,
                "--fossil-home", str(self.fossil_home), "--template", str(self.template)]
        args += ["--pull"] if self.pull else []
        args += ["--ahead", str(self.ahead)] if self.ahead is not None else []
        args += ["--wait-for", str(self.wait_for)] if self.wait_for is not None else []
        args += ["--order", str(self.order)] if self.order is not None else []
        if self.server_login:
            args += ["--server-login", self.server_login, "--server-password-file", str(self.server_password_file)]
        args += [] if self.keep_password else ["--no-password"]
        args += [a for home in self.runner_homes for a in ("--runner-home", home)]
        args += [a for index, name in self.keep for a in ("--keep", f"{index}:{name}")]
        return args + (["--checkin", self.checkin] if self.checkin else [])


def _give(root: Path, uid: int, gid: int) -> None:
    """Everything below ROOT to the run's user: its own stack, never Python's
    (a checkout is a check-in's, and may be deeper than the recursion limit)."""
    pending = [str(root)]
    while pending:
        directory = pending.pop()
        os.lchown(directory, uid, gid)
        with os.scandir(directory) as entries:
            for entry in entries:
                if entry.is_dir(follow_symlinks=False):
                    pending.append(entry.path)
                else:
                    os.lchown(entry.path, uid, gid)


def make_home(step: Preparation, password: Callable[[], str], steps: Steps | None = None,
              wait: float = WAIT_FOR_PULL, made: Callable[[], object] | None = None) -> Path:
    """The run's own clone, copied from the node's and made the run user's,
    and its checkout (D16); PASSWORD gives the run user's, waiting until it is
    known (prepare_run makes the user meanwhile), and MADE waits until the
    server holds it (None: it does already), before the clone pulls as that
    user. A `no_password` run's clone keeps no password (C6): it writes
    through the node's tools instead."""
    steps = steps or Steps()
    root = step.home
    if step.wait_for is not None:
        if held_within(step.template, step.wait_for, wait):
            steps.done(f"the node's clone pulled through receipt {step.wait_for}, waited for")
        else:  # the node's pull failed, or it was cut off: the run's copy pulls itself, as a fresh one
            steps.done(f"the node's clone not pulled through receipt {step.wait_for} in {wait:.0f} s")
            step = step._replace(pull=True, ahead=None, wait_for=None)
    if step.ahead is not None and spare.placed(root):  # the node put the home made ahead in place (node/spare.py)
        if step.checkin is None:
            if step.ahead == held(step.template):
                steps.done("its clone and checkout, made ahead by the node, in place")
            else:  # made before a pull (spare.take: its checkout is still the tip): the newer clone over it
                # Whole, not copy_changed: in a burst the homes made ahead are no longer in the page cache,
                # and reading one back to compare cost more than the copy (docs/node.md, 'A check-in's pull').
                copy_bytes(step.template, root / CLONE)
                steps.done(f"its checkout made ahead by the node in place; its clone copied from the node's "
                           f"({(root / CLONE).stat().st_size >> 20} MB)")
            return _made_own(step, root, root / CHECKOUT, password, steps)
        try:
            return _moved_to_checkin(step, root, password, steps)
        except FOSSIL_FAILURES as failure:  # made afresh below: never refused for a shortcut
            steps.done(f"the checkout made ahead not moved to {step.checkin} ({describe(failure)}); made afresh")
    if root.exists():  # a home left by a crashed attempt, or by a run cut off (D18): the run's own shapes (D41)
        bounded.empty_directory(root)
    else:  # the node prepares before the unit exists; systemd gives it to the run at start
        root.parent.mkdir(parents=True, exist_ok=True)
        os.chmod(root.parent.parent, 0o700)  # /var/lib/private, as systemd keeps it
        root.mkdir(mode=0o700)
    copy_bytes(step.template, root / CLONE)
    steps.done(f"its clone, copied from the node's ({(root / CLONE).stat().st_size >> 20} MB)")
    # Without a pull the copy holds what the run was given, and Fossil's checkout (most of this
    # step's time: making the files) begins at once, beside the copy's making its own and keeping
    # the password: those wait for the checkout's write lock, and take little. (Made its own in a
    # twin copy instead, with no lock to wait for, both competed for the CPU and the whole was
    # slower.)
    with (nullcontext() if step.pull else _fossil_meanwhile(
            step, "open", lambda own: own.open_checkout(root / CHECKOUT, step.checkin, settings=False))) as opening:
        clone = _own(step, root, password, steps, meanwhile=" (its checkout begun meanwhile)" if opening else "")
        if step.pull:
            # The node could not bring its clone up to what this run was given (template.ensure): the
            # run's own pulls it over HTTP as the run user, as a clone of its own would.
            from ..fossil.repository import Repository

            after = held(step.template)
            with Repository(step.repository) as served:
                upto = served.max_rcvid()
            if made is not None:
                made()  # the server logs the user in: made there first
            pull_as(clone, step.url, password())
            missing = lacking(clone.path, step.repository, after, upto)
            if missing:  # the server did not answer (Fossil's pull says so and exits 0): the node's own fault
                raise ConnectionError(f"its clone could not pull {missing} artifacts from {step.url}")
            steps.done(f"pulled what the node's clone lacked, as {step.user}")
        checkout = (Path(str(opening.result())) if opening is not None
                    else clone.open_checkout(root / CHECKOUT, step.checkin, settings=False))
    steps.done(f"checkout of {step.checkin or 'the tip'}")
    return _given(step, root, checkout, steps)


def _moved_to_checkin(step: Preparation, root: Path, password: Callable[[], str], steps: Steps) -> Path:
    """A check-in run's home from one made ahead: its clone replaced by a copy of the node's, which
    holds the check-in (the node pulled it first) and names the same record ids as the older one
    the checkout was made from (spare.older); the checkout then moved to the check-in by Fossil."""
    changed = copy_changed(step.template, root / CLONE)
    steps.done(f"a checkout made ahead by the node in place; its clone made the node's "
               f"({(root / CLONE).stat().st_size >> 20} MB, {changed} chunks changed)")
    # Fossil's update begins at once, beside the copy's making its own and keeping the password, as a
    # fresh checkout does (make_home): it records nothing they change, and each waits for the other's lock.
    with _fossil_meanwhile(step, "update",
                           lambda own: own.update_checkout(root / CHECKOUT, str(step.checkin))) as moving:
        # The run user was made while the node pulled: its password is kept in the same Fossil run.
        _own(step, root, password, steps, checkout=root / CHECKOUT, meanwhile=" (its checkout moved meanwhile)")
        moving.result()
    steps.done(f"checkout moved to {step.checkin}")
    return _given(step, root, root / CHECKOUT, steps)


@contextmanager
def _fossil_meanwhile(step: Preparation, what: str, act: Callable[[CallerClone], Path]) -> Iterator[Meanwhile]:
    """ACT on the run's clone in a thread beside the preparation's other steps, with a ~/.fossil of its
    own in the node's state (two Fossils creating the run's at once collide, seen): the thread is
    joined and that ~/.fossil removed on the way out, whatever failed."""
    aside = step.fossil_home / f"{what}-{step.stem}"
    shutil.rmtree(aside, ignore_errors=True)  # the node's own state: what a crashed attempt left
    aside.mkdir(mode=0o700)
    running = Meanwhile(lambda: act(CallerClone(step.home / CLONE, step.user, aside)))
    try:
        yield running
    finally:
        running.join()
        shutil.rmtree(aside, ignore_errors=True)


def _made_own(step: Preparation, root: Path, checkout: Path, password: Callable[[], str], steps: Steps) -> Path:
    """A home made ahead (node/spare.py), made the run user's as a fresh copy is (make_home)."""
    _own(step, root, password, steps, checkout=checkout)
    return _given(step, root, checkout, steps)


def _own(step: Preparation, root: Path, password: Callable[[], str], steps: Steps, *,
         checkout: Path | None = None, meanwhile: str = "") -> CallerClone:
    """The copy made the run user's (make_own), with its password kept in the same Fossil run, once
    the run user is made (prepare_run makes it meanwhile): waited for, rather than kept afterwards
    in a second Fossil run at its prompt, which cost a burst more CPU than the wait
    (docs/node.md, 'Preparations take turns').
    A `no_password` run's clone keeps none (C6)."""
    secret = password() if step.keep_password else None
    clone = make_own(root / CLONE, step.url, step.user, home=root, checkout=checkout, password=secret,
                     autosync="on" if step.keep_password and step.network else "off")
    steps.done(f"made {step.user}'s" + (", its password kept in it" if secret else "") + meanwhile)
    if secret is not None:  # D22, see PASSWORD_FILE
        with os.fdopen(os.open(root / PASSWORD_FILE, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as out:
            out.write(secret + "\n")
        steps.done("its password in its file")
    return clone


def _given(step: Preparation, root: Path, checkout: Path, steps: Steps) -> Path:
    """The runner's homes copied in, and everything given to the run's user."""
    if step.runner_homes:
        from ..node import runner_homes  # only a runner page with homes has them (its start, docs/node.md)

        runner_homes.copy_in(list(step.runner_homes), root, step.marks, step.stem, time.time(), step.keep)
        steps.done("the runner's homes copied in")
    owner = root.stat()
    if owner.st_uid != os.getuid():  # in the unit: systemd made the directory the run user's
        _give(root, owner.st_uid, owner.st_gid)
        steps.done("given to the run's user")
    return checkout


def cpu_ms(who: int = resource.RUSAGE_SELF) -> float:
    use = resource.getrusage(who)
    return (use.ru_utime + use.ru_stime) * 1000


def cpu_spent(start_ms: float | None = None, door_ms: float = 0.0) -> str:
    """The CPU this preparation used so far, its Python start included (START_MS: the CPU when main
    began, the interpreter's start and imports, or its door's when forked: step_door.py), and its
    Fossil runs': what a burst of records shares out (docs/node.md, 'Measured'; bench/inside.py adds
    them up). DOOR_MS: the door's own CPU, when the step service forked this process for it."""
    python_ms, fossil_ms = cpu_ms() + door_ms, cpu_ms(resource.RUSAGE_CHILDREN)
    start = "" if start_ms is None else f", its start {start_ms:.0f}"
    return f"CPU {python_ms + fossil_ms:.0f} ms (Python {python_ms:.0f}{start}, Fossil {fossil_ms:.0f})"


def prepare_run(step: Preparation, turn_at: float | None = None, *, own_process: bool = False,
                start_ms: float | None = None, door_ms: float = 0.0) -> None:
    """The run user on the served repository and the run's home, made side by
    side: neither waits for the other until the password is needed. TURN_AT:
    when its turn began (main), kept in the mark with when it ended. OWN_PROCESS:
    the unit's step (main), whose CPU is the preparation's alone, and is told;
    START_MS, its CPU when main began, and DOOR_MS (cpu_spent)."""
    started, steps = time.time(), Steps()
    step.fossil_home.mkdir(mode=0o700, parents=True, exist_ok=True)
    user_ready: list[float] = []
    # Where this preparation makes the run user, it chooses the password first, so the run's clone keeps
    # it while the user is made, not after (a quiet session's preparation waited 40 to 50 ms for that).
    # D37: a node elsewhere's is chosen by the server's node, and known only once granted.
    chosen = "" if step.server_login else random_password()

    def make_user() -> str:
        if step.server_login:  # D37: a node elsewhere's run user is granted by the server's node, meanwhile too
            secret = granted_run_user(step.url, step.server_login, str(step.server_password_file), step.user,
                                      step.marks)
        else:
            ensure_run_user(step.repository, step.user, fossil_home=step.fossil_home, record_dir=step.marks,
                            password=chosen)
            secret = chosen
        user_ready.append(time.time())
        print(f"prepare: (meanwhile) run user {step.user} with D19's letters and a new password: "
              f"{(time.monotonic() - steps.began) * 1000:.0f} ms", flush=True)
        return secret

    user = Meanwhile(make_user)

    def password() -> str:  # at once where chosen here; a granted one once granted
        return chosen or str(user.result())

    try:
        make_home(step, password, steps, made=user.result)
    finally:
        user.join()  # never left running; a failure of the home's is the one told
    user.result()  # a no_password run never waited for the password: what the user's making raised, raised
    # kept nowhere: the clone keeps it, obscured, when the run may hold it (D19)
    cpu = f"; {cpu_spent(start_ms, door_ms)}" if own_process else ""
    print(f"prepare: done in {steps.total() * 1000:.0f} ms{cpu}", flush=True)
    # How long the run user took (made here, or granted by the server's node) and the whole (bench/).
    RecordStore(step.marks).mark(Mark.PREPARED, {
        "at": time.time(), "seconds": round(time.time() - started, 3),
        "user_seconds": round((user_ready or [time.time()])[0] - started, 3),
        **({} if turn_at is None else {"turn_at": turn_at})}, step.stem)


_REQUIRED = ("repository", "url", "user", "home", "marks", "stem", "fossil-home", "template")
_VALUED = (*_REQUIRED, "checkin", "runner-home", "keep", "server-login", "server-password-file", "wait-for",
           "ahead", "order")
_FLAGS = ("no-password", "pull")


def parse(argv: list[str]) -> Preparation:
    """Preparation.argv() read back. The node writes it, so it is parsed exactly, not leniently;
    by hand, not argparse: its imports (gettext, locale) were a tenth of this step's start."""
    values: dict[str, list[str]] = {}
    flags: set[str] = set()
    rest = list(argv)
    while rest:
        option = rest.pop(0)
        name = option[2:] if option.startswith("--") else ""
        if name in _FLAGS:
            flags.add(name)
        elif name in _VALUED and rest:
            values.setdefault(name, []).append(rest.pop(0))
        else:
            raise SystemExit(f"python -m ocx.run_steps.prepare: unexpected {option!r}")
    missing = [name for name in _REQUIRED if name not in values]
    repeated = [name for name, given in values.items() if len(given) > 1 and name not in ("runner-home", "keep")]
    if missing or repeated:
        raise SystemExit(f"python -m ocx.run_steps.prepare: missing {missing}, repeated {repeated}")

    def one(name: str) -> str | None:
        return values.get(name, [None])[0]

    return Preparation(str(one("repository")), str(one("url")), str(one("user")), Path(str(one("home"))),
                       Path(str(one("marks"))), str(one("stem")), Path(str(one("fossil-home"))),
                       Path(str(one("template"))), "pull" in flags, keep_password="no-password" not in flags,
                       checkin=one("checkin"),
                       runner_homes=tuple(values.get("runner-home", [])),
                       keep=tuple((int(k.split(":", 1)[0]), k.split(":", 1)[1]) for k in values.get("keep", [])),
                       server_login=one("server-login"), server_password_file=one("server-password-file"),
                       ahead=int(str(one("ahead"))) if one("ahead") else None,
                       wait_for=int(str(one("wait-for"))) if one("wait-for") else None,
                       order=int(str(one("order"))) if one("order") else None)


def main(argv: list[str], door_cpu_ms: float | None = None) -> int:
    """DOOR_CPU_MS: the door's CPU when the node's step service forked this process for it (step_server.py)."""
    # The interpreter's start and this module's imports, or, forked already loaded, its door's.
    start_ms = cpu_ms() if door_cpu_ms is None else door_cpu_ms + cpu_ms()
    os.chdir("/")  # D41: nothing of the run's as a working directory, whatever systemd gave
    step = parse(argv)
    queued = in_order.queued(step.fossil_home, step.order, step.stem)
    turn: int | None = None
    try:
        began, turn_at = time.monotonic(), None
        try:  # held until this process exits (turns.py), or until it waits for the one before it
            turn = take_turn(turns_of(step.fossil_home))
            turn_at = time.time()
            print(f"prepare: its turn (two preparations a core at once): {(time.monotonic() - began) * 1000:.0f} ms",
                  flush=True)
        except OSError as trouble:  # the run is never refused for a turn: it prepares beside the others
            print(f"prepare: no turn taken ({trouble}); prepared at once", flush=True)
        prepare_run(step, turn_at, own_process=True, start_ms=start_ms, door_ms=door_cpu_ms or 0.0)
    except Exception as failure:  # the node answers it: refused with this reason, or tries again (a fault)
        found = failure.mark() if isinstance(failure, LettersFound) else {}  # refused or unenforced, not judged
        RecordStore(step.marks).mark(Mark.UNPREPARED, {"at": time.time(), "why": describe(failure),
                                                       "fault": is_node_fault(failure), **found}, step.stem)
        print(f"ocx prepare: {failure}", file=sys.stderr)
        if queued is not None:  # its program never starts: none waits for it
            in_order.leave(*queued, started=False)
        return 1
    finally:  # the node starts the next session waiting for a start (tend.py, STARTS_AT_ONCE)
        poke(step.marks.parent.parent.name, f"prepared {step.stem}")
        if turn is not None:
            os.close(turn)
    if queued is not None:
        in_order.wait_then_leave(queued)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
