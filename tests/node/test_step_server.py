"""The step service's reading of a door's request and its refusals (run_steps/step_server.py), in this
process over a socket pair: what a fork of it does before anything of a step runs. The whole way,
door to fork to step, is tests/node/test_step_door.py's and tests/node_system/test_step_service.py's."""
import math
import os
import socket
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ocx.run_steps import step_door, step_server
from ocx.systemd import cgroup
from ocx.systemd.activation import RequestUnreadable

STREAMS = (0, 1, 2)


def _pair():
    door, fork = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    fork.settimeout(10)
    return door, fork


def _send(door, payload: bytes, fds=STREAMS):
    data = b"".join(fd.to_bytes(4, sys.byteorder, signed=True) for fd in fds)
    door.sendmsg([payload], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, data)] if fds else [])


def _open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_a_whole_request_is_read_as_the_door_wrote_it():
    door, fork = _pair()
    with door, fork:
        _send(door, step_door.request(["ocx.run_steps.stop_step", "n", "r", "s"], {"A": "1", "B": "x=y"}, 12.5))
        argv, environ, cpu, fds = step_server.read_request(fork)
        try:
            assert argv == ["ocx.run_steps.stop_step", "n", "r", "s"] and environ == {"A": "1", "B": "x=y"}
            assert cpu == 12.5 and len(fds) == 3 and all(os.fstat(fd) for fd in fds)
        finally:
            for fd in fds:
                os.close(fd)


@pytest.mark.parametrize("shape", ["no streams", "two streams", "huge argv", "huge environment", "cut short"])
def test_a_request_not_whole_is_not_taken_and_keeps_no_descriptor(shape):
    whole = step_door.request(["ocx.run_steps.prepare"], {"A": "1"}, 1.0)
    payload, fds = {
        "no streams": (whole, ()),
        "two streams": (whole, (0, 1)),
        "huge argv": ((step_server.ARGV_MAX + 1).to_bytes(4, "big"), STREAMS),
        "huge environment": (step_door.block(b"ocx.run_steps.prepare")
                             + (step_server.ENV_MAX + 1).to_bytes(4, "big"), STREAMS),
        "cut short": (whole[:9], STREAMS),
    }[shape]
    door, fork = _pair()
    before = _open_fds()
    with door, fork:
        _send(door, payload, fds)
        door.shutdown(socket.SHUT_WR)
        with pytest.raises((step_server.NotTaken, RequestUnreadable)):  # either: the door runs the step
            step_server.read_request(fork)
    assert _open_fds() <= before


def test_a_module_that_is_no_step_is_said_not_taken_before_anything_runs():
    door, fork = _pair()
    with door, fork:
        _send(door, step_door.request(["os", "x"], {}, 0.0))
        assert step_server.run_step(fork) == step_server.NOT_TAKEN
        fork.close()  # as the fork's exit does
        door.settimeout(10)
        assert door.recv(1) == b""  # never said ready: the door runs the step itself
    assert os.environ.get("PATH")  # this process's own environment untouched


@given(st.text(max_size=40))
def test_the_doors_cpu_figure_is_a_finite_non_negative_number_or_none(text):
    value = step_server._milliseconds(text.encode("utf-8", "surrogatepass"))
    assert math.isfinite(value) and value >= 0


@pytest.mark.parametrize("said, taken", [(b"12.5", 12.5), (b"nan", 0.0), (b"inf", 0.0), (b"-3", 0.0),
                                         (b"\xff", 0.0), (b"", 0.0)])
def test_the_doors_cpu_figure_as_said(said, taken):
    assert step_server._milliseconds(said) == taken


def test_joining_the_cgroups_one_is_in_already_moves_nothing():
    """Here the door is this very process: every hierarchy's file takes its own pid again (root only)."""
    if os.geteuid() != 0:
        pytest.skip("cgroup.procs is root's to write")
    before = open("/proc/self/cgroup").read()
    try:
        cgroup.join(os.getpid())
    except OSError as why:  # no cgroup file system here: the fork then runs nothing
        pytest.skip(f"no cgroups here: {why}")
    assert open("/proc/self/cgroup").read() == before
    assert all(options == frozenset() or options for options, _point, _root in cgroup._hierarchies())


def test_the_listener_given_a_path_is_roots_alone(tmp_path):
    listener = step_server.listener_of(["--listen", str(tmp_path / "steps.sock")])
    with listener:
        assert os.stat(tmp_path / "steps.sock").st_mode & 0o777 == 0o600
    with pytest.raises(SystemExit):
        step_server.listener_of([])  # not started by systemd, and no path given


def test_the_fork_takes_the_doors_file_mode_mask():
    """A unit's UMask= is its privileged steps' too; the fork takes the door's from its /proc status."""
    ready, told = os.pipe()
    done, ending = os.pipe()
    child = os.fork()
    if child == 0:  # a door whose unit says UMask=0027, waiting to be read
        os.umask(0o027)
        os.write(told, b"x")
        os.read(done, 1)  # until the test ends it
        os._exit(0)
    try:
        assert os.read(ready, 1) == b"x"
        assert step_server._umask_of(child) == 0o027
        own = os.umask(0)
        os.umask(own)
        assert step_server._umask_of(os.getpid()) == own
    finally:
        os.kill(child, 9)
        os.waitpid(child, 0)
        for fd in (ready, told, done, ending):
            os.close(fd)
