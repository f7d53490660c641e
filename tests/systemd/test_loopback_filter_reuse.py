"""loopback_filter.ensure reads the host's resolvers and sockets at most once a
FRESH_SECONDS, and never hands out a pin that is gone (docs/node.md, 'Measured': each session
of a burst asked for it). The kernel's part is real: each program is loaded
and pinned in the test container's bpffs; the reads are counted by wrapping
the real `allowances`, and the clock is the test's."""

from __future__ import annotations

import os
import uuid

import pytest

from ocx.systemd import bpf
from ocx.systemd.loopback_filter import FRESH_SECONDS, allowances, ensure

pytestmark = pytest.mark.systemd

URL = "http://127.0.0.1:8484/"


class Host:
    """The real allowances, counted, and a clock moved by hand."""

    def __init__(self):
        self.reads, self.now = 0, 1000.0
        self.node = f"reuse{uuid.uuid4().hex[:8]}"  # its own pins: never another test's

    def read(self, url: str):
        self.reads += 1
        return allowances(url)

    def ensure(self, url: str = URL, node: str | None = None) -> str:
        return ensure(node or self.node, url, read=self.read, clock=lambda: self.now)


@pytest.fixture
def host():
    made = Host()
    yield made
    for name in os.listdir(bpf.BPFFS):  # what this test pinned
        if f"ocx-{made.node}" in name:
            os.unlink(os.path.join(bpf.BPFFS, name))


def test_a_burst_within_a_moment_reads_the_host_once_and_gets_one_pin(host):
    paths = {host.ensure() for _ in range(50)}
    assert len(paths) == 1 and bpf.pinned(paths.pop())
    assert host.reads == 1


def test_after_the_moment_the_host_is_read_again_and_the_same_program_kept(host):
    first = host.ensure()
    host.now += FRESH_SECONDS + 0.01
    assert host.ensure() == first and bpf.pinned(first)
    assert host.reads == 2


def test_a_pin_gone_within_the_moment_is_made_again_not_handed_out(host):
    first = host.ensure()
    os.unlink(first)  # removed meanwhile (an operator, a node's restart)
    host.now += FRESH_SECONDS / 10
    assert host.ensure() == first and bpf.pinned(first)
    assert host.reads == 2


def test_each_node_and_server_is_read_for_on_its_own(host):
    host.ensure()
    host.ensure(node=f"{host.node}b")
    host.ensure(url="http://127.0.0.1:9090/")
    assert host.reads == 3
