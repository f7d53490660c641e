"""`push` from inside a hostile run (C6, D22, D41), on a real
node: a `no_password` run restricted to one branch tries, from its own
clone, to push an amend moving an admin's check-in, a tag, a wiki page, a
hand-made forum post in another thread, a check-in on trunk hidden between
check-ins on its branch, another run's clone through a link, and a FIFO.
The node's repository shows none of it, the good check-in lands as the run
user, and the node answers both records after. In the systemd container."""
import hashlib
import json
import secrets

import pytest

from ocx.fossil.repository import Repository
from ocx.node.run_layout import unit_stem
from ocx.protocol import Outcome
from ocx.systemd import cgroup

from .harness import PYTHON, journal, systemctl, wait_for

pytestmark = pytest.mark.systemd

RUNNER = "hostilepush"
PROGRAM = __file__.replace("test_push_hostile.py", "hostile_push.py")


def lines(node, record: str, prefix: str) -> list[str]:
    return [line[len(prefix):] for line in journal(node.unit(record)).splitlines() if line.startswith(prefix)]


def waited(node, record: str, prefix: str, enough: int = 1, timeout: float = 180) -> list[str]:
    try:
        return wait_for(lambda: len(lines(node, record, prefix)) >= enough and lines(node, record, prefix),
                        timeout, 0.5, f"{enough} line(s) {prefix!r}")
    except AssertionError as error:
        raise AssertionError(f"{error}\n--- {node.unit(record)} ---\n{journal(node.unit(record))[-5000:]}\n--- tools "
                             f"---\n{journal(f'ocx-tools@{node.name}.service')[-2000:]}") from None


def test_a_hostile_run_pushes_nothing_but_its_check_in(node):
    page = {"command": [PYTHON, PROGRAM], "homes": [], "env": {}}
    node.clone_of(node.admin).write_wiki(f"sandbox/{RUNNER}", f"```json\n{json.dumps(page)}\n```\n")
    admin_clone = node.clone_of(node.admin)
    checkout = admin_clone.open_checkout(node.home / f"admin-checkout-{secrets.token_hex(3)}")
    (checkout / "victim.txt").write_text("an admin's work\n")
    victim = admin_clone.commit(checkout, "the admin's check-in on trunk")
    thread = node.admin.web(node.url).new_thread("Elsewhere", "A thread no run was given.")
    branch = f"fixes-{secrets.token_hex(3)}"
    restrict = {"no_password": True, "branch": branch}

    other = node.post(node.record(runner=RUNNER, objective=f"hold {branch}", restrict=restrict,
                                  budget={"wall": "10m"}))
    (held,) = waited(node, other, "held ")
    run_user = f"hostile-{secrets.token_hex(3)}"
    stem = unit_stem(node.server_code, other)
    hostile = node.post(node.record(runner=RUNNER, user=run_user, restrict=restrict, budget={"wall": "10m"},
                                    objective=f"hostile {branch} {thread} {victim} {stem}"))
    waited(node, hostile, "done")
    pushes = [json.loads(text) for text in lines(node, hostile, "tool push ")]
    (good,), (post,) = lines(node, hostile, "good "), lines(node, hostile, "post ")
    (stray,), (after,) = lines(node, hostile, "stray "), lines(node, hostile, "after ")
    assert len(pushes) == 4, pushes

    first, hidden, linked, fifo = pushes
    assert first["stopped"] is None and first["result"] == good, first
    left_out = " ".join(step["text"] for step in first["log"])
    assert all(kind in left_out for kind in ("a tag change", "a wiki page", "a forum post")), left_out
    assert hidden["stopped"]["field"] == "branch" and stray in hidden["stopped"]["why"], hidden
    assert linked["stopped"]["field"] == "caller" and "link" in linked["stopped"]["why"], linked
    assert fifo["stopped"]["field"] == "caller" and "not a regular file" in fifo["stopped"]["why"], fifo

    with node.repository() as served:
        landed = served.checkin(good)
        assert (landed.branch, landed.sender.login) == (branch, run_user)  # as the run user (D21)
        assert served.checkin(victim).branch == "trunk"  # the amend stayed in the run's clone
        assert not served.tag_history(victim, ["release"]) and not served.wiki_versions("hostile-page")
        assert post not in {p.hash for p in served.thread(thread)}
        assert served.holding([post, stray, after, held]) == set()  # none of it, nor the other run's check-in
    for record in (other, hostile):  # the node still answers
        node.stop(record)
        assert node.response(record, timeout=90).outcome is Outcome.stopped


def test_a_run_without_network_that_holds_its_password_pushes_through_its_socket(node):
    """D34: it cannot reach the server, so its tool socket copies its check-ins, as its user."""
    page = {"command": [PYTHON, PROGRAM], "homes": [], "env": {}}
    node.clone_of(node.admin).write_wiki(f"sandbox/{RUNNER}", f"```json\n{json.dumps(page)}\n```\n")
    branch, run_user = f"offline-{secrets.token_hex(3)}", f"offline-{secrets.token_hex(3)}"
    record = node.post(node.record(runner=RUNNER, user=run_user, objective=f"offline {branch}",
                                   sandbox={"network": False, "read_only": [], "read_write": []}, budget={"wall": "10m"}))
    (held,) = waited(node, record, "held ")
    (pushed,) = [json.loads(text) for text in waited(node, record, "tool push ")]
    assert pushed["stopped"] is None and pushed["result"] == held, pushed
    with node.repository() as served:
        landed = served.checkin(held)
        assert (landed.branch, landed.sender.login) == (branch, run_user)
    node.stop(record)
    assert node.response(record, timeout=90).outcome is Outcome.stopped


@pytest.mark.parametrize("how", ["stall", "stall-digits"])
def test_a_blob_fossil_never_crosslinks_holds_back_no_later_record(node, how):
    """A run that holds its password sends, by sync, a blob Fossil stores and never crosslinks: a `D`
    and a `Z` card, or (`stall-digits`) a new thread shaped exactly as the forum form writes one but
    dated in Arabic-Indic digits, which `strptime` reads and Fossil does not (D41: digits are 0-9).
    The node once took each for a post still being crosslinked and held every later receipt for
    SETTLE_SECONDS (a minute). Now only a post shaped and dated as Fossil's form writes one is held
    (manifest.is_form_post): a record sent after it starts, and the node never waited on the blob."""
    page = {"command": [PYTHON, PROGRAM], "homes": [], "env": {}}
    node.clone_of(node.admin).write_wiki(f"sandbox/{RUNNER}", f"```json\n{json.dumps(page)}\n```\n")
    with node.repository() as served:
        project_code = served.project_code
    staller = node.post(node.record(runner=RUNNER, objective=f"{how} {node.config.url} {project_code}",
                                    budget={"wall": "10m"}))
    (blob,) = waited(node, staller, "stalled ")
    later = node.post(node.record(runner=RUNNER, objective=f"hold later-{secrets.token_hex(3)}",
                                  budget={"wall": "10m"}))
    waited(node, later, "held ")
    for record in (staller, later):
        node.stop(record)
        assert node.response(record, timeout=90).outcome is Outcome.stopped
    with node.repository() as served:
        assert served.event_type(blob) is None  # stored, and never crosslinked
    waits = [line for line in journal(f"ocx-node@{node.name}.service").splitlines() if blob in line]
    assert waits == [], waits


def node_memory(node) -> tuple[str, int, int]:
    """The node service's main pid, and its cgroup's memory now and at most since reset (v1 here:
    `memory.usage_in_bytes`, `memory.max_usage_in_bytes`; its fossil children's scopes are not in it)."""
    shown = dict(line.split("=", 1) for line in systemctl(
        "show", f"ocx-node@{node.name}.service", "-p", "MainPID", "-p", "ControlGroup").splitlines() if "=" in line)
    usage = cgroup.usage(shown["ControlGroup"])
    return shown["MainPID"], usage.memory or 0, usage.memory_peak or 0


def pushed_zeros(node, mib: int) -> tuple[str, str, int]:
    """A run commits and pushes MIB MiB of zeros on a branch of its own, then a next record starts and
    both are answered; (the check-in, the file's hash, the node service's memory at most meanwhile)."""
    page = {"command": [PYTHON, PROGRAM], "homes": [], "env": {}}
    node.clone_of(node.admin).write_wiki(f"sandbox/{RUNNER}", f"```json\n{json.dumps(page)}\n```\n")
    node.barrier()  # the node's service up, idle
    pid, _, _ = node_memory(node)
    group = dict(line.split("=", 1) for line in systemctl(
        "show", f"ocx-node@{node.name}.service", "-p", "ControlGroup").splitlines() if "=" in line)["ControlGroup"]
    with open(f"/sys/fs/cgroup/memory{group}/memory.max_usage_in_bytes", "w") as reset:
        reset.write("0")
    branch = f"bulk-{secrets.token_hex(3)}"
    bulk = node.post(node.record(runner=RUNNER, objective=f"bulk {branch} {mib}", budget={"wall": "10m"}))
    (checkin,) = waited(node, bulk, "bulk ", timeout=300)
    later = node.post(node.record(runner=RUNNER, objective=f"hold later-{secrets.token_hex(3)}",
                                  budget={"wall": "10m"}))
    waited(node, later, "held ")  # the next record started, from a runs' clone pulled past the push
    for record in (bulk, later):
        node.stop(record)
        assert node.response(record, timeout=90).outcome is Outcome.stopped
    after_pid, now, peak = node_memory(node)
    pulls = [line for line in journal(f"ocx-node@{node.name}.service").splitlines() if "runs' clone pulled" in line]
    print(f"{mib} MiB pushed; node service: {now / 2**20:.1f} MiB now, {peak / 2**20:.1f} MiB at most; {pulls[-1:]}")
    assert after_pid == pid  # the same process throughout: its peak is this push's
    with node.repository() as served:
        assert served.checkin(checkin).branch == branch
    return checkin, hashlib.sha3_256(bytes(mib * 1024 * 1024)).hexdigest(), peak


def test_a_small_push_of_a_large_file_neither_grows_the_node_nor_stalls_it(node):
    """D41, docs/security.md, 'Class 9': a run pushes 200 MiB of zeros (200 KB on the wire). Before, the node's service
    grew from 34 to 435 MiB while its fossil child pulled it into the runs' clone, which took 10.8 s.
    Now the node shuns it on receipt (oversized.py) and the pull never carries it: the node's cgroup
    stays small, and the next record starts and is answered."""
    checkin, blob, peak = pushed_zeros(node, 200)
    assert peak < 150 * 2**20, peak
    assert systemctl("show", f"ocx-node@{node.name}.service", "-p", "MemoryMax").strip() == f"MemoryMax={2**30}"
    with node.repository() as served:
        assert served.shunned(blob)
    logged = journal(f"ocx-node@{node.name}.service")
    assert f"shunned {blob}" in logged, logged[-3000:]
    with Repository(node.config.state_dir / "runs.fossil") as runs_clone:
        assert runs_clone.holding([checkin, blob]) == {checkin}  # pulled past it, never holding it


def test_a_file_under_the_cap_is_pulled_by_a_fossil_outside_the_nodes_cgroup(node):
    """60 MiB of zeros, under the cap: not shunned, and pulled into the runs' clone by a `fossil` that
    takes over 100 MiB doing it, in a scope of its own (serve.py): none of it is the node's."""
    checkin, blob, peak = pushed_zeros(node, 60)
    assert peak < 80 * 2**20, peak
    with node.repository() as served:
        assert not served.shunned(blob)
    with Repository(node.config.state_dir / "runs.fossil") as runs_clone:
        assert runs_clone.holding([checkin, blob]) == {checkin, blob}


def test_a_phantom_filled_after_later_receipts_is_still_past_the_cap(node):
    """docs/security.md, 'Class 9', and docs/fossil.md (receipt_floor.py): a pass reads receipts above the
    largest rid it saw while no phantom waited, since Fossil gives an old row a new receipt only when it
    fills a phantom. So a run makes one: it sends only its check-in's manifest, and Fossil keeps the
    65 MiB file it names as a phantom. A later record is received and started meanwhile (the node reads
    past the phantom's rid), then the run pushes the file into the phantom's old row. The node still
    finds it past the cap and shuns it; the runs' clone never holds it."""
    page = {"command": [PYTHON, PROGRAM], "homes": [], "env": {}}
    node.clone_of(node.admin).write_wiki(f"sandbox/{RUNNER}", f"```json\n{json.dumps(page)}\n```\n")
    with node.repository() as served:
        project_code = served.project_code
    branch = f"phantom-{secrets.token_hex(3)}"
    maker = node.post(node.record(runner=RUNNER, objective=f"phantom {branch} 65 {node.config.url} {project_code}",
                                  budget={"wall": "10m"}))
    ((checkin, file),) = [line.split() for line in waited(node, maker, "phantom ", timeout=300)]
    with node.repository() as served:
        assert served.holding([checkin, file]) == {checkin}  # the file a phantom: named, not held
    later = node.post(node.record(runner=RUNNER, objective=f"hold later-{secrets.token_hex(3)}",
                                  budget={"wall": "10m"}))
    waited(node, later, "held ")  # received after the manifest, so every receipt before it was read
    node.reply(maker, "fill")
    waited(node, maker, "filled ", timeout=300)

    def shunned() -> bool:
        with node.repository() as served:
            return served.shunned(file)
    wait_for(shunned, 120, 0.5, "the filled phantom shunned")
    logged = journal(f"ocx-node@{node.name}.service")
    assert f"shunned {file}" in logged, logged[-3000:]
    for record in (maker, later):
        node.stop(record)
        assert node.response(record, timeout=90).outcome is Outcome.stopped
    with Repository(node.config.state_dir / "runs.fossil") as runs_clone:
        assert file not in runs_clone.holding([checkin, file])
