"""The releases' benchmark, inside the systemd container (bench/releases.py starts it there).

A node set up by `ocx node init`, on the node's own releases' root (the container is the
benchmark's alone): the stages, the accept to an answer on the new release, and records posted
while an accept runs, counted per record. Prints figures, asserts nothing.
"""
import os
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ocx.node.host_paths import RELEASES_DIRECTORY as ROOT  # noqa: E402
from ocx.node.releases.source_wheel import source_wheel  # noqa: E402
from tests.container.systemd_container import WHEELHOUSE_INSIDE  # noqa: E402
from tests.node_system.drive import node  # noqa: E402
from tests.node_system.harness import ocx, wait_for  # noqa: E402

NAME, PORT = "relbench", 8597
BUILD_SECONDS = 900


def release(*args: str) -> tuple[float, str]:
    """`ocx release ARGS` as root: its seconds and what it printed."""
    began = time.monotonic()
    done = ocx("release", *args, timeout=BUILD_SECONDS)
    return time.monotonic() - began, done.stdout


def staged_as(said: str) -> str:
    return said.strip().splitlines()[-1].removeprefix("next: ")


def current_wheel() -> str:
    return str(next(Path(f"{ROOT}/current/wheels").glob("ocx-*.whl")))


def show(unit: str, *props: str) -> dict[str, str]:
    out = subprocess.run(["systemctl", "show", unit, *(f"-p{p}" for p in props), "--timestamp=us+utc"],
                         capture_output=True, text=True).stdout
    return dict(line.split("=", 1) for line in out.splitlines() if "=" in line)


def utc(value: str) -> float | None:
    if not value or value == "n/a":
        return None
    return datetime.strptime(value, "%a %Y-%m-%d %H:%M:%S.%f UTC").replace(tzinfo=UTC).timestamp()


def answered_at(n, records: list[str], timeout: float = 300) -> dict[str, float]:
    """The wall time each record's first response was seen, all polled together every 20 ms."""
    seen: dict[str, float] = {}

    def all_seen() -> bool:
        for record in records:
            if record not in seen and n.responses(record):
                seen[record] = time.time()
        return len(seen) == len(records)
    wait_for(all_seen, timeout, 0.02, f"responses to {len(records)} records")
    return seen


def program_start(n, record: str) -> tuple[float, str] | None:
    """The run's unit's main start (systemd's clock) and the release its stop step names (D47),
    while its unit is there."""
    seen = show(n.unit(record), "ExecMainStartTimestamp", "ExecStopPost")
    at, stop = utc(seen.get("ExecMainStartTimestamp", "")), seen.get("ExecStopPost", "")
    if at is None or "path=" not in stop:
        return None
    return at, stop.split("path=", 1)[1].split(" ;", 1)[0].removeprefix(f"{ROOT}/").removesuffix("/bin/python")


def main_program(unit: str) -> str:
    pid = show(unit, "MainPID").get("MainPID", "0")
    return Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0].decode() if pid != "0" else "none"


def timeline(unit: str, began: float, until: float) -> None:
    """UNIT's journal (systemd's lines and its own) from BEGAN to UNTIL, each line's time after BEGAN."""
    said = subprocess.run(["journalctl", "-u", unit, "--since", f"@{began:.3f}", "--until", f"@{until + 0.5:.3f}",
                           "-o", "short-unix", "--no-pager"], capture_output=True, text=True).stdout
    print(f"  {unit}'s journal meanwhile (seconds after accept's start):")
    for line in said.splitlines()[:40]:
        stamp, _, text = line.partition(" ")
        try:
            print(f"    {float(stamp) - began:+.2f} {text[:140]}")
        except ValueError:
            continue


def main(records: int) -> None:
    ocx("node", "init", "--name", NAME, "--port", str(PORT))
    n = node(NAME)
    n.runner_page(n.admin)
    n.barrier()
    work = Path(tempfile.mkdtemp(prefix="relbench-"))
    wheel = source_wheel(Path("/src"), work)
    os.chmod(work, 0o755)

    took, said = release("stage", "--wheel", str(wheel), "--wheelhouse", WHEELHOUSE_INSIDE)
    print(f"stage of the working tree's wheel, with the image's wheelhouse: {took:.1f} s ({staged_as(said)})")
    took, _ = release("accept")
    print(f"first accept (root's copy made at stage, its digest, links, services restarted): {took:.1f} s")
    n.barrier()
    took, said = release("stage", "--wheel", current_wheel())
    new = staged_as(said)
    print(f"stage from the current release's own wheels (no wheelhouse): {took:.1f} s ({new})")

    # The accept, then at once a session record (exit 0) and one that runs a while (sleep 2).
    began = time.time()
    took, said = release("accept")
    moved = os.lstat(f"{ROOT}/current").st_mtime - began  # the link made new: root's copy taken, its digest checked
    quick = n.post(n.record(objective="exit 0"))
    slow = n.post(n.record(objective="sleep 2"))
    seen: dict[str, tuple[float, str]] = {}

    def both() -> bool:  # polled together, so neither waits on the other
        if "answer" not in seen and n.responses(quick):
            seen["answer"] = (time.time(), "")
        if "start" not in seen and (found := program_start(n, slow)):
            seen["start"] = found
        return len(seen) == 2
    wait_for(both, 300, 0.02, "the first response and the run's start")
    (answered, _), (started, on) = seen["answer"], seen["start"]
    answered_at(n, [slow])
    restarted = [line for line in said.splitlines() if line.startswith("restarted ")]
    print(f"accept to the node answering on the new release ({new}):")
    print(f"  `ocx release accept` itself: {took:.2f} s, its links moved after {moved:.2f} s (digest of root's copy), "
          f"then {'; '.join(restarted) or 'no service restarted'}")
    print(f"  accept's start to the first response of a session record posted right after: "
          f"{answered - began:.2f} s (goal <= 2 s)")
    print(f"  accept's start to a record's program start: {started - began:.2f} s, its run's release {on} "
          f"({'the new one' if on == new else 'NOT the new one'})")
    timeline(f"ocx-node@{n.name}.service", began, answered)
    for kind in ("node", "page", "tools"):  # what each used since its start, beside the first answer
        unit = f"ocx-{kind}@{n.name}.service"
        facts = show(unit, "CPUUsageNSec", "ExecMainStartTimestamp", "ActiveState")
        since = utc(facts.get("ExecMainStartTimestamp", ""))
        cpu = int(facts["CPUUsageNSec"]) / 1e6 if facts.get("CPUUsageNSec", "").isdigit() else float("nan")
        print(f"  {unit}: {facts.get('ActiveState')}, started "
              + (f"{since - began:+.2f} s" if since else "n/a") + f", CPU since {cpu:.0f} ms")

    posted = [(n.post(n.record(objective="exit 0")), time.time()) for _ in range(records)]
    first = answered_at(n, [record for record, _ in posted])
    waits = [first[record] - at for record, at in posted]
    print(f"for comparison, {records} records posted with no accept: post to response median "
          f"{statistics.median(waits):.2f} s, max {max(waits):.2f} s")

    took, said = release("stage", "--wheel", current_wheel())
    third = staged_as(said)
    print(f"stage from the current release's own wheels again: {took:.1f} s ({third})")
    accepting = subprocess.Popen([*ocx_argv(), "release", "accept"], stdout=subprocess.PIPE,
                                 stderr=subprocess.STDOUT, text=True)
    began = time.monotonic()
    posted = []
    during = 0
    for _ in range(records):
        posted.append((n.post(n.record(objective="exit 0")), time.time()))
        during += accepting.poll() is None
    out, _ = accepting.communicate(timeout=BUILD_SECONDS)
    accept_took = time.monotonic() - began
    first = answered_at(n, [record for record, _ in posted])
    waits = [first[record] - at for record, at in posted]
    n.barrier()  # every record before it read and acted on: a second response would be there now
    counts = [len(n.responses(record)) for record, _ in posted]
    print(f"{records} records posted while an accept ran ({accept_took:.1f} s, exit {accepting.returncode}; "
          f"{during} posted before it ended): answered {sum(c >= 1 for c in counts)}/{records}, "
          f"twice or more {sum(c > 1 for c in counts)}, responses per record {sorted(set(counts))}; "
          f"post to response median {statistics.median(waits):.2f} s, max {max(waits):.2f} s")
    runs = main_program(f"ocx-node@{NAME}.service")
    print(f"current: {os.readlink(f'{ROOT}/current')}; the node's service runs {runs}")
    print(out.strip())


def ocx_argv() -> list[str]:
    return ["/opt/ocx/venv/bin/python", "-m", "ocx.cli.launch"]


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 20)
