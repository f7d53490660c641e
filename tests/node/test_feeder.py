"""The feeder inside a session's unit, run as a real process (no systemd needed)."""
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

READER = """
import json, sys
want = int(sys.argv[1])
out = open(sys.argv[2], "a")
for _ in range(want):
    line = sys.stdin.readline()
    if not line:
        break
    out.write(line); out.flush()
sys.exit(int(sys.argv[3]))
"""


def drop(inbox: Path, sequence: int, body: dict) -> None:
    """As the node does: write aside, then rename into place (atomic)."""
    temporary = inbox / f".{sequence}.tmp"
    temporary.write_text(json.dumps(body) + "\n")
    os.rename(temporary, inbox / f"{sequence:08d}-{sequence:040x}.json")


def feeder(inbox: Path, *program: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "ocx.inside_run.feeder", str(inbox), "--", *program],
                            stderr=subprocess.PIPE, text=True)


def test_deliveries_arrive_whole_in_order_and_the_exit_code_is_the_programs(tmp_path):
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    got = tmp_path / "got.jsonl"
    drop(inbox, 1, {"n": 1, "text": "first"})
    running = feeder(inbox, sys.executable, "-c", READER, "200", str(got), "3")
    for n in range(2, 201):
        drop(inbox, n, {"n": n, "text": "x" * (n * 37 % 5000)})  # some larger than a pipe write
    assert running.wait(timeout=60) == 3
    lines = got.read_text().splitlines()
    assert [json.loads(line)["n"] for line in lines] == list(range(1, 201))


def test_files_still_being_written_are_not_read(tmp_path):
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    (inbox / ".2.tmp").write_text('{"n": "partial"')
    got = tmp_path / "got.jsonl"
    drop(inbox, 1, {"n": 1})
    running = feeder(inbox, sys.executable, "-c", READER, "1", str(got), "0")
    assert running.wait(timeout=30) == 0
    assert got.read_text() == '{"n": 1}\n'


def test_a_program_killed_by_a_signal_ends_the_feeder_by_the_same_signal(tmp_path):
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    running = feeder(inbox, sys.executable, "-c", "import os; os.kill(os.getpid(), 9)")
    assert running.wait(timeout=30) == -9


def test_a_program_that_cannot_start_exits_203_like_systemd(tmp_path):
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    running = feeder(inbox, str(tmp_path / "missing-program"))
    assert running.wait(timeout=30) == 203
    assert "cannot start" in running.stderr.read()


def test_a_program_that_ignores_its_input_does_not_block_the_feeder(tmp_path):
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    for n in range(1, 50):
        drop(inbox, n, {"n": n, "pad": "y" * 10000})  # ~500 KB: far more than a pipe holds
    running = feeder(inbox, sys.executable, "-c", "import time; time.sleep(1)")
    assert running.wait(timeout=30) == 0  # a blocked feeder never exits: the deadline says it


def test_the_program_gets_exactly_the_variables_the_node_named():
    from ocx.inside_run.feeder import program_environment

    given = {"HOME": "/h", "USER": "run-1", "INVOCATION_ID": "x", "JOURNAL_STREAM": "1:2",
             "OCX_KEEP_ENVIRONMENT": "HOME,USER,PATH"}
    assert program_environment(given) == {"HOME": "/h", "USER": "run-1"}
    assert program_environment({"A": "1"}) == {"A": "1"}


def command_run(tmp_path: Path, script: str) -> tuple[subprocess.CompletedProcess, str]:
    last = tmp_path / "last-line"
    done = subprocess.run([sys.executable, "-m", "ocx.inside_run.feeder", "-", "--last-line", str(last), "--",
                           sys.executable, "-c", script], capture_output=True, timeout=30)
    return done, last.read_bytes().decode()


def test_a_command_run_passes_its_output_on_and_keeps_its_last_line(tmp_path):
    script = "import sys\nfor i in range(5000): print('line', i)\nprint('12 passed', file=sys.stderr)\nprint()\nsys.exit(4)"
    done, last = command_run(tmp_path, script)
    assert done.returncode == 4
    assert done.stdout.decode().splitlines()[:2] == ["line 0", "line 1"]
    assert "line 4999" in done.stdout.decode() and "12 passed" in done.stdout.decode()
    assert last == "12 passed"  # stderr counts; a trailing blank line does not


def test_a_command_run_without_a_final_newline_and_without_input(tmp_path):
    done, last = command_run(tmp_path, "import sys\nprint(repr(sys.stdin.read()))\nsys.stdout.write('ok: done')")
    assert done.returncode == 0 and last == "ok: done"
    assert done.stdout.decode().startswith("''")  # its standard input is empty, not the node's


def test_a_command_that_prints_nothing_leaves_an_empty_last_line(tmp_path):
    done, last = command_run(tmp_path, "pass")
    assert done.returncode == 0 and last == ""


STOPPED_EARLY = """
import os, signal, sys
from ocx.inside_run import feeder
stops = feeder.StopRelay()
os.kill(os.getpid(), signal.SIGTERM)  # systemd's stop, heard before the program exists
running = feeder.Feeder(sys.argv[1], [sys.executable, "-c", "import time; time.sleep(600)"])
stops.started(running.child.pid)
feeder._end_like(running.run())
"""


def test_a_stop_heard_before_the_program_started_still_ends_it(tmp_path):
    # Seen in the systemd container: a run stopped 0.4 s after its start ran on until TimeoutStopSec.
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    running = subprocess.Popen([sys.executable, "-c", STOPPED_EARLY, str(inbox)], stderr=subprocess.PIPE, text=True)
    assert running.wait(timeout=60) == -signal.SIGTERM  # the program's end, by the stop's signal
