"""The end of a chaos run (chaos.py): what is still open is stopped, then
every record's answers are read from the repository with their senders.

Nothing here trusts the driver's own memory of what it posted: a post whose
reply was lost while the server restarted may be in the repository twice,
and both are records to answer. A record's kind is read from its fields.
"""
from __future__ import annotations

import json
import subprocess
import time
from collections import Counter, defaultdict

from ocx.protocol.finder import find_message

from .harness import node_idle, systemctl, wait_for

# What each kind of record may be answered (C4): `lost` where the container's
# restart (or a fault that outlasted its wall) cut its session off.
ALLOWED = {"quick": {"exited", "lost"}, "wall": {"budget", "lost"}, "sleeper": {"stopped", "lost"},
           "malformed": {"refused"}, "command": {"stopped"}}
LATE_SECONDS = 30.0  # the figure: within the record's wall plus this, after the last fault
SETTLE_SLACK = 120.0  # how much longer than the figure the test waits before it calls a record unanswered
QUIET_SECONDS = 20.0


def kind_of(record: dict) -> str:
    wall = str(record.get("budget", {}).get("wall", ""))
    if record.get("runner") == "command":
        return "command"
    if not (wall[:-1].isdigit() and wall[-1:] in "smhd"):
        return "malformed"
    objective = record.get("objective", "")
    return "quick" if objective.startswith("exit") else "wall" if objective == "sleep 600" else "sleeper"


def wall_seconds(record: dict) -> float:
    wall = str(record.get("budget", {}).get("wall", ""))
    if not (wall[:-1].isdigit() and wall[-1:] in "smhd"):
        return 0.0
    return float(wall[:-1]) * {"s": 1, "m": 60, "h": 3600, "d": 86400}[wall[-1]]


def scan(node) -> list[dict]:
    """Every record for this node from the admin, with its stops and responses."""
    code, admin = node.server_code, node.admin.name
    with node.repository() as repository:
        posts = repository.forum_posts()
    messages = []
    for post in posts:
        if post.edit_of is None and not post.pending_moderation:
            message = find_message(post.body)
            if message and message.get("node") == code:
                messages.append((post, message))
    records = {post.hash: {"hash": post.hash, "record": message, "kind": kind_of(message), "user": message.get("user"),
                           "received": post.sender.time.timestamp(), "responses": [], "stops": []}
               for post, message in messages if message.get("kind") == "record" and post.sender.login == admin}
    for post, message in messages:
        target = records.get(message.get("answers") or message.get("stops") or "")
        if target is None:
            continue
        if message.get("kind") == "response":
            target["responses"].append({"outcome": message.get("outcome"), "note": message.get("note"),
                                        "sender": post.sender.login, "at": post.sender.time.timestamp()})
        elif message.get("kind") == "stop":
            target["stops"].append(post.sender.time.timestamp())
    return sorted(records.values(), key=lambda r: r["received"])


def stop_what_is_open(node) -> int:
    """Sleepers and command records still open get their stop (the driver's
    own may have been cut off by the container's restart)."""
    stopped = 0
    for found in scan(node):
        if found["kind"] in ("sleeper", "command") and not found["responses"] and not found["stops"]:
            node.stop(found["hash"])
            stopped += 1
    return stopped


def refused_as_a_twin(found: dict, found_all: list[dict]) -> bool:
    """A post the driver sent again while the server restarted is a second record with the same
    run user: refused naming the user and its twin's open record (D40), as it should be."""
    answer = found["responses"][0]
    twins = [other["hash"] for other in found_all
             if other is not found and other["user"] == found["user"] and other["received"] <= found["received"]]
    return (answer["outcome"] == "refused" and str(answer["note"]).startswith("user:")
            and any(twin[:12] in str(answer["note"]) for twin in twins))


def bound(found: dict, last_fault: float) -> float:
    """When the issue's figure wants its answer: its wall plus 30 s after the
    later of its receipt and the last fault; a stopped one, 30 s after its stop."""
    if found["kind"] in ("sleeper", "command") and found["stops"]:
        return max(min(found["stops"]), last_fault) + LATE_SECONDS
    return max(found["received"], last_fault) + wall_seconds(found["record"]) + LATE_SECONDS


def run_units(node) -> list[str]:
    out = systemctl("list-units", "--all", "--no-legend", "--plain", f"ocx-{node.server_code[:12]}-*")
    return [line for line in out.splitlines() if line.strip()]


def journal_lines(unit: str) -> list[str]:
    return subprocess.run(["journalctl", "-b", "-u", unit, "-o", "cat", "--no-pager"],
                          capture_output=True, text=True).stdout.splitlines()


def journal_since(since: float, unit: str) -> list[str]:
    return subprocess.run(["journalctl", "--since", f"@{since:.3f}", "-u", unit, "-o", "cat", "--no-pager"],
                          capture_output=True, text=True).stdout.splitlines()


def node_messages(node) -> list[str]:
    """Every line the node's service or its check logged, in every boot."""
    out = subprocess.run(["journalctl", "-u", f"ocx-node@{node.name}.service", "-u",
                          f"ocx-check@{node.name}.service", "-o", "json", "--no-pager"],
                         capture_output=True, text=True).stdout
    messages = []
    for line in out.splitlines():
        message = json.loads(line).get("MESSAGE") or ""
        if isinstance(message, list):  # the journal gives bytes as a list of numbers
            message = bytes(message).decode(errors="replace")
        messages.extend(part for part in message.splitlines() if part.strip())
    return messages


def state_errors(node) -> list[str]:
    """Each line naming a change the states table refused (states.StateError): a bug of the node's own,
    never a fault or a run's doing, whichever step caught and logged it."""
    return [text for text in node_messages(node) if "StateError" in text]


def tracebacks(node) -> list[str]:
    """The first and last line of each traceback the node's service or its check logged, in every boot."""
    messages = node_messages(node)
    found, within = [], None  # a traceback is one entry (logged) or one entry a line (a crash's stderr)
    for text in messages:
        if "Traceback (most recent call last)" in text:
            within = text
        elif within is not None and not text.startswith((" ", "\t")):
            found.append(f"{within} ... {text}")
            within = None
    return found


def hook_caught_up(node) -> bool:
    with node.repository() as repository:
        return int(repository.config("hook-last-rcvid") or 0) >= repository.max_rcvid()


def quiet_starts(node) -> list[str]:
    """OCX's processes started, and the node's passes, over QUIET_SECONDS with nothing arriving
    (D26: quiet when idle)."""
    def idle() -> bool:
        return node_idle(node.name)
    for _ in range(10):  # the hook's last run (its backoffice's lease) may wake the node once more
        try:
            wait_for(lambda: hook_caught_up(node), 120, 0.5, "Fossil's hook to catch up")
            wait_for(idle, 120, 0.5, "the node's service to go idle")
        except AssertionError as never:
            return [str(never)]
        settling = time.time()
        time.sleep(3)
        if idle() and hook_caught_up(node) and not journal_since(settling, f"ocx-node@{node.name}.service"):
            break
    since = time.time()
    time.sleep(QUIET_SECONDS)  # an absence is measured over an interval
    out = subprocess.run(["journalctl", "-b", "--since", f"@{since:.0f}", "-o", "short-precise", "--no-pager",
                          "-u", f"ocx-node@{node.name}.service", "-u", f"ocx-wake@{node.name}.service",
                          "-u", f"ocx-fossil@{node.name}.service"], capture_output=True, text=True).stdout
    return [line for line in out.splitlines() if " Started " in line or "ocx hook" in line or ": pass " in line]


def report(node, state: dict, starts_now: int) -> dict:
    stopped_now = stop_what_is_open(node)
    last_fault = float(state.get("last_fault") or 0.0)

    def settled() -> bool:
        return all(found["responses"] for found in scan(node))
    found_all = scan(node)
    deadline = max([bound(f, last_fault) for f in found_all] or [time.time()]) + SETTLE_SLACK
    while not settled() and time.time() < deadline:
        time.sleep(0.5)
    found_all = scan(node)
    try:
        wait_for(lambda: not run_units(node), 120, 0.5, "every run unit gone")
    except AssertionError:
        pass
    node_user = node.config.node_user
    unanswered, doubles, wrong, foreign, late = [], [], [], [], []
    outcomes = defaultdict(Counter)
    lateness = []
    for found in found_all:
        answers = found["responses"]
        short = f"{found['hash'][:12]} ({found['kind']})"
        if not answers:
            unanswered.append(short)
            continue
        if len(answers) > 1:
            doubles.append(short + ": " + ", ".join(a["outcome"] for a in answers))
        if any(a["sender"] != node_user for a in answers):
            foreign.append(short)
        outcome = answers[0]["outcome"]
        outcomes[found["kind"]][outcome] += 1
        if outcome not in ALLOWED[found["kind"]] and not refused_as_a_twin(found, found_all):
            wrong.append(f"{short}: {outcome}: {answers[0]['note']}")
        over = answers[0]["at"] - bound(found, last_fault)
        lateness.append(over + LATE_SECONDS)
        if over > 0:
            late.append(f"{short}: {over:.1f} s late")
    with node.repository() as repository:
        users = {u.login: u.capabilities for u in repository.users()}
        verdicts = Counter()
        for key, checkin in state.get("checkins", {}).items():
            tags = [t for t in repository.tag_history(checkin, ["ci"]) if t.op == "+"]
            verdicts[len([t for t in tags if t.sender.login == node_user])] += 1
    holding = sorted(f["user"] for f in found_all if users.get(f["user"]))
    return {
        "seed": state.get("seed"), "records": len(found_all), "answered": len(found_all) - len(unanswered),
        "unanswered": unanswered, "doubles": doubles, "foreign_answers": foreign, "wrong_outcomes": wrong,
        "late": late, "max_after_bound_s": round(max(lateness, default=0.0) - LATE_SECONDS, 1),
        "outcomes": {kind: dict(counts) for kind, counts in outcomes.items()},
        "run_users_holding_capabilities": holding, "run_units_left": run_units(node),
        "checkins_by_verdicts": {str(k): v for k, v in verdicts.items()},
        "kills": state.get("kills", 0), "server_restarts": state.get("server_restarts", 0),
        "node_starts": state.get("starts_before", 0) + starts_now, "stopped_at_settle": stopped_now,
        "check": {prop: systemctl("show", f"ocx-check@{node.name}.service", "-p", prop, "--value").strip()
                  for prop in ("Result", "ActiveState")},
        "tracebacks": tracebacks(node), "state_errors": state_errors(node),
        "quiet_starts": quiet_starts(node),
    }
