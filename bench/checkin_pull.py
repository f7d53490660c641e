"""What one new check-in costs the runs' clone to pull: `python bench/checkin_pull.py [ROUNDS]`.

A command record's check-in waits, before its run can start, for the node's clone for runs
(node/template.py) to hold that check-in. This measures that pull alone, on the host's Debian `fossil`,
against a real `fossil server` of a copy of the bench's history (the cached click.fossil with 20,000
posts bench/history.py made, else click.fossil itself). Each round commits one new file to the served
repository, then pulls it three ways, each into a clone of its own as the last round left it:

- in place: `refresh_template`, as the node does since 2026-12-07 (copies are taken under SQLite's
  shared lock, fossil/shared_lock.py);
- into a copy renamed into place, as the node did before: the clone copied beside itself, pulled
  there, renamed over it (Fossil's commit then waits for the disk to take the whole new file);
- in place with nothing new: the floor of one round trip.

It prints each way's wall time and CPU: the pull's processes (this process's reaped children) and
the server's request handlers (the `fossil server`'s reaped children, read a second and a half after
each pull, once it has reaped them). It asserts nothing.
"""
from __future__ import annotations

import os
import resource
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ocx.fossil import admin  # noqa: E402
from ocx.fossil.copies import make_template, refresh_template  # noqa: E402
from ocx.fossil.program import run_fossil, run_fossil_with_password, serve  # noqa: E402
from ocx.fossil.sync import login_url  # noqa: E402

CACHE = Path("/var/cache/ocx-bench")
CLICK = ROOT.parent / "shared" / "data" / "click.fossil"
WAYS = ("in place", "into a copy renamed into place", "in place, nothing new")
LOGIN = "node-bench"


def history() -> Path:
    cached = sorted(CACHE.glob("click-history-*.fossil"), key=lambda path: path.stat().st_mtime)
    return cached[-1] if cached else CLICK


def children_cpu_ms() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (usage.ru_utime + usage.ru_stime) * 1000


def server_cpu_ms(pid: int) -> float:
    """The server's reaped children's CPU (its request handlers): /proc/PID/stat's cutime and cstime."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[13]) + int(fields[14])) * 1000 / os.sysconf("SC_CLK_TCK")


def renamed_into_place(path: Path, base_url: str, password: str, *, home: Path) -> None:
    """The node's pull before 2026-12-07: into a copy beside PATH, renamed over it."""
    partial = path.with_name(f".{path.name}.{os.getpid()}.new")
    shutil.copyfile(path, partial)
    run_fossil_with_password(["pull", login_url(base_url, LOGIN), "-R", str(partial)], password, home=home,
                             remember=False, user=LOGIN)
    os.replace(partial, path)


def main(rounds: int = 7) -> None:
    source = history()
    with tempfile.TemporaryDirectory(prefix="ocx-pull-") as scratch:
        work = Path(scratch)
        home = work / "home"
        served = work / "served.fossil"
        shutil.copyfile(source, served)
        password = admin.create_user(served, LOGIN, "oi", "bench", home=home)
        server = serve(served, home=home)
        try:
            template = work / "runs.fossil"
            began = time.monotonic()
            make_template(template, server.base_url, LOGIN, password, home=home)
            refresh_template(template, server.base_url, LOGIN, password, home=home)  # its first pull's own work
            print(f"{source.name}: {served.stat().st_size / 1e6:.1f} MB; the runs' clone made in "
                  f"{time.monotonic() - began:.1f} s")
            clones = {way: work / f"way-{index}.fossil" for index, way in enumerate(WAYS)}
            for clone in clones.values():
                shutil.copyfile(template, clone)
            os.sync()  # each clone written out, as the node's long-standing one is
            checkout = work / "checkout"
            checkout.mkdir()
            run_fossil(["open", str(served)], home=home, cwd=checkout, user=LOGIN)
            figures: dict[str, list[tuple[float, float, float]]] = {way: [] for way in WAYS}
            for n in range(rounds):
                (checkout / f"bench-{n}.txt").write_text(f"round {n}\n")
                run_fossil(["add", f"bench-{n}.txt"], home=home, cwd=checkout, user=LOGIN)
                run_fossil(["commit", "-m", f"bench round {n}", "--no-warnings"], home=home, cwd=checkout, user=LOGIN)
                for way, clone in clones.items():
                    if way.endswith("nothing new"):
                        refresh_template(clone, server.base_url, LOGIN, password, home=home)
                    time.sleep(1.5)
                    ours, theirs, start = children_cpu_ms(), server_cpu_ms(server.process.pid), time.monotonic()
                    if way.startswith("into a copy"):
                        renamed_into_place(clone, server.base_url, password, home=home)
                    else:
                        refresh_template(clone, server.base_url, LOGIN, password, home=home)
                    wall = (time.monotonic() - start) * 1000
                    ours = children_cpu_ms() - ours
                    time.sleep(1.5)
                    figures[way].append((wall, ours, server_cpu_ms(server.process.pid) - theirs))
            print(f"one new check-in pulled into the runs' clone, medians of {rounds} "
                  f"(load average {os.getloadavg()[0]:.2f}):")
            for way, rows in figures.items():
                wall, ours, theirs = (statistics.median(column) for column in zip(*rows, strict=True))
                print(f"  {way}: {wall:.0f} ms wall; CPU {ours:.0f} ms the pull's processes, "
                      f"{theirs:.0f} ms the server's")
        finally:
            server.stop()


if __name__ == "__main__":
    main(*(int(arg) for arg in sys.argv[1:]))
