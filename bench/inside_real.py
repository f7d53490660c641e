"""The node benchmark inside the systemd container, on a real repository's history.

    python bench/inside_real.py NAME PORT HISTORY [RECORDS]

HISTORY is click.fossil with years of forum posts and verdicts on top
(bench/history.py, beside it HISTORY.admin-password). The node adopts a
copy (`ocx node init --repository`), and this prints, asserting nothing:
its first pass; the readers on that history; one record on a quiet node
from its receipt to its program's start, and a command record's check-in
run the same; the hook; a unit's end to its response; deliveries; a CI
queue; a burst of RECORDS session records; 2 x RECORDS runs at once and the
node's memory; and last, a pass with the node's mark lost (D2) over all
of it. "Program start" is what a person waits for: the program's own first
line in its unit's journal (and systemd's ExecMainStartTimestamp, when
the unit's main process started).
"""
import json
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import cgroup_cpu  # noqa: E402
import figures  # noqa: E402
import inside  # noqa: E402
import inside_ci  # noqa: E402
import inside_deliveries  # noqa: E402
from inside_wait import mirror_done  # noqa: E402
from inside import quantiles, receipt_time, timestamp  # noqa: E402
from tests.node_system.harness import PYTHON, ocx, systemctl, wait_for  # noqa: E402

REPOSITORY_ROOT = Path("/var/lib/ocx-fossil")


def journal(unit: str, since: float | None = None) -> list[dict]:
    argv = ["journalctl", "-u", unit, "-o", "json", "--no-pager"] + ([f"--since=@{since:.6f}"] if since else [])
    out = subprocess.run(argv, capture_output=True, text=True).stdout
    return [json.loads(line) for line in out.splitlines() if line.strip()]


def first_line(unit: str, starts: str) -> float | None:
    """When the program itself first printed (its line in the unit's journal)."""
    for entry in journal(unit):
        message = entry.get("MESSAGE")
        if isinstance(message, str) and message.startswith(starts):
            return int(entry["__REALTIME_TIMESTAMP"]) / 1e6
    return None


node_idle = inside.node_idle  # no pass running and nothing pending (the service stays up, serve.py)


def pass_lines(name: str, since: float) -> list[str]:
    return [e["MESSAGE"] for e in journal(f"ocx-node@{name}.service", since)
            if isinstance(e.get("MESSAGE"), str) and e["MESSAGE"].startswith("pass ")]


def timed_first_pass(name: str, since: float, timeout: float) -> str:
    """The node service's first pass after SINCE: its own line, and from the
    service's start (its imports included) to that line."""
    lines = wait_for(lambda: pass_lines(name, since), timeout, 0.5, "the node's first pass")
    entries = [e for e in journal(f"ocx-node@{name}.service", since)
               if isinstance(e.get("MESSAGE"), str) and e["MESSAGE"].startswith("pass ")]
    done = int(entries[0]["__REALTIME_TIMESTAMP"]) / 1e6
    began = inside.timestamp(f"ocx-node@{name}.service", "ExecMainStartTimestamp")
    # From the service's start only if it started for this (it stays up once started: serve.py).
    from_start = f", {done - began:.2f} s from the service's start" if began and since <= began <= done else ""
    return f"{lines[0]}{from_start}"


def adopt(name: str, port: str, history: Path) -> None:
    from ocx.setup.account import ensure

    server, _ = ensure("fossil", str(REPOSITORY_ROOT))
    copy = REPOSITORY_ROOT / f"{name}.fossil"
    shutil.copyfile(history, copy)  # never the file itself (shared/data/README.md)
    shutil.chown(copy, server.name, server.name)
    Path("/etc/ocx").mkdir(exist_ok=True)
    secret = Path(f"/etc/ocx/{name}.admin-password")
    secret.write_text(history.with_name(history.name + ".admin-password").read_text())
    secret.chmod(0o600)
    began = time.time()
    ocx("node", "init", "--name", name, "--repository", str(copy), "--port", port, timeout=600)
    print(f"adopted {history.name} ({copy.stat().st_size / 2**20:.0f} MB) with `ocx node init --repository` "
          f"in {time.time() - began:.1f} s")
    first = timed_first_pass(name, began, 3600)
    figures.note("first_pass", first)
    print(f"the node's first pass on it (mark absent, D2): {first}", flush=True)
    # Idle, the node pulls its clone for runs; a clone of 28 MB made meanwhile can fail on the server's
    # write lock (Fossil 2.21 holds it for each request of a sync: docs/node.md). Let it finish first.
    node_idle(name, 900)
    print(f"the node service idle after its first pass: {inside.node_resident(name)}", flush=True)
    mirror_done(name)  # the mirror's first export of it all takes a core: kept out of the figures


def readers(n, runs: int = 5) -> None:
    with n.repository() as repository:
        newest = repository.branch_checkins("main")[-1]
    for key, argv in (("queue", ["queue", "main"]), ("verdicts", ["verdicts", newest[:12]]), ("activity", ["activity"])):
        times = []
        for _ in range(runs):
            began = time.monotonic()
            done = subprocess.run([PYTHON, "-m", "ocx.cli.launch", *argv], capture_output=True, text=True)
            times.append(time.monotonic() - began)
        first = (done.stdout.splitlines() or [done.stderr.strip()[-200:]])[0]
        figures.note(key, f"median {statistics.median(times) * 1000:.0f} ms, max {max(times) * 1000:.0f} ms")
        print(f"`ocx {' '.join(argv)}`: median {statistics.median(times) * 1000:.0f} ms, max {max(times) * 1000:.0f} ms"
              f" (n={runs}; exit {done.returncode}; {first[:90]})", flush=True)


STEPS = ("receipt to the node service's start (path unit, fork)", "its start to its pass (Python, imports)",
         "the pass to the run's unit start", "unit start to its preparation's first line (the door, its fork)",
         "that line to its preparation done (the steps)", "preparation done to ExecMainStart",
         "ExecMainStart to the program's first line (feeder, program)")
STEPS_UP = ("receipt to the pass's start (the service up: its inotify or a poke)", *STEPS[2:])


def steps_of(name: str, unit: str, received: float, line: float) -> tuple[tuple[str, ...], list[float]] | None:
    """Where a quiet record's time goes, from the journals and systemd's timestamps: STEPS when
    the record started the node service, STEPS_UP when the service was up (it stays up, serve.py)."""
    def at(entry: dict) -> float:
        return int(entry["__REALTIME_TIMESTAMP"]) / 1e6

    node = [e for e in journal(f"ocx-node@{name}.service", received - 0.001) if isinstance(e.get("MESSAGE"), str)]
    started = next((at(e) for e in node if e["MESSAGE"].startswith("Started ")), None)
    passes = [e for e in node if e["MESSAGE"].startswith("pass ") and " 0 actions" not in e["MESSAGE"]]
    preparing, prepared = first_line(unit, "prepare: "), first_line(unit, "prepare: done in ")
    unit_start, main_start = timestamp(unit, "InactiveExitTimestamp"), timestamp(unit, "ExecMainStartTimestamp")
    if None in (preparing, prepared, unit_start, main_start) or not passes:
        return None
    passed = passes[0]  # the pass that acted: it started the run's unit
    pass_began = at(passed) - float(passed["MESSAGE"].rsplit(" in ", 1)[1].split()[0])
    if started is not None and started <= pass_began:
        steps, marks = STEPS, [received, started, pass_began, unit_start, preparing, prepared, main_start, line]
    else:
        steps, marks = STEPS_UP, [received, pass_began, unit_start, preparing, prepared, main_start, line]
    return steps, [b - a for a, b in zip(marks, marks[1:])]


def quiet_sessions(n, name: str, count: int = 9) -> None:
    """One record at a time, each on a quiet node: its service idle (up, since it stays up: serve.py)."""
    unit_starts, main_starts, lines, broken_down = [], [], [], []
    for _ in range(count):
        node_idle(name)
        record = n.post(n.record(objective="exit 0", budget={"wall": "5m"}))
        unit = n.unit(record)
        line = wait_for(lambda: first_line(unit, "delivery "), 120, 0.05, "the program's first line")
        received = receipt_time(n, record)
        lines.append(line - received)
        main_starts.append((timestamp(unit, "ExecMainStartTimestamp") or line) - received)
        unit_starts.append((timestamp(unit, "InactiveExitTimestamp") or line) - received)
        broken_down.append(steps_of(name, unit, received, line))
        steps = [e["MESSAGE"] for e in journal(unit) if str(e.get("MESSAGE", "")).startswith("prepare:")]
        n.response(record, timeout=120)
    figures.note("quiet_unit", quantiles(unit_starts))
    figures.note("quiet_start", quantiles(main_starts))
    figures.note("quiet_line", quantiles(lines))
    print(f"one record on a quiet node, receipt to: unit start {quantiles(unit_starts)}; "
          f"ExecMainStart {quantiles(main_starts)}; the program's first line {quantiles(lines)}")
    for named in (STEPS_UP, STEPS):
        seen = [b for kind, b in filter(None, broken_down) if kind == named]
        if seen:
            how = "the node service up" if named is STEPS_UP else "the record started the node service"
            print(f"  where it goes ({how}: median of {len(seen)} of {count}): "
                  + "; ".join(f"{what} {statistics.median(b[i] for b in seen) * 1000:.0f} ms"
                              for i, what in enumerate(named)))
    said = [f"{int(e['__REALTIME_TIMESTAMP']) / 1e6 - received:+.3f} s {e['MESSAGE'][:140]}"
            for e in journal(f"ocx-node@{name}.service", received - 0.5)
            if isinstance(e.get("MESSAGE"), str) and int(e["__REALTIME_TIMESTAMP"]) / 1e6 <= line]
    print("  the node's journal from the last one's receipt to its first line:\n    " + "\n    ".join(said))
    print(f"  the node service, idle again: {inside.node_resident(name)}")
    print("  the last one's preparation, as its unit's journal shows it: " + ("; ".join(steps) or "(no step lines)"),
          flush=True)


def quiet_checkins(n, name: str, count: int = 5) -> None:
    """A command record's run of one check-in pushed on a quiet node."""
    import secrets

    branch = f"quiet-{secrets.token_hex(2)}"
    user = f"ci-{secrets.token_hex(3)}"
    record = n.post(n.record(runner="command", command=["python3", "-c", "print('ran')"], user=user,
                             objective="bench", checkins=[branch], hears=[], budget={"wall": "1m"}))
    records = n.config.state_dir / "records" / record
    wait_for(lambda: (records / "record.json").exists(), 120, 0.2, "the record open")
    developer = n.login(f"quiet-{secrets.token_hex(2)}", "gio")
    clone = n.clone_of(developer)
    checkout = clone.open_checkout(n.home / f"quiet-checkout-{branch}")
    main_starts, lines = [], []
    for i in range(count):
        (checkout / "quiet.txt").write_text(str(i))
        checkin = clone.commit(checkout, f"quiet {i}", branch=branch if i == 0 else None, push=False)
        node_idle(name)
        clone.push()
        unit = f"ocx-{n.server_code[:12]}-{record[:12]}-{checkin[:12]}.service"
        line = wait_for(lambda: first_line(unit, "ran"), 120, 0.05, "the check-in run's output")
        received = receipt_time(n, checkin)
        lines.append(line - received)
        main_starts.append((timestamp(unit, "ExecMainStartTimestamp") or line) - received)
        wait_for(lambda: (records / f"verdict-{unit.removesuffix('.service')}.json").exists(), 120, 0.2, "its verdict")
    figures.note("command_start", quantiles(main_starts))
    print(f"a command record's check-in pushed on a quiet node, receipt to: ExecMainStart {quantiles(main_starts)}; "
          f"the program's first line {quantiles(lines)}", flush=True)
    said = [f"{int(e['__REALTIME_TIMESTAMP']) / 1e6 - received:+.3f} s {e['MESSAGE'][:140]}"
            for e in journal(f"ocx-node@{name}.service", received - 0.5)
            if isinstance(e.get("MESSAGE"), str) and int(e["__REALTIME_TIMESTAMP"]) / 1e6 <= line]
    print("  the node's journal from the last one's receipt to its first line:\n    " + "\n    ".join(said))
    steps = [e["MESSAGE"] for e in journal(unit) if str(e.get("MESSAGE", "")).startswith("prepare:")]
    print("  the last one's preparation, as its unit's journal shows it: " + ("; ".join(steps) or "(no step lines)"),
          flush=True)
    n.stop(record)


def post_all(n, count: int) -> list[str]:
    """COUNT records through the web form, as fast as the server takes them. A
    post the server refused for longer than the web client waits (HTTP 400,
    "database is locked": a preparation held the repository's write lock) is
    sent again, and counted: that is the server's limit, not a lost record."""
    from ocx.fossil.web import WebError

    began, records, refused = time.monotonic(), [], 0
    while len(records) < count:
        try:
            records.append(n.post(n.record(objective="sleep 1200", budget={"wall": "30m"})))
        except WebError:
            refused += 1
    print(f"posted {count} records in {time.monotonic() - began:.1f} s through the web form"
          f"{f'; {refused} refused by the server as locked and posted again' if refused else ''}", flush=True)
    return records


def homes_ahead(n, name: str, count: int) -> None:
    """The node told to keep COUNT runs' homes made ahead (its `spare_homes`, node/spare.py), as a
    node expecting bursts of COUNT is set up; a record makes it read its configuration again, and
    idle, it makes them one at a time. Waited for: a burst on a node just started finds none."""
    from ocx.node.spare import pool
    from ocx.node.template import template_path

    path = Path(f"/etc/ocx/{name}.json")
    path.write_text(json.dumps({**json.loads(path.read_text()), "spare_homes": count}) + "\n")
    began = time.monotonic()
    n.barrier()
    node_idle(name, 1800)
    made = len(pool(template_path(n.config)))
    figures.note("spares", f"{made} homes made ahead (spare_homes {count}) in {time.monotonic() - began:.0f} s")
    print(f"the node made {made} runs' homes ahead (spare_homes {count}), idle, in "
          f"{time.monotonic() - began:.0f} s", flush=True)


def burst(n, count: int, name: str) -> list[str]:
    homes_ahead(n, name, count)
    before, by_group, began = inside.cpu_seconds(name), cgroup_cpu.snapshot(), time.monotonic()
    first = post_all(n, count)
    unit_starts, main_starts = inside.starts(n, first, "InactiveExitTimestamp"), inside.starts(n, first)
    spent = inside.cpu_spent(before, inside.cpu_seconds(name, tuple(n.unit(r) for r in first)), count)
    by_group = cgroup_cpu.spent(by_group, cgroup_cpu.snapshot(), count)
    figures.note("burst_cpu", spent)
    print(f"burst of {count}: CPU used from the first post to the last program's start "
          f"({time.monotonic() - began:.1f} s): {spent}", flush=True)
    print(f"burst of {count}: the same CPU by cgroup, a run: {by_group}", flush=True)
    parts = inside.run_parts([n.unit(r) for r in first])
    figures.note("burst_parts", parts)
    print(f"burst of {count}: a run's own CPU, part by part: {parts}", flush=True)
    received = [receipt_time(n, r) for r in first]  # posted one after another: the order received
    order = inside.out_of_order([start + at for start, at in zip(main_starts, received, strict=True)])
    figures.note("burst_order", order)
    print(f"burst of {count}: programs started out of order: {order}", flush=True)
    lines = [wait_for(lambda r=r: first_line(n.unit(r), "delivery "), 600, 0.5, "a first line") - receipt_time(n, r)
             for r in first]
    passes = [e["MESSAGE"] for e in journal(f"ocx-node@{name}.service", receipt_time(n, first[0]) - 0.5)
              if isinstance(e.get("MESSAGE"), str) and e["MESSAGE"].startswith(("pass ", "runs' clone pulled"))]
    acting = [m for m in passes if m.startswith("pass ") and " 0 actions" not in m]
    every = [m for m in passes if m.startswith("pass ")]
    seconds = sum(float(m.rsplit(" in ", 1)[1].split()[0]) for m in every)
    print(f"burst of {count}: the node's passes from its first post to its last program's first line: "
          f"{len(every)}, {seconds:.1f} s in all", flush=True)
    print(f"burst of {count}: the node's passes that acted while it came ({len(acting)}): "
          + "; ".join(m.split(": ", 1)[1] for m in acting[:40]))
    pulls = [m for m in passes if m.startswith("runs' clone pulled")]
    print(f"burst of {count}: the runs' clone pulled {len(pulls)} times: " + "; ".join(m.rsplit(" in ", 1)[1] for m in pulls[:40]),
          flush=True)
    print(f"burst of {count}: the node's fossil runs: {inside.node_fossil_runs(receipt_time(n, first[0]) - 0.5)}",
          flush=True)
    middle = sorted(zip(main_starts, first))[len(first) // 2][1]
    steps = [e["MESSAGE"].removeprefix("prepare: ") for e in journal(n.unit(middle))
             if str(e.get("MESSAGE", "")).startswith("prepare:")]
    print(f"burst of {count}: the median run's preparation, as its unit's journal shows it: " + "; ".join(steps),
          flush=True)
    for key, what, values in (("burst_unit", "unit start (InactiveExitTimestamp)", unit_starts),
                              ("burst_start", "program start (ExecMainStartTimestamp)", main_starts),
                              ("burst_line", "the program's first line", lines)):
        figures.note(key, f"{count} records: {quantiles(values)}")
        print(f"burst of {count}: receipt to {what}: {quantiles(values)}", flush=True)
    return first


def memory(n, name: str, count: int, first: list[str]) -> None:
    node_idle(name, 120)
    print(f"with {count} runs open and nothing arriving, the node service is idle: one process, "
          f"{inside.node_resident(name)}; no OCX process per run")
    second = post_all(n, count)
    seen = []
    for _ in range(20):
        seen.append(inside.node_memory(name))
        time.sleep(0.2)
    inside.starts(n, second)
    print(f"node service memory while starting runs {count + 1}..{2 * count}: {', '.join(sorted(set(seen)))}")
    figures.note("memory", f"runs {count + 1}..{2 * count}: {', '.join(sorted(set(seen)))}")
    running = systemctl("list-units", "ocx-*", "--no-legend", "--state=active").count(".service")
    figures.note("units", f"{running} of {2 * count}")
    print(f"units active at once: {running}", flush=True)
    for record in first + second:
        n.stop(record)


def mark_lost(n, name: str) -> None:
    """D2: the mark lost, the next pass reads every receipt again and acts on nothing old."""
    def answers() -> int:  # the node user's posts, by SQL: the same on every version of OCX
        import sqlite3
        db = sqlite3.connect(f"file:{n.config.repository}?mode=ro", uri=True)
        try:
            return db.execute("SELECT count(*) FROM forumpost f JOIN blob b ON b.rid=f.fpid JOIN rcvfrom r"
                              " ON r.rcvid=b.rcvid JOIN user u ON u.uid=r.uid WHERE u.login=?",
                              (n.config.node_user,)).fetchone()[0]
        finally:
            db.close()
    node_idle(name, 900)
    before = answers()
    (n.config.state_dir / "mark.json").unlink(missing_ok=True)
    began = time.time()
    ocx("node", "poke", name)
    line = timed_first_pass(name, began, 3600)
    node_idle(name, 900)
    # A pass that admits or queues anything hands the rest to the next at once (intake.py): all of them.
    passes = [m.split(": ", 1)[1] for m in pass_lines(name, began)]
    receipts = sum(int(m.split(" receipts")[0]) for m in passes)
    seconds = sum(float(m.rsplit(" in ", 1)[1].split()[0]) for m in passes)
    line += f"; until idle, {len(passes)} passes read {receipts} receipts in {seconds:.2f} s"
    after = answers()
    figures.note("mark_lost", f"{line}; the node user's posts {before} before, {after} after")
    print(f"a pass with the mark lost (D2), over all of the above: {line}; "
          f"node user's posts before {before}, after {after}", flush=True)


EMPTY = "empty"  # HISTORY for a node on a new repository (bench/run.py's `empty` part)
PARTS = ("readers", "quiet", "hook", "ends", "deliveries", "ci", "burst", "lost")


def main(name: str, port: str, history: str, count: str = "100", parts: str = ",".join(PARTS)) -> None:
    """PARTS (comma-separated, all by default) chooses what runs after the adoption."""
    from tests.node_system.drive import node

    count, chosen = int(count), set(parts.split(","))
    if history == EMPTY:  # a new repository: the run's own costs, without the history's
        ocx("node", "init", "--name", name, "--port", port, timeout=600)
        node_idle(name, 900)
    else:
        adopt(name, port, Path(history))
    n = node(name)
    n.runner_page(n.admin)
    if "readers" in chosen:
        readers(n)
    if "quiet" in chosen:
        quiet_sessions(n, name)
        quiet_checkins(n, name)
    if "hook" in chosen:
        hook = quantiles(inside.hook_times(n))
        figures.note("hook", hook)
        print(f"hook given 100 lines, start to exit: {hook}")
    if "ends" in chosen:
        ends = quantiles(inside.ends_to_responses(n, 20))
        figures.note("ends", ends)
        print(f"end of a unit to its response in the repository: {ends}", flush=True)
    if "deliveries" in chosen:
        figures.note("deliveries", inside_deliveries.main(name, "200"))
    if "ci" in chosen:
        figures.note("ci_gap", inside_ci.main(name, "50"))
    if "burst" in chosen:
        first = burst(n, count, name)
        memory(n, name, count, first)
    if "lost" in chosen:
        mark_lost(n, name)
        readers(n)
    print("\nevery figure, before the speed work and now (bench/figures.py):\n" + figures.table(), flush=True)


if __name__ == "__main__":
    main(*sys.argv[1:])
