"""A command record's queue (D18): arrival order, each check-in once. Files only."""
from ocx.node_service.checkin_runs import enqueue, queued
from ocx.node.record_dirs import RecordDir


def test_the_queue_keeps_arrival_order_not_hash_order_and_takes_each_checkin_once(tmp_path):
    record = RecordDir(tmp_path)
    arrivals = ["f" * 64, "0" * 64, "a" * 64]
    assert [enqueue(record, c, "dev") for c in arrivals] == [True, True, True]
    assert enqueue(record, "0" * 64, "dev") is False  # seen again (two triggers): still once
    assert queued(record) == arrivals


def test_an_empty_queue(tmp_path):
    assert queued(RecordDir(tmp_path)) == []


def test_the_order_survives_a_restart(tmp_path):
    enqueue(RecordDir(tmp_path), "b" * 64, "dev")
    enqueue(RecordDir(tmp_path), "1" * 64, "dev")
    assert queued(RecordDir(tmp_path)) == ["b" * 64, "1" * 64]  # a new process reads the same files
