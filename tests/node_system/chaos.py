"""Records of every kind under faults, inside the systemd container (C4; docs/node.md, 'Faults').

    python chaos.py init NAME PORT
    python chaos.py plan NAME SEED RECORDS SECONDS SERVER_RESTARTS
    python chaos.py run NAME         # resumable: goes on where it was cut off
    python chaos.py progress NAME    # how many records it posted
    python chaos.py settle NAME      # one JSON report

`run` posts records through the web as the admin (quick exits, wall budgets
of 5-20 s, sleepers stopped later, malformed ones, command records with
check-ins) while it SIGKILLs the node's service every 0.5-2 s and restarts
the Fossil server a few times. Everything it does is planned from SEED, and
its progress is kept in a file, so a run cut off by a restart of the whole
container goes on where it was when started again. `settle` stops what is
still open, waits for the answers and reads them from the repository with
their senders (chaos_report.py). The test and the benchmark drive it from
the host (chaos_host.py), which restarts the container once.
"""
from __future__ import annotations

import json
import random
import secrets
import subprocess
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from ocx.fossil.fossil_failure import FossilError  # noqa: E402
from ocx.fossil.sync import CallerClone  # noqa: E402
from tests.node_system.chaos_report import report  # noqa: E402
from tests.node_system.drive import node as node_named  # noqa: E402
from tests.node_system.harness import ocx, systemctl  # noqa: E402

STATE = Path("/var/lib/ocx-chaos")
KINDS = ("quick", "wall", "sleeper", "malformed", "command")
WEIGHTS = (25, 20, 20, 15, 20)
RETRY_SECONDS = 120.0  # a write through a server that restarts meanwhile
DEVELOPER = "chaosdev"


def state_file(name: str) -> Path:
    return STATE / f"{name}.json"


def load(name: str) -> dict:
    return json.loads(state_file(name).read_text())


def save(name: str, state: dict) -> None:
    path = state_file(name)
    temporary = path.with_suffix(".tmp")
    temporary.write_text(json.dumps(state))
    temporary.replace(path)


def plan(seed: int, records: int, seconds: float, server_restarts: int) -> dict:
    """The whole run, from SEED: what is written when, and when each fault comes."""
    rng = random.Random(seed)
    work, faults = [], []
    for index in range(records):
        at = seconds * 0.8 * (index + rng.random()) / records  # posts end before the faults do
        kind = rng.choices(KINDS, WEIGHTS)[0]
        spec = {"index": index, "kind": kind}
        if kind == "quick":
            spec["exit"] = rng.choice([0, 0, 3])
        elif kind == "wall":
            spec["wall"] = rng.randint(5, 20)
        elif kind == "sleeper":
            work.append({"at": at + rng.uniform(2, 12), "do": "stop", "index": index})
        elif kind == "command":
            spec["branch"] = f"chaos-{seed}-{index}"
            count = rng.randint(1, 2)
            for n in range(count):
                work.append({"at": at + 2 + 3 * n, "do": "checkin", "index": index, "n": n})
            # stopped once its check-ins had time to run and be judged on a busy host
            work.append({"at": at + 4 + 3 * count + rng.uniform(15, 25), "do": "stop", "index": index})
        work.append({"at": at, "do": "post", "index": index, "spec": spec})
    t = rng.uniform(0.5, 2.0)
    while t < seconds:
        faults.append({"at": t, "do": "kill"})
        t += rng.uniform(0.5, 2.0)
    for _ in range(server_restarts):
        faults.append({"at": rng.uniform(0.1, 0.9) * seconds, "do": "restart-server"})
    for n, event in enumerate(sorted(work, key=lambda e: e["at"])):
        event["id"] = f"w{n}"
    for n, event in enumerate(sorted(faults, key=lambda e: e["at"])):
        event["id"] = f"f{n}"
    return {"seed": seed, "records": records, "seconds": seconds,
            "work": sorted(work, key=lambda e: e["at"]), "faults": sorted(faults, key=lambda e: e["at"]),
            "done": [], "hashes": {}, "checkins": {}, "stops": [], "kills": 0, "server_restarts": 0,
            "last_fault": 0.0, "reached": 0.0, "starts_before": 0, "phases": 0}


def retrying(what: str, action):
    deadline = time.monotonic() + RETRY_SECONDS
    while True:
        try:
            return action()
        except Exception as error:  # the server restarting: the write is tried again
            if time.monotonic() > deadline:
                raise AssertionError(f"{what}: still failing after {RETRY_SECONDS:.0f} s: {error}") from error
            time.sleep(0.5)


def record_fields(node, spec: dict) -> dict:
    kind, user = spec["kind"], f"cx{spec['index']:03d}-{secrets.token_hex(3)}"
    if kind == "quick":
        return node.record(objective=f"exit {spec['exit']}", user=user, budget={"wall": "2m"})
    if kind == "wall":
        return node.record(objective="sleep 600", user=user, budget={"wall": f"{spec['wall']}s"})
    if kind == "sleeper":
        return node.record(objective="sleep", user=user, budget={"wall": "30m"})
    if kind == "malformed":
        return node.record(objective="exit 0", user=user, budget={"wall": "2 hours"})
    return node.record(runner="command", command=["sh", "-c", "echo all checks passed"], user=user,
                       objective="CI passes", checkins=[spec["branch"]], hears=[], budget={"wall": "1m"})


class Driver:
    def __init__(self, name: str):
        self.name = name
        self.node = driven(name)
        self.state = load(name)
        self.lock = threading.Lock()
        self.base = time.monotonic() - self.state["reached"]
        self.developer = None

    def now(self) -> float:
        return time.monotonic() - self.base

    def done(self, event: dict, **changes) -> None:
        with self.lock:
            self.state["done"].append(event["id"])
            self.state["reached"] = max(self.state["reached"], event["at"])
            for key, value in changes.items():
                self.state[key] = value
            self.state["node_starts"] = node_starts(self.name)
            save(self.name, self.state)

    def pending(self, events: list[dict]) -> list[dict]:
        return [e for e in events if e["id"] not in self.state["done"]]

    def wait_until(self, at: float) -> None:
        delay = at - self.now()
        if delay > 0:
            time.sleep(delay)

    # -- faults ---------------------------------------------------------------
    def faults(self) -> None:
        for event in self.pending(self.state["faults"]):
            self.wait_until(event["at"])
            if event["do"] == "kill":
                systemctl("kill", "--signal=KILL", f"ocx-node@{self.name}.service")
                self.done(event, kills=self.state["kills"] + 1, last_fault=time.time())
            else:
                systemctl("restart", f"ocx-fossil@{self.name}.service")
                self.done(event, server_restarts=self.state["server_restarts"] + 1, last_fault=time.time())

    # -- work -----------------------------------------------------------------
    def work(self) -> None:
        for event in self.pending(self.state["work"]):
            self.wait_until(event["at"])
            index = str(event["index"])
            if event["do"] == "post":
                fields = record_fields(self.node, event["spec"])
                posted = retrying(f"record {index}", lambda: self.node.post(fields, title=f"chaos {index}"))
                self.done(event, hashes={**self.state["hashes"], index: posted})
            elif index not in self.state["hashes"]:
                self.done(event)  # its record was never posted
            elif event["do"] == "checkin":
                checkin = self.checkin(event)
                self.done(event, checkins={**self.state["checkins"], f"{index}/{event['n']}": checkin})
            else:
                record = self.state["hashes"][index]
                retrying(f"stop {index}", lambda: self.node.stop(record))
                self.done(event, stops=[*self.state["stops"], record])

    def checkin(self, event: dict) -> str:
        spec = next(e["spec"] for e in self.state["work"] if e["do"] == "post" and e["index"] == event["index"])
        if self.developer is None:
            path = self.node.home / f"{DEVELOPER}.fossil"
            if not path.exists():
                password = json.loads((STATE / f"{self.name}-developer.json").read_text())["password"]
                retrying("the developer's clone", lambda: CallerClone.create(
                    path, self.node.url, DEVELOPER, password, home=self.node.home))
            self.developer = CallerClone(path, DEVELOPER, self.node.home)
        checkout = STATE / f"{self.name}-checkouts" / spec["branch"]
        if not (checkout / ".fslckout").exists():
            self.developer.open_checkout(checkout)
        (checkout / "note.txt").write_text(secrets.token_hex(8))
        message = f"chaos {event['index']}/{event['n']}"
        try:
            checkin = self.developer.commit(checkout, message, branch=spec["branch"] if event["n"] == 0 else None,
                                            push=False)
        except FossilError as error:
            # The driver was cut off after its first commit made the branch (its checkout is on it now):
            # done again, that commit goes on the branch without making it.
            if "already exists" not in str(error):
                raise
            checkin = self.developer.commit(checkout, message, branch=None, push=False)
        retrying(f"push of {checkin[:12]}", self.developer.push)
        return checkin

    def run(self) -> None:
        with self.lock:
            self.state["phases"] += 1
            self.state["starts_before"] = self.state.get("node_starts", 0) if self.state["phases"] > 1 else 0
            save(self.name, self.state)
        faults = threading.Thread(target=self.faults, daemon=True)
        faults.start()
        self.work()
        faults.join()


def driven(name: str):
    """The node, with a home for the driver's clones that outlives a restart (/tmp does not)."""
    node = node_named(name)
    node.home = STATE / f"{name}-home"
    node.home.mkdir(parents=True, exist_ok=True)
    return node


def node_starts(name: str) -> int:
    """How often systemd started the node's service in this boot."""
    out = subprocess.run(["journalctl", "-b", "-u", f"ocx-node@{name}.service", "-o", "cat", "--no-pager"],
                         capture_output=True, text=True).stdout
    return sum(1 for line in out.splitlines() if line.startswith("Started "))


def main(step: str, name: str, *args: str) -> None:
    STATE.mkdir(parents=True, exist_ok=True)
    if step == "init":
        ocx("node", "init", "--name", name, "--port", args[0])
        node = driven(name)
        node.runner_page(node.admin)
        developer = node.login(DEVELOPER, "gio")
        (STATE / f"{name}-developer.json").write_text(json.dumps({"password": developer.password}))
    elif step == "plan":
        save(name, plan(int(args[0]), int(args[1]), float(args[2]), int(args[3])))
    elif step == "progress":
        state = load(name)
        print(json.dumps({"posted": len(state["hashes"]), "records": state["records"]}))
    elif step == "run":
        Driver(name).run()
        print(json.dumps({"done": len(load(name)["done"])}))
    elif step == "settle":
        print(json.dumps(report(driven(name), load(name), node_starts(name))))


if __name__ == "__main__":
    main(*sys.argv[1:])
