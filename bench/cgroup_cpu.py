"""The machine's CPU in a burst, split by the systemd test container's cgroups (bench/inside.py's
"the rest of the machine" told apart): asserts nothing.

cgroup v2's cpu.stat (systemd's hybrid `unified` hierarchy in the test container, its cgroup
namespace's root being the container's own cgroup) counts a cgroup's CPU with its descendants', the
gone ones' included, so a slice keeps what its transient units spent after they are collected. The
root's own processes are the ones `docker exec` put there: the benchmark itself, its `systemctl` and
`journalctl` included. What the machine spent outside the container is the kernel's unattributed work
(interrupts, kworkers: a namespace's teardown among them), the container engine, and any other job on
the host.
"""
import os
from pathlib import Path

ROOTS = ("/sys/fs/cgroup/unified", "/sys/fs/cgroup")
OWN = "the container's root itself (the benchmark's processes, `docker exec`)"
OUTSIDE = "outside the container (the kernel's unattributed work, the engine, other jobs)"


def _usage(group: Path) -> float | None:
    try:
        stat = (group / "cpu.stat").read_text()
    except OSError:
        return None
    return next((int(line.split()[1]) / 1e6 for line in stat.splitlines() if line.startswith("usage_usec ")), None)


def _children(group: Path) -> dict[str, float]:
    found = {}
    try:
        entries = sorted(entry for entry in group.iterdir() if entry.is_dir())
    except OSError:
        return found
    for entry in entries:
        if (seconds := _usage(entry)) is not None:
            found[entry.name.replace("\\x2d", "-")] = seconds
    return found


def snapshot() -> dict[str, float]:
    """CPU seconds so far: each cgroup under the container's root and under its system.slice, the
    root's own processes, and the machine's outside the container; empty where there is no v2 cpu.stat."""
    root = next((Path(r) for r in ROOTS if _usage(Path(r)) is not None), None)
    if root is None:
        return {}
    total = _usage(root) or 0.0
    top = _children(root)
    found = {name: seconds for name, seconds in top.items() if name != "system.slice"}
    system = _children(root / "system.slice")
    found.update({f"system.slice/{name}": seconds for name, seconds in system.items()})
    found["system.slice's units gone meanwhile"] = top.get("system.slice", 0.0) - sum(system.values())
    found[OWN] = total - sum(top.values())
    tick = os.sysconf("SC_CLK_TCK")
    machine = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    found[OUTSIDE] = (sum(machine[:8]) - machine[3] - machine[4]) / tick - total
    return found


def spent(before: dict[str, float], after: dict[str, float], runs: int, least_ms: float = 1.0) -> str:
    """Each cgroup's CPU between two snapshots, a run's share, largest first; those under LEAST_MS a
    run summed as one."""
    if not before or not after:
        return "no cgroup v2 cpu.stat here"
    each = {name: (after.get(name, 0.0) - before.get(name, 0.0)) / runs * 1000 for name in {*before, *after}}
    shown = sorted(((ms, name) for name, ms in each.items() if abs(ms) >= least_ms), reverse=True)
    small = sum(ms for ms in each.values() if abs(ms) < least_ms)
    return "; ".join([f"{name} {ms:.0f} ms" for ms, name in shown] + [f"the others {small:.1f} ms"])
