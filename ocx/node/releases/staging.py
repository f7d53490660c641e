"""Staging a release (D45, D48), root's side: the inputs made ready, the build's unit started
and awaited, and what it left read as hostile before `next` names it.

Root never runs or imports anything from `staged/` or from a check-in's tree (D41, D48): it
copies the admin's wheels (or the current release's) and the check-in's files into an input
directory of its own, starts the build in a transient unit as BUILD_USER with no network, a
budget and only `staged/` writable (build_unit), and reads back a name, a record and a digest,
each bounded and with no link followed (links.py, tree.py). `next` moves only when the smoke
the build recorded passed and the staged files' digest is the one recorded.

The command line (cli/cli_release.py) calls this; the page and MCP are to render the same
operations (docs/releases.md, what is not yet built).
"""
from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import re
import secrets
import shutil
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ...systemd.hardening import Hardening
from ...systemd.units import TransientService
from .links import STAGED, ReleaseError, Releases, Staged
from .preview import copy_for_preview
from .tree import tree_digest

if TYPE_CHECKING:
    from ...systemd.manager import Systemd

BUILD_USER = "ocx-build"
INPUTS = ".input-"  # ROOT/.input-TOKEN: root's own, read-only to the build
BUILD_MEMORY = 2 << 30
BUILD_TASKS = 512
BUILD_SECONDS = 1200.0
BUILD_CPU = 1.0
_TOKEN = re.compile(r"[0-9a-f]{16}", re.ASCII)
_ID = re.compile(r"[0-9a-f]{16}-[0-9a-f]{16}", re.ASCII)
_NOTE_MAX = 4096


@dataclass(frozen=True)
class Source:
    """What is staged: CHECKIN names it (a check-in's hash, or a wheel's sha256), and FILL writes
    into the directory it is given either `source/` (a check-in's tree) or `wheel/` (the wheel)."""

    checkin: str
    fill: Callable[[str], None]
    wheelhouse: str | None = None


@dataclass(frozen=True)
class SmokeRepository:
    """A node's served repository, copied without its secrets for the smoke's `status` step: NAME is
    the node (its configuration is inputs/config/NAME.json), HOME root's Fossil home for the copy."""

    name: str
    path: str
    home: str


@dataclass(frozen=True)
class Plan:
    """What `stage` would do, said by its dry run."""

    checkin: str
    wheels: str
    build_unit: TransientService


def _hideable(root: str, hidden: Sequence[str]) -> list[str]:
    """HIDDEN, when none of it holds ROOT: one that did (an adopted repository's directory, a node
    named `releases`) could not be hidden without hiding staged/ too, so the build is refused."""
    for path in hidden:
        if f"{root}/".startswith(f"{path.rstrip('/')}/"):
            raise ReleaseError(f"hidden: {path} holds the releases' root {root}: the build could not be "
                               "kept out of it")
    return list(hidden)


def build_unit(root: str, inputs: str, checkin: str, token: str, hidden: Sequence[str] = ()) -> TransientService:
    """The build's unit (D48): BUILD_USER, no network, a budget, `staged/` its only writable place,
    the node's configuration, state and sockets (HIDDEN) out of its sight."""
    return TransientService(
        name=f"ocx-release-build-{token}.service",
        argv=[sys.executable, "-I", "-m", "ocx.release_build.build", "--root", root, "--inputs", inputs,
              "--checkin", checkin, "--token", token],
        description=f"OCX release build of {checkin[:16]} (D45, D48)",
        user=BUILD_USER, group=BUILD_USER,
        environment={"HOME": "/tmp", "TMPDIR": "/tmp", "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"},
        working_directory="/tmp",
        memory_max=BUILD_MEMORY, tasks_max=BUILD_TASKS, runtime_max_sec=BUILD_SECONDS, cpu_quota=BUILD_CPU,
        protect_system="strict", protect_home="yes", private_tmp=True, private_network=True,
        read_write_paths=[os.path.join(root, STAGED)],
        inaccessible_paths=[f"-{path}" for path in _hideable(root, hidden)],
        hardening=Hardening(capability_bounding_set=0, no_new_privileges=True, restrict_suid_sgid=True,
                            private_devices=True, protect_kernel_tunables=True, protect_kernel_modules=True,
                            protect_kernel_logs=True, protect_control_groups=True, protect_clock=True,
                            protect_hostname=True, restrict_namespaces=True, lock_personality=True,
                            restrict_realtime=True, restrict_address_families=["AF_UNIX"], umask=0o022),
        standard_output="journal", standard_error="journal",
        add_ref=True, collect_mode="inactive-or-failed",
    )


@contextlib.contextmanager
def moving(root: str) -> Iterator[Releases]:
    """The releases' root, held by this process alone while it stages, accepts or rolls back, and
    made consistent first (links.py `recover`): two commands never move the links at once."""
    os.makedirs(root, 0o755, exist_ok=True)
    fd = os.open(os.path.join(root, ".lock"), os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        releases = Releases(root)
        releases.recover()
        for name in os.listdir(root):  # a stage killed before it removed its inputs (root's own)
            if name.startswith(INPUTS):
                shutil.rmtree(os.path.join(root, name), ignore_errors=True)
        yield releases
    finally:
        os.close(fd)


def wheels_for(releases: Releases, wheelhouse: str | None) -> str:
    """Where the build finds its wheels: the admin's wheelhouse, else the current release's (D45)."""
    if wheelhouse is not None:
        if not os.path.isdir(wheelhouse):
            raise ReleaseError(f"wheelhouse: {wheelhouse} is not a directory")
        return wheelhouse
    current = releases.link("current")
    if current is None:
        raise ReleaseError("wheelhouse: there is no current release to take wheels from: name a wheelhouse")
    return os.path.join(releases.root, current, "wheels")


def prepare_root(root: str, uid: int, gid: int) -> None:
    """ROOT root's own (0755), and ROOT/staged the build user's: a real directory, no link."""
    os.makedirs(root, 0o755, exist_ok=True)
    staged = os.path.join(root, STAGED)
    if os.path.islink(staged):
        os.unlink(staged)  # the build user cannot make one there; whoever did, it is not followed
    if not os.path.isdir(staged):
        os.mkdir(staged, 0o755)
    os.chown(staged, uid, gid, follow_symlinks=False)
    os.chmod(staged, 0o755)  # a directory of ROOT's, which only root can rename or replace


def _inputs(root: str, token: str, source: Source, wheels: str, configurations: Sequence[str],
            repositories: Sequence[SmokeRepository] = (), gid: int = 0) -> str:
    inputs = os.path.join(root, f"{INPUTS}{token}")
    os.mkdir(inputs, 0o755)
    source.fill(inputs)
    if repositories:  # the smoke's `status` step: the build's group alone reads them (0640)
        from ...fossil.secretless_copy import copy_without_secrets

        os.mkdir(os.path.join(inputs, "smoke"), 0o755)
        for repository in repositories:
            copied = os.path.join(inputs, "smoke", f"{repository.name}.fossil")
            copy_without_secrets(repository.path, copied, home=repository.home)
            os.chown(copied, 0, gid)
            os.chmod(copied, 0o640)
    if configurations:  # the nodes' live configurations, for the smoke; their secrets sit beside, never here
        os.mkdir(os.path.join(inputs, "config"), 0o755)
        for path in configurations:
            copied = os.path.join(inputs, "config", os.path.basename(path))
            shutil.copyfile(path, copied)
            os.chmod(copied, 0o644)
    kept = os.path.join(inputs, "wheels")
    os.mkdir(kept, 0o755)
    for name in sorted(os.listdir(wheels)):
        path = os.path.join(wheels, name)
        if name.endswith((".whl", ".tar.gz", ".zip")) and os.path.isfile(path) and not os.path.islink(path):
            shutil.copyfile(path, os.path.join(kept, name))
            os.chmod(os.path.join(kept, name), 0o644)
    return inputs


def _read_note(staged: str, name: str) -> str | None:
    """A note the build left (TOKEN.done, TOKEN.failed), read as hostile: no link, at most 4 KiB."""
    directory = os.open(staged, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=directory)
    except OSError:
        return None
    finally:
        os.close(directory)
    with os.fdopen(fd, "rb") as note:
        return note.read(_NOTE_MAX).decode("utf-8", "replace").strip()


def _forget(staged: str, names: Sequence[str]) -> None:
    """What a build left besides a release: removed with no link followed (rmtree and unlink follow none)."""
    for name in names:
        path = os.path.join(staged, name)
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path, ignore_errors=True)
        elif os.path.lexists(path):
            os.unlink(path)


def smoke_passed(staged: Staged, wanted: Sequence[str] = ("version",)) -> bool:
    return all(step in staged.smoke for step in wanted) and all(
        result.startswith("passed") for result in staged.smoke.values())


BUILD_UNITS = "ocx-release-build-*.service"
STOP_SECONDS = 60.0


async def _stop_earlier_builds(systemd: Systemd) -> None:
    """A build a killed `stage` left running (its unit outlives the command) is stopped before another
    starts, so nothing writes staged/ while it is swept (sweep)."""
    from ...systemd.errors import BusError

    running = [unit.name for unit in await systemd.units([BUILD_UNITS]) if unit.active_state not in ("inactive",)]
    for name in running:
        try:
            await systemd.stop(name)
        except BusError:
            pass  # ended meanwhile
    deadline = asyncio.get_running_loop().time() + STOP_SECONDS
    while any(unit.active_state in ("active", "activating", "deactivating")
              for unit in await systemd.units([BUILD_UNITS])):
        if asyncio.get_running_loop().time() > deadline:
            raise ReleaseError(f"build: an earlier build's unit did not stop within {STOP_SECONDS:.0f} s")
        await asyncio.sleep(0.2)


async def _build(service: TransientService, releases: Releases) -> str:
    from ...systemd.manager import Systemd

    async with await Systemd.connect() as systemd:
        await _stop_earlier_builds(systemd)
        sweep(releases)
        run = await systemd.run(service)
        end = await run.ended(timeout=BUILD_SECONDS + 60)
        await systemd.release(service.name)
    return f"{end.result} ({end.code} {end.status})"


def sweep(releases: Releases) -> None:
    """What killed or failed stages left in staged/ (a build's directory, its notes, a release staged
    but never offered) is removed, with no link followed; kept are `next`'s release and record, and the
    record of each accepted release (`show` reads its check-in and smoke there)."""
    staged = os.path.join(releases.root, STAGED)
    if not os.path.isdir(staged) or os.path.islink(staged):
        return
    offered = releases.link("next")
    records = set(releases.accepted()) | ({offered} if offered else set())
    for name in os.listdir(staged):
        if name == offered or (name.endswith(".json") and name.removesuffix(".json") in records):
            continue
        _forget(staged, [name])


def stage(releases: Releases, source: Source, uid: int, gid: int, hidden: Sequence[str] = (),
          dry_run: bool = False, configurations: Sequence[str] = (),
          repositories: Sequence[SmokeRepository] = ()) -> Plan | Staged:
    """Stage SOURCE: build and smoke it as the build user, then offer it as `next` (D45). The dry
    run says what would be built, from which wheels, in which unit, and changes nothing.
    CONFIGURATIONS: the nodes' configuration files (never their secrets), which the staged release
    must read (the smoke's `configuration` step); REPOSITORIES: the nodes' served repositories, of
    which root gives the build copies without secrets (the smoke's `status` step)."""
    wheels = wheels_for(releases, source.wheelhouse)
    token = secrets.token_hex(8)
    inputs = os.path.join(releases.root, f"{INPUTS}{token}")
    service = build_unit(releases.root, inputs, source.checkin, token, hidden)
    if dry_run:
        return Plan(source.checkin, wheels, service)
    prepare_root(releases.root, uid, gid)
    try:
        _inputs(releases.root, token, source, wheels, configurations, repositories, gid)
        ended = asyncio.run(_build(service, releases))
    finally:
        shutil.rmtree(inputs, ignore_errors=True)
    staged_dir = os.path.join(releases.root, STAGED)
    done = _read_note(staged_dir, f"{token}.done")
    failed = _read_note(staged_dir, f"{token}.failed")
    _forget(staged_dir, [f"{token}.done", f"{token}.failed", f"build-{token}"])
    if done is None or not _ID.fullmatch(done):
        raise ReleaseError(f"build: {failed or f'the build unit ended {ended}'}")
    staged = releases.staged(done)
    if staged.checkin != source.checkin:
        raise ReleaseError(f"build: staged {staged.checkin[:16]}, not {source.checkin[:16]}")
    if not smoke_passed(staged, ("version", "status", "node_check") if repositories else ("version",)):
        raise ReleaseError(f"smoke: {staged.smoke}")
    if tree_digest(os.path.join(staged_dir, done)) != staged.digest:
        raise ReleaseError(f"digest: {done}'s files are not those the build recorded")
    copy_for_preview(releases.root, staged)  # what /ext/ocx-next runs: root's copy, never staged/ (D46, D48)
    releases.offer(done)
    return staged
