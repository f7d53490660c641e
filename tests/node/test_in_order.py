"""Sessions' programs start in the order their records came (run_steps/in_order.py): the queue of
preparations on real files and locks, with real processes holding them; whether systemd started a
unit's program is the caller's (STARTED), asked of systemd in the container
(tests/node_system/test_workspaces.py)."""
import os
import signal
import subprocess
import sys
import time

from ocx.run_steps import in_order

HOLD = ("import fcntl, os, sys, time\n"
        "fd = os.open(sys.argv[1], os.O_RDWR)\n"
        "fcntl.flock(fd, fcntl.LOCK_EX)\n"
        "print('held', flush=True)\n"
        "time.sleep(float(sys.argv[2]))\n"
        "os.utime(fd)\n"  # when it left, as leave() marks it: not when the test made the file
        "print('releasing', time.monotonic(), flush=True)\n")  # the lock still held: it goes with the exit


def holding(path, seconds: float) -> subprocess.Popen:
    """Another preparation, alive for SECONDS, holding PATH's lock as enter() does."""
    process = subprocess.Popen([sys.executable, "-c", HOLD, str(path), str(seconds)], stdout=subprocess.PIPE, text=True)
    assert process.stdout.readline() == "held\n"
    return process


def test_a_session_waits_for_the_one_just_before_it_and_no_other(tmp_path):
    first = in_order.enter(tmp_path, 100, "ocx-a-first")
    os.close(first)  # its preparation died: its file's lock is free
    earlier = tmp_path / "00000000000000000200-ocx-a-second"
    earlier.touch()
    holder = holding(earlier, 60)
    own = in_order.enter(tmp_path, 300, "ocx-a-third")
    later = in_order.enter(tmp_path, 400, "ocx-a-fourth")
    assert in_order.before(tmp_path, 300, "ocx-a-third") == earlier.name
    asked = []
    began = time.monotonic()

    def started(unit):
        asked.append(unit)
        return True

    os.utime(earlier)  # it ends now, however long a busy machine took to get here (LONG_AGO_SECONDS)
    os.kill(holder.pid, signal.SIGKILL)  # however it ends, its lock goes with it
    holder.wait(timeout=30)
    said = in_order.wait_for_the_one_before(tmp_path, 300, "ocx-a-third", started, seconds=30)
    assert said.startswith("ocx-a-second.service's program started") and asked == ["ocx-a-second.service"]
    assert time.monotonic() - began < 30
    in_order.leave(tmp_path, 300, "ocx-a-third", own)  # its program starting: its file stays for the next
    in_order.leave(tmp_path, 400, "ocx-a-fourth", later, started=False)  # its preparation failed
    # the dead first's (not the one before anyone still to come), and the third's, for the fourth to wait on
    assert sorted(os.listdir(tmp_path)) == ["00000000000000000100-ocx-a-first", "00000000000000000300-ocx-a-third"]
    assert in_order.wait_for_the_one_before(tmp_path, 500, "ocx-a-fifth", started, seconds=30).startswith(
        "ocx-a-third.service's program started")
    assert sorted(os.listdir(tmp_path)) == ["00000000000000000100-ocx-a-first"]  # found free: removed


def test_a_live_one_before_is_waited_for_until_it_ends(tmp_path):
    earlier = tmp_path / "00000000000000000001-ocx-b-one"
    earlier.touch()
    holder = holding(earlier, 1.0)
    in_order.enter(tmp_path, 2, "ocx-b-two")
    said = in_order.wait_for_the_one_before(tmp_path, 2, "ocx-b-two", lambda unit: True, seconds=60)
    returned = time.monotonic()  # the system's monotonic clock, the holder's too
    assert holder.wait(timeout=30) == 0  # it ended by itself, after its second
    released = float(holder.stdout.readline().split()[1])
    assert "ocx-b-one.service's program started" in said and returned > released  # not before its end


def test_a_wait_for_a_live_one_sleeps_until_its_lock_goes_not_looking_again_and_again(tmp_path):
    """The holder's release wakes the waiter (inotify): over the holder's 1.5 s the lock is looked at a
    few times (once a RECHECK_SECONDS at most), where a 5 ms poll looked 300 times and spent the unit's CPU."""
    earlier = tmp_path / "00000000000000000001-ocx-h-one"
    earlier.touch()
    holder = holding(earlier, 1.5)
    in_order.enter(tmp_path, 2, "ocx-h-two")
    said = in_order.wait_for_the_one_before(tmp_path, 2, "ocx-h-two", lambda unit: True, seconds=60)
    returned = time.monotonic()
    assert holder.wait(timeout=30) == 0
    released = float(holder.stdout.readline().split()[1])
    assert "ocx-h-one.service's program started" in said and returned > released
    looks = int(said.split("its lock looked at ")[1].split(",")[0])
    assert 2 <= looks <= 1.5 / in_order.RECHECK_SECONDS + 3, said
    assert said.endswith("systemd asked 1 times)")  # STARTED said yes at once


def test_a_free_file_before_it_is_a_dead_preparation_removed_not_waited_for(tmp_path):
    dead = tmp_path / "00000000000000000001-ocx-c-dead"
    dead.touch()
    in_order.enter(tmp_path, 2, "ocx-c-two")
    said = in_order.wait_for_the_one_before(tmp_path, 2, "ocx-c-two", lambda unit: False, seconds=0.3)
    # its lock was free: removed; and systemd never said its program started: not waited on past the bound
    assert not dead.exists() and said == "ocx-c-dead.service's program not started after 0 s: not waited for longer"


def test_the_wait_is_bounded_and_says_so(tmp_path):
    earlier = tmp_path / "00000000000000000001-ocx-d-one"
    earlier.touch()
    holder = holding(earlier, 60)
    try:
        in_order.enter(tmp_path, 2, "ocx-d-two")
        began = time.monotonic()
        said = in_order.wait_for_the_one_before(tmp_path, 2, "ocx-d-two", lambda unit: True, seconds=0.3)
        assert said == "ocx-d-one.service still preparing after 0 s: not waited for longer"
        assert time.monotonic() - began < 10
    finally:
        holder.kill()
        holder.wait(timeout=30)


def test_the_first_waits_for_none_and_a_check_in_run_is_not_queued(tmp_path):
    queued = in_order.queued(tmp_path / "home", 7, "ocx-e-one")
    assert queued is not None and queued[:3] == (tmp_path / "starts", 7, "ocx-e-one")
    assert in_order.wait_for_the_one_before(*queued[:3], lambda unit: False) == "none before it"
    in_order.leave(*queued, started=False)
    assert os.listdir(tmp_path / "starts") == []
    assert in_order.queued(tmp_path / "home", None, "ocx-e-two") is None


def test_a_queue_that_cannot_be_had_never_stops_a_preparation(tmp_path, capsys):
    (tmp_path / "starts").write_text("not a directory")
    assert in_order.queued(tmp_path / "home", 7, "ocx-f-one") is None
    assert "not queued by its record's receipt" in capsys.readouterr().out


def test_one_that_left_long_ago_is_not_asked_after(tmp_path):
    """A quiet node's next session: the one before left its place seconds ago, so its program started
    (or never will) and systemd is not asked; one that left just now is asked about."""
    old = in_order.enter(tmp_path, 1, "ocx-g-old")
    in_order.leave(tmp_path, 1, "ocx-g-old", old)
    path = tmp_path / "00000000000000000001-ocx-g-old"
    os.utime(path, (time.time() - 60, time.time() - 60))
    asked = []
    said = in_order.wait_for_the_one_before(tmp_path, 2, "ocx-g-new", lambda unit: asked.append(unit) or True)
    assert asked == [] and said == "ocx-g-old.service prepared 60 s ago" and not path.exists()
    recent = in_order.enter(tmp_path, 3, "ocx-g-recent")
    in_order.leave(tmp_path, 3, "ocx-g-recent", recent)
    said = in_order.wait_for_the_one_before(tmp_path, 4, "ocx-g-next", lambda unit: asked.append(unit) or True)
    assert asked == ["ocx-g-recent.service"] and said.startswith("ocx-g-recent.service's program started")
