"""Whose fault a failure is (faults.py): the node's own passes and is waited out; the record's is not (C4)."""
import errno
import sqlite3
import urllib.error

from ocx.fossil.fossil_failure import FossilError
from ocx.fossil.web import WebError
from ocx.node.faults import describe, is_node_fault
from ocx.systemd.bus import BusError


def test_the_server_restarting_is_the_nodes_fault():
    assert is_node_fault(FossilError(["clone", "http://127.0.0.1:8080"], 1, "", "cannot connect to host 127.0.0.1"))
    assert is_node_fault(ConnectionRefusedError(errno.ECONNREFUSED, "Connection refused"))
    try:
        try:
            raise urllib.error.URLError(ConnectionRefusedError(111, "Connection refused"))
        except urllib.error.URLError as cause:
            raise WebError("http://127.0.0.1:8080/forumedit: [Errno 111] Connection refused") from cause
    except WebError as error:
        assert is_node_fault(error)


def test_a_busy_repository_a_full_disk_and_a_bus_timeout_are_the_nodes_too():
    assert is_node_fault(sqlite3.OperationalError("database is locked"))
    assert is_node_fault(FossilError(["user"], 1, "", "Error: database is locked"))
    assert is_node_fault(OSError(errno.ENOSPC, "No space left on device"))
    assert is_node_fault(BusError("ocx.Timeout", "StartTransientUnit: no reply within 25 s"))
    assert is_node_fault(BusError("org.freedesktop.DBus.Error.NoReply", "no reply"))


def test_what_the_record_asks_is_not():
    assert not is_node_fault(FossilError(["user"], 1, "", "no such user: cx-1"))
    assert not is_node_fault(BusError("org.freedesktop.DBus.Error.InvalidArgs", "Invalid unit name"))
    assert not is_node_fault(FileNotFoundError(errno.ENOENT, "No such file"))
    assert not is_node_fault(ValueError("bad"))


def test_a_failure_is_named_in_one_line():
    assert describe(FossilError(["clone", "x"], 1, "", "cannot connect\nsecond line")) == \
        "FossilError: fossil clone x ... exited 1: cannot connect"


def test_a_unit_name_only_referred_to_is_not_held_as_a_run():
    """A run's cpu timer names its unit before the run starts (StopPropagatedFrom): systemd loads
    that name as a stub. Taken for the run, it was answered from an end it never had (refused)."""
    from ocx.node_service.tend import Units
    from ocx.systemd.manager import ListedUnit

    stub = ListedUnit("ocx-a-b.service", "inactive", "dead", "", load_state="not-found")
    ran = ListedUnit("ocx-a-c.service", "failed", "failed", "OCX record c")
    units = Units({u.name: u for u in (stub, ran)})
    assert units.held(stub.name) is None and not units.live(stub.name)
    assert units.held(ran.name) is ran
