"""The node benchmark's part inside the systemd container: prints figures, asserts nothing.

    python bench/inside.py NAME [RECORDS]
"""
import json
import os
import re
import statistics
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.node_system.drive import node  # noqa: E402
from tests.node_system.harness import systemctl, wait_for  # noqa: E402


def show(unit: str, prop: str) -> str:
    return subprocess.run(["systemctl", "show", unit, "-p", prop, "--value"],
                          capture_output=True, text=True).stdout.strip()


def timestamp(unit: str, prop: str) -> float | None:
    """systemd's own timestamp, to the microsecond (`--timestamp=unix` rounds to seconds)."""
    return timestamps([unit], prop).get(unit)


def timestamps(units: list[str], prop: str) -> dict[str, float | None]:
    """systemd's PROP of each of UNITS, read by one systemctl: a burst's harness looking at each
    unit with a systemctl of its own, once a second, spent a tenth of the 2 cores it timed."""
    out = subprocess.run(["systemctl", "show", "-p", "Id", "-p", prop, "--timestamp=us+utc", *units],
                         capture_output=True, text=True).stdout
    found: dict[str, float | None] = {}
    for block in out.split("\n\n"):
        fields = dict(line.split("=", 1) for line in block.splitlines() if "=" in line)
        if "Id" in fields:
            value = fields.get(prop, "")
            found[fields["Id"]] = (None if not value or value == "n/a" else datetime.strptime(
                value, "%a %Y-%m-%d %H:%M:%S.%f UTC").replace(tzinfo=timezone.utc).timestamp())
    return found


def receipt_time(n, hash_: str) -> float:
    with n.repository() as repository:
        return repository.sender(hash_).time.timestamp()


def quantiles(values: list[float]) -> str:
    values = sorted(values)
    p99 = values[min(len(values) - 1, int(round(0.99 * (len(values) - 1))))]
    return f"median {statistics.median(values) * 1000:.0f} ms, p99 {p99 * 1000:.0f} ms, max {values[-1] * 1000:.0f} ms (n={len(values)})"


def node_memory(name: str) -> str:
    """MemoryCurrent, and how much of it is the process's own (anon) and how much page cache (file):
    the homes the node makes ahead (node/spare.py) are charged to it as page cache, which the kernel
    takes back under pressure."""
    unit = f"ocx-node@{name}.service"
    value = show(unit, "MemoryCurrent")
    if not value.isdigit():
        return f"({value or 'not accounted'})"
    group, split = show(unit, "ControlGroup"), ""
    for path, own, cache in ((f"/sys/fs/cgroup{group}/memory.stat", "anon", "file"),  # cgroup v2
                             (f"/sys/fs/cgroup/memory{group}/memory.stat", "total_rss", "total_cache")):  # v1
        try:
            stat = Path(path).read_text().split()
            kinds = dict(zip(stat[::2], stat[1::2]))
            split = f" (its own {int(kinds[own]) / 2**20:.1f}, page cache {int(kinds[cache]) / 2**20:.1f})"
            break
        except (OSError, KeyError, ValueError):
            continue
    return f"{int(value) / 2**20:.1f} MiB{split}"


def node_resident(name: str) -> str:
    """The node service's process: its resident memory (VmRSS), and its cgroup's (MemoryCurrent,
    page cache included). It stays up once started (serve.py), so this is what it holds for good."""
    pid = show(f"ocx-node@{name}.service", "MainPID")
    try:
        status = Path(f"/proc/{pid}/status").read_text() if pid not in ("", "0") else ""
    except OSError:
        status = ""
    rss = next((line.split()[1] for line in status.splitlines() if line.startswith("VmRSS:")), None)
    process = f"{int(rss) / 1024:.1f} MiB resident" if rss else "no process"
    return f"{process}, {node_memory(name)} in its cgroup (MemoryCurrent)"


def group_cpu(group: str) -> float:
    """cgroup v2's cpu.stat, kept without the cpu controller (systemd's CPUUsageNSec is not, in the
    test container, whose v2 hierarchy is systemd's hybrid `unified`)."""
    for root in ("/sys/fs/cgroup/unified", "/sys/fs/cgroup"):
        try:
            stat = Path(f"{root}{group}/cpu.stat").read_text()
        except OSError:
            continue
        return next(int(line.split()[1]) for line in stat.splitlines() if line.startswith("usage_usec")) / 1e6
    return 0.0


def properties(units: list[str], *props: str) -> dict[str, dict[str, str]]:
    """PROPS of each of UNITS, read by one systemctl."""
    out = subprocess.run(["systemctl", "show", "-p", "Id", *(a for p in props for a in ("-p", p)), *units],
                         capture_output=True, text=True).stdout
    blocks = (dict(line.split("=", 1) for line in block.splitlines() if "=" in line) for block in out.split("\n\n"))
    return {fields["Id"]: fields for fields in blocks if "Id" in fields}


def cpu_seconds(name: str, runs: tuple[str, ...] = ()) -> dict[str, float]:
    """CPU time so far of what a burst keeps busy: the units of RUNS (their preparations, feeders and
    programs; a unit's own, since the slice forgets the units that are gone), the node service, the
    tool sockets' service, the Fossil server, journald, systemd itself, and the whole machine."""
    def unit(u: str) -> float:
        return group_cpu(show(u, "ControlGroup"))

    tick = os.sysconf("SC_CLK_TCK")
    pid1 = Path("/proc/1/stat").read_text().rsplit(")", 1)[1].split()
    total = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    return {"the runs": sum(unit(r) for r in runs), "the node service": unit(f"ocx-node@{name}.service"),
            "the tool sockets' service": unit(f"ocx-tools@{name}.service"),
            "the Fossil server": unit(f"ocx-fossil@{name}.service"), "journald": unit("systemd-journald.service"),
            "systemd (PID 1)": (int(pid1[11]) + int(pid1[12])) / tick,
            "the machine (both cores)": (sum(total[:8]) - total[3] - total[4]) / tick}


def cpu_spent(before: dict[str, float], after: dict[str, float], runs: int) -> str:
    named = [what for what in before if what != "the machine (both cores)"]
    rest = {"the rest of the machine (the kernel's, the engine's, any other work on it)":
            (after["the machine (both cores)"] - before["the machine (both cores)"])
            - sum(after[what] - before[what] for what in named)}
    spent = {**{what: after[what] - before[what] for what in before}, **rest}
    return "; ".join(f"{what} {seconds:.1f} s ({seconds / runs * 1000:.0f} ms a run)" for what, seconds in spent.items())


def process_cpu(pid: int) -> float:
    """PID's own CPU so far (utime + stime, /proc/PID/stat), 0 if it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run_parts(units: list[str]) -> str:
    """The runs' CPU part by part, a run's median: its preparation (its Python's start and imports,
    the rest of its Python, its Fossil runs: the `prepare: done` line's CPU), its wait for the session
    before it (in_order.py's line), its feeder (the unit's main process) and its program (the
    feeder's children), both still running, and what is left of the unit's cgroup: systemd's making of
    its processes and sandbox (exec, mounts, namespaces)."""
    out = subprocess.run(["journalctl", "-o", "json", "--no-pager", *(a for u in units for a in ("-u", u))],
                         capture_output=True, text=True).stdout
    prepared: dict[str, tuple[float, float, float]] = {}
    in_order: dict[str, float] = {}  # none for a check-in run, or before in_order.py said its CPU
    for line in out.splitlines():
        entry = json.loads(line)
        found = re.search(r"^prepare: done in .*; CPU \d+ ms \(Python (\d+), its start (\d+), Fossil (\d+)\)$",
                          str(entry.get("MESSAGE", "")))
        if found:
            python, start, fossil = (int(v) / 1000 for v in found.groups())
            prepared[entry.get("_SYSTEMD_UNIT", "")] = (start, python - start, fossil)
        waited = re.search(r"^prepare: in the order the records came: .*; CPU ([\d.]+) ms$",
                           str(entry.get("MESSAGE", "")))
        if waited:
            in_order[entry.get("_SYSTEMD_UNIT", "")] = float(waited.group(1)) / 1000
    parts: dict[str, list[float]] = {k: [] for k in ("its preparation's Python start", "its preparation's Python work",
                                                     "its preparation's Fossil", "its wait for the one before",
                                                     "its feeder", "its program",
                                                     "the rest of its unit (systemd's set-up of its processes)",
                                                     "its unit in all")}
    shown = properties(units, "MainPID", "ControlGroup")
    for unit in units:
        main_pid, group = int(shown.get(unit, {}).get("MainPID") or 0), shown.get(unit, {}).get("ControlGroup", "")
        if unit not in prepared or not main_pid:
            continue
        children = Path(f"/proc/{main_pid}/task/{main_pid}/children")
        program = sum(process_cpu(int(p)) for p in (children.read_text().split() if children.exists() else []))
        total = group_cpu(group)
        values = (*prepared[unit], in_order.get(unit, 0.0), process_cpu(main_pid), program)
        for key, value in zip(parts, (*values, total - sum(values), total), strict=True):
            parts[key].append(value)
    told = "; ".join(f"{what} {statistics.median(v) * 1000:.0f} ms" for what, v in parts.items() if v)
    return f"{told} (median of {len(parts['its unit in all'])} of {len(units)} runs)"


def out_of_order(started: list[float]) -> str:
    """STARTED: each program's start, in the order their records were received. A program started
    out of order started before one whose record came earlier; the pairs out of order too."""
    overtaking = sum(1 for i, at in enumerate(started) if any(at < before for before in started[:i]))
    pairs = sum(1 for i, at in enumerate(started) for before in started[:i] if at < before)
    return (f"{overtaking} of {len(started)} programs started before one whose record was received earlier; "
            f"{pairs} of {len(started) * (len(started) - 1) // 2} pairs in the opposite order")


def node_idle(name: str, timeout: float = 600) -> None:
    """No pass running and nothing pending: the service's status line says `idle` (serve.py)."""
    from tests.node_system.harness import node_idle as idle

    wait_for(lambda: idle(name), timeout, 0.2, "the node service idle")


def burst(n, count: int) -> list[str]:
    started = time.monotonic()
    records = [n.post(n.record(objective="sleep 1200", budget={"wall": "30m"})) for _ in range(count)]
    print(f"posted {count} records in {time.monotonic() - started:.1f} s through the web form")
    return records


def starts(n, records: list[str], prop: str = "ExecMainStartTimestamp") -> list[float]:
    """Each record's unit's PROP less its receipt, once all have one; those still waiting are
    looked at together, once a second (timestamps)."""
    seen: dict[str, float] = {}

    def all_started() -> bool:
        waiting = [n.unit(r) for r in records if n.unit(r) not in seen]
        seen.update({unit: at for unit, at in timestamps(waiting, prop).items() if at is not None})
        return len(seen) == len(set(n.unit(r) for r in records))
    wait_for(all_started, 600, 1.0, "every unit started")
    return [seen[n.unit(r)] - receipt_time(n, r) for r in records]


def ended_at(n, record: str, timeout: float = 120.0) -> float:
    """When the run's stop step recorded its end (its `ended` mark), read before the node answers
    and removes the record's directory (cleanup.py), which takes it a pass: so looked at often."""
    directory = n.config.state_dir / "records" / record
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for path in directory.glob("ended-*.json"):
            try:
                return json.loads(path.read_text())["at"]
            except (OSError, ValueError):  # written meanwhile, or removed: look again
                pass
        time.sleep(0.005)
    raise AssertionError(f"no end of {record[:12]} seen in {timeout} s")


def ends_to_responses(n, count: int) -> list[float]:
    """One record at a time: its end is read from the node's state before the node removes it."""
    delays = []
    for _ in range(count):
        record = n.post(n.record(objective="exit 0"))
        ended = ended_at(n, record)
        n.response(record, timeout=120)
        answer = next(p for p in n.repository().thread(record) if p.sender.login == n.config.node_user)
        delays.append(answer.sender.time.timestamp() - ended)
    return delays


def hook_times(n, lines: int = 100, runs: int = 10) -> list[float]:
    text = "".join(f"{i:040x} forum-post {i:014x}\n" for i in range(lines))
    times = []
    for _ in range(runs):
        began = time.monotonic()
        subprocess.run(["/opt/ocx/venv/bin/python", "-m", "ocx.cli.launch", "hook", n.config.repository],
                       input=text, text=True, check=True)
        times.append(time.monotonic() - began)
    return times


def main(name: str, count: int = 100) -> None:
    n = node(name)
    print(f"hook given {100} lines, start to exit: {quantiles(hook_times(n))}")
    print(f"end of a unit to its response in the repository: {quantiles(ends_to_responses(n, 20))}")
    first = burst(n, count)
    # The unit starts when systemd begins its job (InactiveExit); its program once ExecStartPre made the home.
    print(f"burst of {count}: receipt to unit start (InactiveExitTimestamp): {quantiles(starts(n, first, 'InactiveExitTimestamp'))}")
    print(f"burst of {count}: receipt to program start (ExecMainStartTimestamp): {quantiles(starts(n, first))}")
    node_idle(name, 120)
    print(f"with {count} runs open and nothing arriving, the node service is idle: one process, "
          f"{node_resident(name)}; no OCX process per run")
    second = burst(n, count)
    memory = []
    for _ in range(20):
        memory.append(node_memory(name))
        time.sleep(0.2)
    starts(n, second)
    print(f"node service memory while starting runs {count + 1}..{2 * count}: {', '.join(sorted(set(memory)))}")
    running = systemctl("list-units", "ocx-*", "--no-legend", "--state=active").count(".service")
    print(f"units active at once: {running}")
    for record in first + second:
        n.stop(record)


if __name__ == "__main__":
    main(sys.argv[1], *(int(a) for a in sys.argv[2:]))


def node_fossil_runs(since: float) -> str:
    """The `fossil` runs the node's service made since SINCE, each in a scope of its own (systemd/scopes.py),
    by subcommand (the scope's description names it; older trees named only the pid), from PID 1's lines."""
    out = subprocess.run(["journalctl", "_PID=1", "-o", "cat", "--no-pager", f"--since=@{since:.6f}"],
                         capture_output=True, text=True).stdout
    found: dict[str, int] = {}
    for line in out.splitlines():
        if not (line.startswith("Started ") and ".scope - " in line and "-fossil: fossil " in line):
            continue
        said = line.split("-fossil: fossil ", 1)[1].rstrip(".")
        what = said.rsplit(" (", 1)[0] if said.endswith(")") else "(not named)"
        found[what] = found.get(what, 0) + 1
    named = ", ".join(f"{what} {n}" for what, n in sorted(found.items(), key=lambda item: -item[1]))
    return f"{sum(found.values())} ({named})"
