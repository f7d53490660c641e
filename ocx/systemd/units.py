"""A transient service described plainly, and its end, without D-Bus.

Everything here is pure: `properties()` turns a `TransientService` into the
`a(sv)` list that StartTransientUnit takes, as (name, signature, value)
triples that `ocx.systemd.bus` wraps in Variants; `EndTracker` reads a
unit's PropertiesChanged signals into its `End`. The operations that talk
to systemd are in `ocx.systemd.manager`.
"""

from __future__ import annotations

import re
import signal
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .errors import Property, UnitError

if TYPE_CHECKING:
    from .hardening import Hardening

USEC = 1_000_000
# MS_REC: BindPaths' last field is mount flags; recursive, like the unit
# file syntax's default.
MS_REC = 16384
SERVICE_IFACE = "org.freedesktop.systemd1.Service"
UNIT_IFACE = "org.freedesktop.systemd1.Unit"

_NAME = re.compile(r"[A-Za-z0-9:_.\\-]+\.service")
# Sent twice on purpose (hardening.py: an allow list, then a deny list).
_CUMULATIVE = {"SystemCallFilter"}
_STD = {"null", "tty", "tty-force", "tty-fail", "inherit", "journal", "kmsg",
        "socket", "data"}


@dataclass(frozen=True)
class ExecCommand:
    """One command line of ExecStart/ExecStopPost."""

    argv: Sequence[str]
    path: str | None = None          # the program; defaults to argv[0]
    privileged: bool = False         # `+`: root, outside the sandbox (D4)
    ignore_failure: bool = False     # `-`: its failure does not fail the unit

    def program(self) -> str:
        return self.path or self.argv[0]


@dataclass(frozen=True)
class BindPath:
    source: str
    destination: str | None = None   # defaults to the same path
    read_only: bool = False
    ignore_missing: bool = False


@dataclass(frozen=True)
class TransientService:
    """What a run is, as systemd will hold it (D3, D15, D16, D17)."""

    name: str
    argv: Sequence[str]
    description: str = ""
    slice: str | None = "ocx.slice"              # D3
    environment: Mapping[str, str] = field(default_factory=dict)
    working_directory: str | None = None
    user: str | None = None
    group: str | None = None
    dynamic_user: bool = False
    memory_max: int | None = None                # bytes (D17 memory)
    memory_swap_max: int | None = None           # None: 0 when memory_max is set
    tasks_max: int | None = None                 # D17 processes
    runtime_max_sec: float | None = None         # D17 wall
    cpu_quota: float | None = None               # CPUs' worth, 0.5 = 50% (D17)
    protect_system: str | None = None            # "strict" for runs (D16)
    protect_home: str | None = None
    private_network: bool = False                # D34
    private_tmp: bool = False
    read_only_paths: Sequence[str] = ()
    read_write_paths: Sequence[str] = ()
    inaccessible_paths: Sequence[str] = ()
    bind_paths: Sequence[BindPath] = ()
    state_directory: Sequence[str] = ()
    runtime_directory: Sequence[str] = ()        # below /run, removed when the unit ends
    runtime_directory_mode: int | None = None    # e.g. 0o700
    exec_start_pre: Sequence[ExecCommand] = ()   # e.g. the node's preparation of a run
    exec_stop_post: Sequence[ExecCommand] = ()
    standard_input: str | int | None = None      # a name, or an open fd
    standard_output: str | int | None = None
    standard_error: str | int | None = None
    tty_path: str | None = None
    type: str | None = None
    kill_mode: str | None = None
    timeout_stop_sec: float | None = None
    timeout_start_sec: float | None = None       # bounds ExecStartPre (RuntimeMaxSec starts after it)
    add_ref: bool = True      # keeps a unit that exited 0 readable (notes)
    collect_mode: str | None = "inactive-or-failed"
    accounting: bool = True
    hardening: Hardening | None = None           # the kernel-facing sandbox (hardening.py)
    extra: Sequence[Property] = ()               # anything not named above


def _usec(seconds: float) -> int:
    return int(round(seconds * USEC))


def _paths(name: str, paths: Sequence[str]) -> list[str]:
    for p in paths:
        # systemd takes an optional "-" (ignore missing) or "+" prefix.
        if not p.lstrip("-+").startswith("/"):
            raise UnitError(f"{name}: {p!r} is not an absolute path")
    return list(paths)


def _std(name: str, value: str | int) -> list[Property]:
    if isinstance(value, bool):
        raise UnitError(f"{name}: {value!r} is neither a name nor a file descriptor")
    if isinstance(value, int):
        if value < 0:
            raise UnitError(f"{name}: {value} is not a file descriptor")
        # 'h': bus.py moves the fd into the message's unix_fds.
        return [(f"{name}FileDescriptor", "h", value)]
    if value not in _STD and not value.startswith(("file:", "append:", "truncate:")):
        raise UnitError(f"{name}: {value!r} is not a known setting")
    return [(name, "s", value)]


def exec_commands(name: str, commands: Sequence[ExecCommand]) -> list[Property]:
    """ExecX as a(sasb); with any `+` flag as ExecXEx, a(sasas) (notes)."""
    for c in commands:
        if not c.argv or not c.program().startswith("/"):
            raise UnitError(f"{name}: {list(c.argv)!r} needs an absolute program path")
    if any(c.privileged for c in commands):
        return [(f"{name}Ex", "a(sasas)", [
            [c.program(), list(c.argv),
             (["privileged"] if c.privileged else [])
             + (["ignore-failure"] if c.ignore_failure else [])]
            for c in commands])]
    return [(name, "a(sasb)", [[c.program(), list(c.argv), c.ignore_failure]
                               for c in commands])]


def properties(s: TransientService) -> list[Property]:
    """The StartTransientUnit properties of `s`. Pure; raises UnitError."""
    if not _NAME.fullmatch(s.name):
        raise UnitError(f"name: {s.name!r} is not a valid service unit name")
    if not s.argv:
        raise UnitError("argv: empty")
    if s.user and s.dynamic_user:
        raise UnitError("user: a named User= and DynamicUser=yes together")
    props: list[Property] = [("Description", "s", s.description or s.name)]
    if s.slice:
        if not s.slice.endswith(".slice"):
            raise UnitError(f"slice: {s.slice!r} does not end in .slice")
        props.append(("Slice", "s", s.slice))
    if s.type:
        props.append(("Type", "s", s.type))
    props += exec_commands("ExecStart", [ExecCommand(argv=s.argv)])
    if s.environment:
        for k in s.environment:
            if not k or "=" in k:
                raise UnitError(f"environment: {k!r} is not a variable name")
        props.append(("Environment", "as",
                      [f"{k}={v}" for k, v in s.environment.items()]))
    if s.working_directory:
        _paths("working_directory", [s.working_directory])
        props.append(("WorkingDirectory", "s", s.working_directory))
    if s.user:
        props.append(("User", "s", s.user))
    if s.group:
        props.append(("Group", "s", s.group))
    if s.dynamic_user:
        props.append(("DynamicUser", "b", True))
    if s.accounting:
        props += [("CPUAccounting", "b", True), ("MemoryAccounting", "b", True),
                  ("TasksAccounting", "b", True)]
    for label, value in (("memory_max", s.memory_max),
                         ("memory_swap_max", s.memory_swap_max),
                         ("tasks_max", s.tasks_max)):
        if value is not None and (isinstance(value, bool) or value <= 0) \
                and not (label == "memory_swap_max" and value == 0):
            raise UnitError(f"{label}: {value!r} is not a positive whole number")
    if s.memory_max is not None:
        props.append(("MemoryMax", "t", int(s.memory_max)))
        # D17: a memory budget means no swap beyond it.
        swap = 0 if s.memory_swap_max is None else s.memory_swap_max
        props.append(("MemorySwapMax", "t", int(swap)))
    elif s.memory_swap_max is not None:
        props.append(("MemorySwapMax", "t", int(s.memory_swap_max)))
    if s.tasks_max is not None:
        props.append(("TasksMax", "t", int(s.tasks_max)))
    if s.runtime_max_sec is not None:
        if s.runtime_max_sec <= 0:
            raise UnitError(f"runtime_max_sec: {s.runtime_max_sec!r} is not positive")
        props.append(("RuntimeMaxUSec", "t", _usec(s.runtime_max_sec)))
    if s.cpu_quota is not None:
        if s.cpu_quota <= 0:
            raise UnitError(f"cpu_quota: {s.cpu_quota!r} is not positive")
        props.append(("CPUQuotaPerSecUSec", "t", _usec(s.cpu_quota)))
    if s.protect_system:
        if s.protect_system not in ("yes", "full", "strict"):
            raise UnitError(f"protect_system: {s.protect_system!r}")
        props.append(("ProtectSystem", "s", s.protect_system))
    if s.protect_home:
        props.append(("ProtectHome", "s", s.protect_home))
    if s.private_network:
        props.append(("PrivateNetwork", "b", True))
    if s.private_tmp:
        props.append(("PrivateTmp", "b", True))
    for prop, label, paths in (("ReadOnlyPaths", "read_only_paths", s.read_only_paths),
                               ("ReadWritePaths", "read_write_paths", s.read_write_paths),
                               ("InaccessiblePaths", "inaccessible_paths",
                                s.inaccessible_paths)):
        if paths:
            props.append((prop, "as", _paths(label, paths)))
    for prop, ro in (("BindPaths", False), ("BindReadOnlyPaths", True)):
        binds = [b for b in s.bind_paths if b.read_only == ro]
        if binds:
            _paths("bind_paths", [b.source for b in binds]
                   + [b.destination for b in binds if b.destination])
            props.append((prop, "a(ssbt)", [[b.source, b.destination or b.source,
                                              b.ignore_missing, MS_REC]
                                             for b in binds]))
    if s.state_directory:
        for d in s.state_directory:
            if d.startswith("/") or ".." in d.split("/"):
                raise UnitError(f"state_directory: {d!r} must be relative, below /var/lib")
        props.append(("StateDirectory", "as", list(s.state_directory)))
    if s.runtime_directory:
        for d in s.runtime_directory:
            if d.startswith("/") or ".." in d.split("/"):
                raise UnitError(f"runtime_directory: {d!r} must be relative, below /run")
        props.append(("RuntimeDirectory", "as", list(s.runtime_directory)))
    if s.runtime_directory_mode is not None:
        if not 0 <= s.runtime_directory_mode <= 0o7777:
            raise UnitError(f"runtime_directory_mode: {s.runtime_directory_mode!r} is not a file mode")
        props.append(("RuntimeDirectoryMode", "u", s.runtime_directory_mode))
    if s.exec_start_pre:
        props += exec_commands("ExecStartPre", s.exec_start_pre)
    if s.exec_stop_post:
        props += exec_commands("ExecStopPost", s.exec_stop_post)
    for name, stream in (("StandardInput", s.standard_input),
                         ("StandardOutput", s.standard_output),
                         ("StandardError", s.standard_error)):
        if stream is not None:
            props += _std(name, stream)
    if s.tty_path:
        props.append(("TTYPath", "s", s.tty_path))
    if s.kill_mode:
        props.append(("KillMode", "s", s.kill_mode))
    if s.timeout_stop_sec is not None:
        props.append(("TimeoutStopUSec", "t", _usec(s.timeout_stop_sec)))
    if s.timeout_start_sec is not None:
        props.append(("TimeoutStartUSec", "t", _usec(s.timeout_start_sec)))
    if s.add_ref:
        props.append(("AddRef", "b", True))
    if s.collect_mode:
        props.append(("CollectMode", "s", s.collect_mode))
    if s.hardening is not None:
        from . import hardening

        props += hardening.properties(s.hardening)
    props += [(n, sig, v) for n, sig, v in s.extra]
    names = [p[0] for p in props]
    dup = {n for n in names if names.count(n) > 1} - _CUMULATIVE
    if dup:
        raise UnitError(f"extra: {sorted(dup)} set twice")
    return props


# --- a unit's end -----------------------------------------------------------

_CODES = {1: "exited", 2: "killed", 3: "dumped"}   # CLD_* of ExecMainCode


@dataclass(frozen=True)
class End:
    """How a service ended, as systemd said at the transition (D4)."""

    unit: str
    result: str | None        # systemd's Result: success, exit-code, signal, timeout…
    code: str | None          # exited, killed or dumped
    status: int | None        # the exit status, or the signal's number
    active_state: str = "inactive"

    @property
    def signal_name(self) -> str | None:
        if self.code in ("killed", "dumped") and self.status:
            try:
                return signal.Signals(self.status).name
            except ValueError:
                return str(self.status)
        return None


def cause(end: End, oom_killed: bool | None = None) -> str:
    """What ended the run: exit, timeout, memory, signal or failed.

    cgroup v1 (systemd 252) reports a memory kill as Result `signal` with
    SIGKILL, like any `kill -9`; `oom_killed` is the cgroup's own evidence
    (ocx.systemd.cgroup) that tells them apart. On v2 Result says oom-kill.
    """
    if end.result == "oom-kill":
        return "memory"
    if end.result == "timeout":
        return "timeout"
    if end.code in ("killed", "dumped"):
        if oom_killed and end.status == signal.SIGKILL:
            return "memory"
        return "signal"
    if end.result in ("success", "exit-code") or end.code == "exited":
        return "exit"
    return "failed"


_STARTED = {"activating", "active", "reloading", "deactivating"}


class EndTracker:
    """Reads one unit's PropertiesChanged signals into its End.

    systemd sends them in pairs (Service: Result, ExecMainCode,
    ExecMainStatus; then Unit: ActiveState, SubState). The first pair after
    StartTransientUnit is a stale inactive/dead: ignored until the unit was
    seen started. The End is frozen at the transition, because a later
    ResetFailed re-emits Result=success.
    """

    def __init__(self, unit: str):
        self.unit = unit
        self.started = False
        self.service: dict[str, Any] = {}
        self.end: End | None = None

    def feed(self, interface: str, changed: Mapping[str, Any]) -> End | None:
        if self.end is not None:
            return self.end
        if interface == SERVICE_IFACE:
            self.service.update({k: changed[k] for k in
                                 ("Result", "ExecMainCode", "ExecMainStatus", "MainPID")
                                 if k in changed})
        elif interface == UNIT_IFACE and "ActiveState" in changed:
            state = changed["ActiveState"]
            if state in _STARTED:
                self.started = True
            elif state == "failed" or (state == "inactive" and self.started):
                self.end = self.snapshot(state)
        return self.end

    def snapshot(self, state: str, service: Mapping[str, Any] | None = None) -> End:
        s = {**self.service, **(service or {})}
        code: int | None = s.get("ExecMainCode")  # 'i'
        return End(unit=self.unit, result=s.get("Result"),
                   code=None if code is None else _CODES.get(code, None if code == 0 else str(code)),
                   status=s.get("ExecMainStatus"), active_state=state)


def unit_path(name: str) -> str:
    """systemd's object path for a unit name (sd_bus_path_encode)."""
    out = []
    for ch in name:
        if ch.isascii() and ch.isalnum():
            out.append(ch)
        else:
            out.extend(f"_{b:02x}" for b in ch.encode())
    return "/org/freedesktop/systemd1/unit/" + "".join(out)
