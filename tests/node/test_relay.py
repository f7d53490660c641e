"""The relay a runner page may name (D13, D14): pure, then as a real process."""
import json
import signal
import subprocess
import sys
import time

import pytest

from ocx.inside_run.relay import NotADelivery, argv_for, fill, line_for, parse
from ocx.protocol.deliveries import checkin_delivery, post_delivery, record_delivery

RECORD = "a" * 40
POST = "b" * 64
USER_MESSAGE = {"type": "user", "message": {"role": "user", "content": "{text}"}}


def test_a_placeholder_becomes_the_deliverys_field_and_nothing_else_changes():
    template = {"kind": "{delivery}", "n": 1, "flag": None, "nested": ["{hash}:{branch}", {"{user}": "{missing}"}],
                "literal": "{not a placeholder} {Text}"}
    fields = {"delivery": "checkin", "hash": "h", "branch": "dev", "user": "pat"}
    assert fill(template, fields) == {"kind": "checkin", "n": 1, "flag": None, "nested": ["h:dev", {"pat": ""}],
                                      "literal": "{not a placeholder} {Text}"}


def test_a_delivery_line_becomes_one_line_of_the_template_with_its_text_escaped():
    body = 'Say "hi"\nthen {hash} and ünïcode'
    delivery = post_delivery(POST, "pat", body)
    line = line_for(USER_MESSAGE, delivery.line())
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    # The text is the delivery's, once: a placeholder inside it is not filled again.
    assert json.loads(line) == {"type": "user", "message": {"role": "user", "content": f"Post {POST} from pat: {body}"}}


def test_every_kind_of_delivery_fills_an_argv_template():
    template = ["prog", "--hash={hash}", "{text}"]
    assert argv_for(template, record_delivery(RECORD, "keep docs in step").line()) == [
        "prog", f"--hash={RECORD}", f"Record {RECORD}: keep docs in step"]
    assert argv_for(template, checkin_delivery(POST, "dev", "pat").line()) == [
        "prog", f"--hash={POST}", f"Check-in {POST} on dev by pat"]


@pytest.mark.parametrize("line", [b"not json\n", b"[1, 2]\n"])
def test_a_line_that_is_not_a_json_object_is_no_delivery(line):
    with pytest.raises(NotADelivery):
        line_for(USER_MESSAGE, line)


@pytest.mark.parametrize("args", [[], ["--line", "{}"], ["--line", "{", "--", "p"], ["--run", "[]"], ["--run", '"p"'],
                                  ["--run", '["p"]', "--later", '["q"]'], ["--run", '["p"]', "--then", "[1]"]])
def test_bad_arguments_are_refused_with_the_usage(args):
    with pytest.raises(SystemExit) as refused:
        parse(args)
    assert "usage: python -m ocx.inside_run.relay" in str(refused.value)


def test_the_arguments_parse():
    assert parse(["--line", '{"a": "{text}"}', "--", "p", "-x"]) == ("line", {"a": "{text}"}, ["p", "-x"])
    assert parse(["--run", '["p", "{text}"]']) == ("run", ["p", "{text}"], ["p", "{text}"])
    assert parse(["--run", '["p"]', "--then", '["q"]']) == ("run", ["p"], ["q"])


# As real processes: the relay and a small program standing for the agent.

KEEP_INPUT = """
import sys
out = open(sys.argv[1], "a")
for line in sys.stdin:
    out.write(line); out.flush()
sys.exit(int(sys.argv[2]))
"""

KEEP_ARGV = """
import json, sys
with open(sys.argv[1], "a") as out:
    out.write(json.dumps({"argv": sys.argv[2:], "stdin": sys.stdin.read()}) + "\\n")
sys.exit(1 if "fail" in sys.argv[-1] else 0)
"""


def relay(*args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "ocx.inside_run.relay", *args], stdin=subprocess.PIPE,
                            stderr=subprocess.PIPE)


def test_lines_reach_the_program_in_order_and_the_relay_ends_as_it_does(tmp_path):
    got = tmp_path / "got"
    running = relay("--line", json.dumps(USER_MESSAGE), "--", sys.executable, "-c", KEEP_INPUT, str(got), "3")
    deliveries = [record_delivery(RECORD, "o"), post_delivery(POST, "pat", "a\nb"), checkin_delivery(POST, "dev", "pat")]
    _, errors = running.communicate(b"".join(d.line().encode() for d in deliveries) + b"not json\n", timeout=30)
    assert running.returncode == 3, errors
    assert got.read_bytes() == b"".join(line_for(USER_MESSAGE, d.line()) for d in deliveries)
    assert b"skipped a line that is not JSON" in errors


def test_the_relays_old_module_path_runs_the_relay_alike(tmp_path):
    """Runner pages on deployed wikis name `ocx.node.inside.relay`, its path before the packages
    were cut by process (ocx/node/inside/relay.py): arguments, input and exit status go through."""
    got = tmp_path / "got"
    running = subprocess.Popen([sys.executable, "-m", "ocx.node.inside.relay", "--line", json.dumps(USER_MESSAGE), "--",
                                sys.executable, "-c", KEEP_INPUT, str(got), "3"], stdin=subprocess.PIPE,
                               stderr=subprocess.PIPE)
    delivery = record_delivery(RECORD, "o")
    _, errors = running.communicate(delivery.line().encode(), timeout=30)
    assert running.returncode == 3, errors
    assert got.read_bytes() == line_for(USER_MESSAGE, delivery.line())


def test_the_relay_ends_when_its_program_does_while_its_input_stays_open(tmp_path):
    running = relay("--line", json.dumps(USER_MESSAGE), "--", sys.executable, "-c", "import sys; sys.exit(7)")
    assert running.wait(timeout=30) == 7  # stdin was never closed
    running.stdin.close()


def test_a_program_killed_by_a_signal_ends_the_relay_by_the_same_signal(tmp_path):
    running = relay("--line", json.dumps(USER_MESSAGE), "--", sys.executable, "-c",
                    "import os, signal; os.kill(os.getpid(), signal.SIGKILL)")
    assert running.wait(timeout=30) == -signal.SIGKILL
    running.stdin.close()


def test_a_program_that_cannot_start_ends_the_relay_with_systemds_exec_status():
    running = relay("--line", "{}", "--", "/nonexistent/program")
    _, errors = running.communicate(b"", timeout=30)
    assert running.returncode == 203 and b"cannot start /nonexistent/program" in errors


def test_each_delivery_runs_the_program_once_first_then_later_with_no_input(tmp_path):
    got = tmp_path / "got"
    first = [sys.executable, "-c", KEEP_ARGV, str(got), "new", "{text}"]
    later = [sys.executable, "-c", KEEP_ARGV, str(got), "resume", "--last", "{text}"]
    running = relay("--run", json.dumps(first), "--then", json.dumps(later))
    lines = [record_delivery(RECORD, "o").line(), post_delivery(POST, "pat", "more").line(),
             checkin_delivery(POST, "dev", "pat").line()]
    _, errors = running.communicate("".join(lines).encode(), timeout=60)
    assert running.returncode == 0, errors
    runs = [json.loads(line) for line in got.read_text().splitlines()]
    assert runs == [{"argv": ["new", f"Record {RECORD}: o"], "stdin": ""},
                    {"argv": ["resume", "--last", f"Post {POST} from pat: more"], "stdin": ""},
                    {"argv": ["resume", "--last", f"Check-in {POST} on dev by pat"], "stdin": ""}]


def test_a_run_that_fails_ends_the_session_with_its_status_and_nothing_after_it_runs(tmp_path):
    got = tmp_path / "got"
    running = relay("--run", json.dumps([sys.executable, "-c", KEEP_ARGV, str(got), "{body}"]))
    lines = [post_delivery(POST, "pat", "ok").line(), post_delivery(POST, "pat", "fail").line(),
             post_delivery(POST, "pat", "never").line()]
    _, errors = running.communicate("".join(lines).encode(), timeout=60)
    assert running.returncode == 1
    assert [json.loads(line)["argv"] for line in got.read_text().splitlines()] == [["ok"], ["fail"]]
    assert b"ended with 1: the session ends with it" in errors


def test_sigterm_between_deliveries_ends_the_relay_as_sigterm_would_end_a_program(tmp_path):
    got = tmp_path / "got"
    running = relay("--run", json.dumps([sys.executable, "-c", KEEP_ARGV, str(got), "{text}"]))
    running.stdin.write(record_delivery(RECORD, "o").line().encode())
    running.stdin.flush()
    deadline = time.monotonic() + 30
    while not (got.exists() and got.read_text()) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert got.read_text()  # the first run is done; the relay waits for the next delivery
    running.send_signal(signal.SIGTERM)
    assert running.wait(timeout=30) == -signal.SIGTERM
    running.stdin.close()


def test_a_delivery_too_long_for_an_argument_is_skipped_and_said_and_the_next_one_runs(tmp_path):
    got = tmp_path / "got"
    running = relay("--run", json.dumps([sys.executable, "-c", KEEP_ARGV, str(got), "{body}"]))
    lines = [post_delivery(POST, "pat", "x" * 200_000).line(), post_delivery(POST, "pat", "short").line()]
    _, errors = running.communicate("".join(lines).encode(), timeout=60)
    assert running.returncode == 0, errors
    assert [json.loads(line)["argv"] for line in got.read_text().splitlines()] == [["short"]]
    assert b"skipped a delivery" in errors and b"Argument list too long" in errors
