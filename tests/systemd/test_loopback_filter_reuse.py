"""loopback_filter.ensure reads the host's resolvers and sockets at most once a
FRESH_SECONDS, and never hands out a pin that is gone (issue 15: a burst's
sessions each asked for it). The kernel's part (load, pin) is replaced here by
a set of names: what is tested is when the tables are read, not BPF."""

from __future__ import annotations

import os

import pytest

from ocx.systemd import bpf, loopback_filter
from ocx.systemd.loopback_filter import FRESH_SECONDS, ensure, server_allowances

URL = "http://127.0.0.1:8484/"


@pytest.fixture
def kernel(monkeypatch):
    """Pins as a set, the clock in the test's hands, and a count of reads of the host's tables."""
    state = {"now": 1000.0, "reads": 0, "pins": set(), "loads": 0}

    def allowances(url: str, resolv_conf: str = "/etc/resolv.conf"):
        state["reads"] += 1
        return server_allowances(url)

    def load(code: bytes, name: str, *_a, **_k) -> int:
        state["loads"] += 1
        return os.open(os.devnull, os.O_RDONLY)

    monkeypatch.setattr(loopback_filter, "allowances", allowances)
    monkeypatch.setattr(loopback_filter.time, "monotonic", lambda: state["now"])
    monkeypatch.setattr(bpf, "mount_bpffs", lambda *_a: None)
    monkeypatch.setattr(bpf, "pinned", lambda path: path in state["pins"])
    monkeypatch.setattr(bpf, "load", load)
    monkeypatch.setattr(bpf, "pin", lambda fd, path: state["pins"].add(path))
    monkeypatch.setattr(loopback_filter, "_ENSURED", {})
    return state


def test_a_burst_within_a_moment_reads_the_host_once_and_gets_one_pin(kernel):
    paths = {ensure("n", URL) for _ in range(50)}
    assert len(paths) == 1 and paths <= kernel["pins"]
    assert kernel["reads"] == 1 and kernel["loads"] == 1


def test_after_the_moment_the_host_is_read_again(kernel):
    first = ensure("n", URL)
    kernel["now"] += FRESH_SECONDS + 0.01
    assert ensure("n", URL) == first
    assert kernel["reads"] == 2
    assert kernel["loads"] == 1  # the same allowances: the same program, pinned already


def test_a_pin_gone_within_the_moment_is_made_again_not_handed_out(kernel):
    first = ensure("n", URL)
    kernel["pins"].clear()  # removed meanwhile (a node's restart, an operator)
    kernel["now"] += FRESH_SECONDS / 10
    assert ensure("n", URL) == first and first in kernel["pins"]
    assert kernel["reads"] == 2 and kernel["loads"] == 2


def test_each_node_and_server_has_its_own(kernel):
    ensure("n", URL)
    ensure("m", URL)
    ensure("n", "http://127.0.0.1:9090/")
    assert kernel["reads"] == 3 and len(kernel["pins"]) == 3
