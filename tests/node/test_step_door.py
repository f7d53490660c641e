"""A run's steps through their door (run_steps/step_door.py) and the node's step service (step_server.py),
as real processes on real sockets: here the door and the service are both this test's children, in its
own cgroups, so the fork's join moves it nowhere; inside a run's unit it is tested in the systemd
container (tests/node_system/test_step_service.py)."""
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ocx.node.config import NodeConfig
from ocx.node.host_paths import STATE_ROOT, steps_socket_path
from ocx.node_service.run_units import python_module
from ocx.run_steps import step_door
from ocx.run_steps.step_server import READ_SECONDS

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the steps are root's: /run/ocx and /var/lib/ocx")


@pytest.fixture
def node(tmp_path):
    name = f"steps-test-{os.getpid()}"
    record = Path(STATE_ROOT) / name / "records" / ("a" * 64)
    record.mkdir(parents=True)
    (record / "starting-ocx-x-stem.json").write_text('{"unit": "ocx-x-stem.service"}\n')  # as the node marks it
    config = NodeConfig(name=name, repository=str(tmp_path / "r.fossil"), url="http://127.0.0.1:8080",
                        python=sys.executable)
    yield config, record
    import shutil

    shutil.rmtree(Path(STATE_ROOT) / name, ignore_errors=True)
    shutil.rmtree(Path(steps_socket_path(name)).parent, ignore_errors=True)


@pytest.fixture
def service(node):
    config, _ = node
    path = Path(steps_socket_path(config.name))
    path.parent.mkdir(parents=True, exist_ok=True)
    process = subprocess.Popen([sys.executable, "-I", "-m", "ocx.run_steps.step_server", config.name,
                                "--listen", str(path)], cwd=ROOT, stderr=subprocess.PIPE, text=True,
                               env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)})
    deadline = time.monotonic() + 60
    while not path.exists():
        assert process.poll() is None and time.monotonic() < deadline, "the step service did not listen"
        time.sleep(0.05)
    yield process
    process.terminate()
    process.wait(timeout=30)


def stop_step(config, record, env):
    """The unit's own stop step argv (the door first), run as systemd would, with its end's variables."""
    argv = python_module(config, "ocx.run_steps.stop_step", config.name, record.name, "ocx-x-stem", door=True)
    return subprocess.run(argv, cwd="/tmp", capture_output=True, text=True, timeout=120,
                          env={"PATH": "/usr/bin:/bin", **env})


END = {"SERVICE_RESULT": "exit-code", "EXIT_CODE": "exited", "EXIT_STATUS": "3", "INVOCATION_ID": "f" * 32}


def ended(record):
    return [json.loads(p.read_text()) for p in record.iterdir() if p.name == "ended-ocx-x-stem.json"]


def test_the_unit_argv_names_the_door_and_the_nodes_own_socket(node):
    config, _ = node
    argv = python_module(config, "ocx.run_steps.prepare", "--x", door=True)
    assert argv[:4] == [sys.executable, "-I", "-S", "-c"] and argv[5:] == ["ocx.run_steps.prepare", "--x"]
    assert "step_door" in argv[4] and repr(steps_socket_path(config.name)) in argv[4]
    assert "step_door" not in python_module(config, "ocx.inside_run.feeder")[4]  # the run's own: never


def test_without_the_service_the_step_runs_itself_once_with_the_environment_systemd_gave(node):
    config, record = node
    done = stop_step(config, record, END)
    assert done.returncode == 0, done.stderr
    assert "forked" not in done.stdout
    [mark] = ended(record)
    assert (mark["result"], mark["code"], mark["status"], mark["invocation"]) == ("exit-code", "exited", "3", "f" * 32)


def test_a_step_handed_to_the_service_runs_forked_once_with_the_doors_streams_and_environment(node, service):
    config, record = node
    done = stop_step(config, record, END)
    assert done.returncode == 0, done.stderr
    assert "stop_step: forked already loaded by the node's step service, in /" in done.stdout  # the door's stdout
    [mark] = ended(record)
    assert (mark["result"], mark["code"], mark["status"], mark["invocation"]) == ("exit-code", "exited", "3", "f" * 32)


def test_a_door_that_gives_up_before_its_go_has_nothing_run(node, service):
    config, record = node
    path = steps_socket_path(config.name)
    ready, after = _request(path, ["ocx.run_steps.stop_step", config.name, record.name, "ocx-x-stem"], b"X")
    assert (ready, after) == (b"R", b"")  # ready, then told no: the fork ended without running the step
    assert ended(record) == []
    service.terminate()
    assert "the door gave up before its go" in service.communicate(timeout=30)[1]


def _request(path, argv, go: bytes | None):
    """A door by hand: ARGV with this process's streams; GO sent once ready (None: closed before)."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as door:
        door.settimeout(READ_SECONDS + 20)
        door.connect(path)
        fds = b"".join(fd.to_bytes(4, sys.byteorder, signed=True) for fd in (0, 1, 2))
        door.sendmsg([step_door.request(argv, {"SERVICE_RESULT": "success"}, 1.0)],
                     [(socket.SOL_SOCKET, socket.SCM_RIGHTS, fds)])
        ready = door.recv(1)
        if ready and go is not None:
            door.sendall(go)
        return ready, door.recv(1)  # b"": the fork ended


def test_the_service_runs_no_module_but_a_runs_steps_and_serves_on(node, service):
    config, record = node
    path = steps_socket_path(config.name)
    assert _request(path, ["os", "x"], b"G") == (b"", b"")
    assert _request(path, ["ocx.run_steps.step_server", config.name], b"G") == (b"", b"")
    assert not step_door.handed(path, ["json.tool"])  # nor does the door hand one
    assert stop_step(config, record, END).returncode == 0 and len(ended(record)) == 1  # still serving


def _closed_unready(door):
    """The fork said nothing and closed: EOF, or a reset for what it left unread."""
    try:
        return door.recv(1) == b""
    except ConnectionResetError:
        return True


def test_a_request_with_no_streams_or_a_huge_block_is_refused(node, service):
    config, _ = node
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as door:
        door.settimeout(READ_SECONDS + 20)
        door.connect(steps_socket_path(config.name))
        door.sendall(step_door.request(["ocx.run_steps.stop_step", "a", "b", "c"], {}, 0.0))
        assert _closed_unready(door)
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as door:
        door.settimeout(READ_SECONDS + 20)
        door.connect(steps_socket_path(config.name))
        fds = b"".join(fd.to_bytes(4, sys.byteorder, signed=True) for fd in (0, 1, 2))
        door.sendmsg([(1 << 30).to_bytes(4, "big")], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, fds)])
        assert _closed_unready(door)
    service.terminate()
    err = service.communicate(timeout=30)[1]
    assert "0 descriptors" in err and "more than" in err


def test_the_socket_is_roots_alone(node, service):
    config, _ = node
    assert os.stat(steps_socket_path(config.name)).st_mode & 0o777 == 0o600
    child = os.fork()
    if child == 0:  # another local account: it may not ask root to run anything
        code = 1
        try:
            os.setgid(65534)
            os.setuid(65534)
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as door:
                door.connect(steps_socket_path(config.name))
        except PermissionError:
            code = 0
        finally:
            os._exit(code)
    assert os.waitpid(child, 0)[1] == 0
