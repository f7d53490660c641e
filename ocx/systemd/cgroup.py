"""A unit's cgroup, read from /sys/fs/cgroup (the only code that does).

Two things systemd 252 does not tell on a cgroup v1 hybrid host:
- CPU time (D17 cpu): CPUUsageNSec stays unset because cpu and cpuacct are
  separate hierarchies; the unit's cgroup2 `cpu.stat` (usage_usec) under
  /sys/fs/cgroup/unified is right, while it runs and from its ExecStopPost.
- A memory kill (D17 memory): Result is `signal`/SIGKILL, as for any
  `kill -9`; the v1 memory cgroup's `memory.oom_control` (oom_kill) and
  `memory.failcnt` say the limit was hit. The cgroup is removed when the
  unit stops, so read it while it runs or from its ExecStopPost.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, NamedTuple  # not dataclasses: a run's stop step imports this (docs/node.md)

from ..protocol.numerals import is_digits

if TYPE_CHECKING:                      # imported where used: most readers of a cgroup need no sockets
    import socket

ROOT = "/sys/fs/cgroup"


def _read(path: str) -> str | None:
    try:
        with open(path) as f:
            return f.read()
    except (FileNotFoundError, NotADirectoryError, PermissionError, OSError):
        return None


def _keyed(text: str | None) -> dict[str, int]:
    out: dict[str, int] = {}
    for line in (text or "").splitlines():
        k, _, v = line.partition(" ")
        if is_digits(v.strip().lstrip("-")):
            out[k] = int(v)
    return out


def pure_v2(root: str = ROOT) -> bool:
    return os.path.exists(os.path.join(root, "cgroup.controllers"))


def unified_root(root: str = ROOT) -> str | None:
    """Where the cgroup2 hierarchy is mounted: ROOT on pure v2,
    ROOT/unified on a hybrid host, None on pure v1."""
    if pure_v2(root):
        return root
    if os.path.exists(os.path.join(root, "unified", "cgroup.procs")):
        return os.path.join(root, "unified")
    return None


def _join(base: str, control_group: str) -> str:
    return os.path.join(base, control_group.lstrip("/"))


def cpu_usage_usec(control_group: str, root: str = ROOT) -> int | None:
    """CPU time of every process the cgroup holds and held, in µs."""
    uni = unified_root(root)
    if uni is not None:
        stat = _keyed(_read(_join(_join(uni, control_group), "cpu.stat")))
        if "usage_usec" in stat:
            return stat["usage_usec"]
    # Pure v1 (or a kernel without cgroup2 cpu.stat): cpuacct, in ns.
    for d in ("cpuacct", "cpu,cpuacct"):
        text = _read(_join(_join(os.path.join(root, d), control_group), "cpuacct.usage"))
        if text and is_digits(text.strip()):
            return int(text) // 1000
    return None


class MemoryEvidence(NamedTuple):
    """What the memory cgroup saw: the kernel's OOM kills inside it, and
    how often a charge hit the limit."""

    oom_kill: int
    failcnt: int | None = None       # v1 only
    max_usage: int | None = None     # bytes, the peak

    @property
    def oom_killed(self) -> bool:
        return self.oom_kill > 0


def memory_evidence(control_group: str, root: str = ROOT) -> MemoryEvidence | None:
    """The cgroup's memory counters, or None when it has none (gone)."""
    if pure_v2(root):
        d = _join(root, control_group)
        events = _read(os.path.join(d, "memory.events"))
        if events is None:
            return None
        peak = _read(os.path.join(d, "memory.peak"))
        return MemoryEvidence(oom_kill=_keyed(events).get("oom_kill", 0),
                              max_usage=int(peak) if peak and is_digits(peak.strip()) else None)
    d = _join(os.path.join(root, "memory"), control_group)
    oom = _read(os.path.join(d, "memory.oom_control"))
    if oom is None:
        return None
    fail = _read(os.path.join(d, "memory.failcnt"))
    peak = _read(os.path.join(d, "memory.max_usage_in_bytes"))
    return MemoryEvidence(
        oom_kill=_keyed(oom).get("oom_kill", 0),
        failcnt=int(fail) if fail and is_digits(fail.strip()) else None,
        max_usage=int(peak) if peak and is_digits(peak.strip()) else None)


def own_control_group(pid: int | str = "self", controller: str = "") -> str | None:
    """A process's cgroup path: in the cgroup2 hierarchy by default, or in
    the v1 hierarchy of `controller` (e.g. "memory")."""
    text = _read(f"/proc/{pid}/cgroup")
    for line in (text or "").splitlines():
        _, ctrls, path = line.split(":", 2)
        if (controller and controller in ctrls.split(",")) or (not controller and ctrls == ""):
            return path
    return None


def unit_control_group(pid: int | str = "self") -> str | None:
    """The unit's cgroup as systemd names it (its ControlGroup), from inside
    the unit: name=systemd's path on v1 hybrid, else the cgroup2 one."""
    return own_control_group(pid, "name=systemd") or own_control_group(pid)


def unit_of(pid: int) -> str | None:
    """The unit process PID runs in (its cgroup's last part, e.g.
    `ocx-….service`), or None when it is in none or gone: who is at the
    other end of a socket, from its SO_PEERCRED pid (D22, D41)."""
    path = unit_control_group(pid)
    name = (path or "").rstrip("/").rsplit("/", 1)[-1]
    return name if name.endswith((".service", ".scope")) else None


def join(pid: int) -> None:
    """Move this process into every cgroup process PID is in (each hierarchy's: cgroup2, and on a v1
    or hybrid host name=systemd's and each controller's, which keep trees of their own): the node's
    step service's fork joins the run unit whose step it runs (run_steps/step_server.py), so systemd
    accounts for it, limits it and ends it with that unit. Raises OSError where it cannot (PID gone,
    a hierarchy not mounted here): the fork then runs nothing."""
    mounts = _hierarchies()
    text = _read(f"/proc/{pid}/cgroup")
    if not text:
        raise OSError(f"no cgroups of process {pid}")
    for line in text.splitlines():
        _, controllers, path = line.split(":", 2)
        wanted = frozenset(c for c in controllers.split(",") if c)
        where = next(((point, root) for options, point, root in mounts if wanted <= options and
                      (bool(wanted) == bool(options)) and path.startswith(root)), None)
        if where is None:
            raise OSError(f"the cgroup hierarchy {controllers or 'cgroup2'} is not mounted here")
        point, root = where
        relative = path[len(root):] if root != "/" else path
        with open(_join(point, relative) + "/cgroup.procs", "w") as procs:
            procs.write(str(os.getpid()))


def _hierarchies() -> list[tuple[frozenset[str], str, str]]:
    """Each cgroup mount: (its controllers and name=, empty for cgroup2; where; its root)."""
    found: list[tuple[frozenset[str], str, str]] = []
    for line in (_read("/proc/self/mountinfo") or "").splitlines():
        fields, _, after = line.partition(" - ")
        kind, _source, options = (after.split(" ") + ["", "", ""])[:3]
        parts = fields.split(" ")
        if kind == "cgroup2":
            found.append((frozenset(), parts[4], parts[3]))
        elif kind == "cgroup":
            found.append((frozenset(options.split(",")), parts[4], parts[3]))
    return found


def peer(sock: socket.socket) -> tuple[int, int, str | None]:
    """(pid, uid, unit) of the process at the other end of the unix socket
    SOCK, from SO_PEERCRED: who connected, as the kernel says."""
    import socket
    import struct

    size = struct.calcsize("3i")
    pid, uid, _gid = struct.unpack("3i", sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, size))
    return pid, uid, unit_of(pid)


class Usage(NamedTuple):
    """What a running unit's cgroup holds now and held at most (the console's
    bars, docs/console.md 'In work'): None where this host's cgroups do not keep it (memory.peak is
    cgroup v2 from Linux 5.19; pids.peak is v1's, or v2 from 6.1)."""

    memory: int | None = None  # bytes
    memory_peak: int | None = None
    tasks: int | None = None
    tasks_peak: int | None = None


def _number(path: str) -> int | None:
    text = _read(path)
    return int(text) if text and is_digits(text.strip()) else None


def usage(control_group: str, root: str = ROOT) -> Usage:
    """Memory and processes of a unit's cgroup, from the v2 hierarchy on a
    pure v2 host, else from v1's memory and pids hierarchies."""
    if pure_v2(root):
        d = _join(root, control_group)
        return Usage(_number(os.path.join(d, "memory.current")), _number(os.path.join(d, "memory.peak")),
                     _number(os.path.join(d, "pids.current")), _number(os.path.join(d, "pids.peak")))
    memory = _join(os.path.join(root, "memory"), control_group)
    pids = _join(os.path.join(root, "pids"), control_group)
    return Usage(_number(os.path.join(memory, "memory.usage_in_bytes")),
                 _number(os.path.join(memory, "memory.max_usage_in_bytes")),
                 _number(os.path.join(pids, "pids.current")), _number(os.path.join(pids, "pids.peak")))
