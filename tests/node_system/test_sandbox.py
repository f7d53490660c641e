"""D16's sandbox and D15's environment, seen from inside a run (D19, D34)."""
import json
import os

import pytest

from ocx.node.run_layout import RunHome
from ocx.protocol import Outcome

from .harness import journal, systemctl, wait_for

pytestmark = pytest.mark.systemd


def probe(node, runner: str, **fields) -> dict:
    record = node.post(node.record(runner=runner, objective="probe", **fields))
    assert node.response(record).outcome is Outcome.exited
    line = next(l for l in journal(node.unit(record)).splitlines() if l.startswith("probe "))
    return json.loads(line.removeprefix("probe "))


@pytest.fixture(scope="module")
def paths(node):
    # World-writable on the host: only the sandbox stands between the run and them.
    for directory in ("/srv/probe-rw", "/srv/probe-ro"):
        os.makedirs(directory, exist_ok=True)
        os.chmod(directory, 0o777)
    # Another run's home, as it lies on the host while that run lives.
    other = node.post(node.record(objective="sleep 30"))
    wait_for(lambda: systemctl("is-active", node.unit(other)).strip() == "active", 30, what="the other run")
    named = {
        "other_workspace": f"/var/lib/private/ocx-runs/{node.unit(other).removesuffix('.service')}",
        "other_terminal": f"/run/ocx-runs/{node.unit(other).removesuffix('.service')}",  # D32: its socket's directory
        "node_repository": node.config.repository,
        "node_state": str(node.config.state_dir),
        "node_password": str(node.config.password_file),
        "read_write": "/srv/probe-rw",
        "read_only": "/srv/probe-ro",
    }
    assert os.path.isdir(named["other_terminal"])  # there on the host, so hidden means hidden
    env = {"PROBE_SERVER": node.url.removeprefix("http://"), "PROBE_PATHS": json.dumps(named)}
    node.runner_page(node.admin, env=env, name="proberun")
    yield env
    node.stop(other)


def test_the_sandbox_holds_from_inside(node, paths):
    seen = probe(node, "proberun", sandbox={"network": True, "read_only": ["/srv/probe-ro"], "read_write": ["/srv/probe-rw"]})
    seen.pop("environment")
    expected = {"home_writable": True, "tmp_writable": True, "usr_writable": False, "etc_writable": False,
                "rw writable": True, "ro visible": True, "ro writable": False,
                **{f"{hidden} visible": False for hidden in ("other_workspace", "other_terminal", "node_repository", "node_state", "node_password")}}
    found = {**{k: seen[k] for k in ("home_writable", "tmp_writable", "usr_writable", "etc_writable")},
             "rw writable": seen["writable"]["read_write"], "ro visible": seen["visible"]["read_only"],
             "ro writable": seen["writable"]["read_only"],
             **{f"{hidden} visible": seen["visible"][hidden] for hidden in ("other_workspace", "other_terminal", "node_repository", "node_state", "node_password")}}
    assert found == expected
    assert seen["reaches_server"] is True  # network: true reaches the node's server, as a clone must


def test_the_environment_is_exactly_d15s(node, paths):
    fields = node.record()
    seen = probe(node, "proberun", user=fields["user"])
    env = seen["environment"]
    assert set(env) == {"HOME", "USER", "PATH", "LANG", "PROBE_SERVER", "PROBE_PATHS"}, sorted(env)
    assert env["USER"] == fields["user"] and env["LANG"] == "C.UTF-8"
    # HOME is systemd's link to the run's state directory, where the program runs: compared by name, as
    # the link is removed with the workspace once the record is answered (node_service/cleanup.py).
    home = RunHome(os.path.basename(env["HOME"]))
    assert env["PATH"] == "/usr/local/bin:/usr/bin:/bin" and env["HOME"] == str(home.inside)
    assert seen["cwd"] in (str(home.on_host), str(home.inside)), (seen["cwd"], env["HOME"])


def test_network_false_has_no_route_out(node, paths):
    seen = probe(node, "proberun", sandbox={"network": False, "read_only": [], "read_write": []})
    assert seen["interfaces"] == ["lo"] and seen["reaches_server"] is False


def test_the_workspace_holds_a_clone_and_a_checkout_as_the_run_user(node, paths):
    record = node.post(node.record(objective="sleep 20"))
    unit = node.unit(record)
    wait_for(lambda: systemctl("is-active", unit).strip() == "active", 30, what="the run")
    home = f"/var/lib/private/ocx-runs/{unit.removesuffix('.service')}"
    assert os.path.exists(f"{home}/repo.fossil") and os.path.exists(f"{home}/checkout/.fslckout")
    uid = int(systemctl("show", unit, "-p", "UID", "--value").strip())
    assert os.stat(home).st_uid == uid != 0
    node.stop(record)
    node.response(record)
