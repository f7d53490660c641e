"""A failure passes or is final by its type (C4): a `fossil` run's Cause, a page's HTTP status, a
connection's errno, SQLite's result code, a D-Bus error's name. Each layer types what it meets;
none judges by the words of a message. Where the words of the lists these replaced (kept below as
the oracle) decided the same inputs, the types decide them the same."""
from __future__ import annotations

import errno
import http.client
import os
import socket
import sqlite3
import subprocess
import urllib.error

from hypothesis import given
from hypothesis import strategies as st

from ocx.fossil import faults
from ocx.fossil.fossil_failure import Cause, FossilError, said
from ocx.fossil.program import not_started
from ocx.fossil.web import WebError
from ocx.node.faults import is_node_fault
from ocx.systemd.errors import BusError, PASSING_NAMES
from ocx.systemd.errors import passes as bus_passes

# The word lists the types replaced, as they were: the oracle for "nothing changed".
OLD_PROGRAM_SAYS = ("cannot connect", "connection refused", "connection reset", "connection closed",
                    "database is locked", "busy", "timed out", "unable to open", "no space", "broken pipe",
                    "did not reply", "truncated", "unexpected end", "server says: 5", " 502 ", " 503 ")
OLD_WEB_SAYS = ("database is locked", "http 5", "connection", "timed out")
OLD_BUS_SAYS = ("NoReply", "Timeout", "TimedOut", "Disconnected", "ServiceUnknown", "NameHasNoOwner",
                "LimitsExceeded", "ocx.Timeout")


def old_says(text: str, words: tuple[str, ...]) -> bool:
    return any(w in text.lower() for w in words)


# What Fossil 2.21 prints when it fails, each as it prints it (http.c, http_socket.c, db.c, user.c ...).
FOSSIL_PASSING = [
    "cannot connect to host 127.0.0.1:8080",
    "server did not reply",
    "response truncated: got 100 bytes of 5000",
    "server says: 502 Bad Gateway",
    "server says: 503 Service Unavailable",
    "server says: 500 Internal Server Error",
    "Database error: database is locked",
    "SQL error (5,5: database is locked) while running [BEGIN IMMEDIATE]",
    "unable to open database file",
]
FOSSIL_FINAL = [
    "no such user: cx-1",
    "server says: 404 Not Found",
    "server says: 401 Unauthorized",
    "Error: login failed",
    "not a valid repository: /x.fossil",
    "unknown command: frob",
    "server returned an error - clone aborted",
]


def test_what_fossil_says_of_a_server_or_file_not_there_now_passes():
    for text in FOSSIL_PASSING:
        assert faults.passes(FossilError(["clone", "http://x"], 1, "", text)), text
        assert old_says(text, OLD_PROGRAM_SAYS), text


def test_what_fossil_says_of_the_request_itself_is_final():
    for text in FOSSIL_FINAL:
        assert faults.passes(FossilError(["clone", "http://x"], 1, "", text)) is False, text
        assert not old_says(text, OLD_PROGRAM_SAYS), text


@given(st.integers(100, 599), st.text(alphabet="abcdefghij ", max_size=20))
def test_the_status_fossil_names_is_read_as_a_number(status, reason):
    cause, http_status = said("", f"server says: {status} {reason}")
    assert http_status == status
    assert (cause is Cause.SERVER_ERROR) == (500 <= status <= 599)


WORDS = st.sampled_from([*OLD_PROGRAM_SAYS, "server says: 5xx", "server says: 404 ", "Connection Refused",
                         "no such user: "])
OUTPUT = st.lists(st.one_of(WORDS, st.text(max_size=12)), max_size=6).map(" ".join)


@given(OUTPUT, OUTPUT)
def test_any_output_is_judged_as_the_words_judged_it(stdout, stderr):
    """But for "server says: 5" not followed by a status's three digits, which Fossil never prints,
    and for a login Fossil says it does not have, whatever letters the login holds."""
    text = f"{stderr} {stdout}"
    passes = faults.passes(FossilError(["x"], 1, stdout, stderr))
    typed_now = any(w in text.lower() for w in ("server says: 5", "no such user: "))
    assert passes == old_says(text, OLD_PROGRAM_SAYS) or typed_now


@given(st.sampled_from(FOSSIL_PASSING), st.text(max_size=40), st.text(max_size=40))
def test_what_passes_passes_whatever_surrounds_it(line, before, after):
    assert faults.passes(FossilError(["x"], 1, f"{before}\n{line}\n{after}", ""))


def test_a_login_fossil_does_not_have_is_typed_for_whoever_withdraws_its_letters():
    """served.py takes it as done (C4: a user never made holds nothing to withdraw)."""
    assert FossilError(["user"], 1, "", "no such user: cx-1").cause is Cause.NO_SUCH_USER
    # A record names the login: its letters cannot make the failure pass (C4, D40).
    assert FossilError(["user"], 1, "", "no such user: busy-truncated").cause is Cause.NO_SUCH_USER
    assert not faults.passes(FossilError(["user"], 1, "", "no such user: busy-truncated"))
    assert FossilError(["user"], 1, "", "Database error: database is locked").cause is Cause.BUSY


def test_a_start_that_failed_is_judged_by_its_errno_as_the_words_judged_its_text():
    for number in errno.errorcode:
        error = OSError(number, os.strerror(number))
        assert (not_started(error) is not Cause.OTHER) == old_says(os.strerror(number), OLD_PROGRAM_SAYS), number
    assert not_started(subprocess.TimeoutExpired(["fossil"], 120)) is Cause.TIMED_OUT


def test_a_rebuilt_error_keeps_its_cause():
    """copies.py and sync.py hide the password in a new FossilError: the cause goes with it."""
    first = FossilError(["clone"], -1, "", "x", cause=not_started(OSError(errno.ENOSPC, "full")))
    again = FossilError(["clone"], first.returncode, "", first.stderr, cause=first.cause)
    assert again.cause is Cause.FULL and faults.passes(again)


def _web_errors(reason: OSError) -> list[WebError]:
    """REASON as web.py meets it: wrapped by urllib (URLError), or raised mid-answer."""
    made = []
    for cause in (urllib.error.URLError(reason), reason):
        try:
            raise WebError(f"http://127.0.0.1:8080/x: {type(reason).__name__}: {reason}") from cause
        except WebError as error:
            made.append(error)
    return made


def test_a_connection_is_judged_by_its_errno_as_the_words_judged_its_text():
    for number in errno.errorcode:
        for error in _web_errors(OSError(number, os.strerror(number))):
            assert faults.passes(error) == old_says(str(error), OLD_WEB_SAYS), (number, str(error))


def test_connections_the_server_cut_pass_and_others_do_not():
    passing = [ConnectionRefusedError(errno.ECONNREFUSED, "x"), ConnectionResetError(), socket.timeout("timed out"),
               http.client.RemoteDisconnected("Remote end closed connection without response")]
    final = [socket.gaierror(-2, "Name or service not known"), BrokenPipeError(errno.EPIPE, "Broken pipe")]
    for reason in passing:
        assert all(faults.passes(e) for e in _web_errors(reason)), reason
    for reason in final:
        assert not any(faults.passes(e) for e in _web_errors(reason)), reason
    assert faults.passes(WebError("http://x/y: no route")) is False  # no status, no cause: nothing says it passes


@given(st.integers(100, 599))
def test_a_page_is_judged_by_its_status(status):
    error = WebError(f"/raw/abc: HTTP {status}", status=status)
    assert faults.passes(error) == (500 <= status <= 599) == old_says(str(error), OLD_WEB_SAYS)


def test_a_sync_fossil_answered_locked_passes():
    assert faults.passes(WebError("push by alice: the server refused it (HTTP 200: x)", status=200, locked=True))
    assert not faults.passes(WebError("push by alice: the server refused it (HTTP 200: x)", status=200))


def test_sqlite_is_judged_by_its_result_code(tmp_path):
    path = tmp_path / "r.db"
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("CREATE TABLE t(x)")
    holder.execute("BEGIN EXCLUSIVE")
    try:
        other = sqlite3.connect(path, timeout=0)
        try:
            other.execute("SELECT * FROM t")
        except sqlite3.OperationalError as error:
            busy = error
        other.close()
    finally:
        holder.execute("ROLLBACK")
    assert busy.sqlite_errorcode == sqlite3.SQLITE_BUSY and faults.passes(busy)
    try:
        holder.execute("SELECT * FROM nowhere")
    except sqlite3.OperationalError as error:
        missing = error
    assert missing.sqlite_errorcode == sqlite3.SQLITE_ERROR and faults.passes(missing) is False
    holder.close()
    # Made by hand, an error has no code: SQLite's own text for one names it.
    assert faults.passes(sqlite3.OperationalError("database is locked"))
    assert not faults.passes(sqlite3.OperationalError("no such table: blob"))


# Every standard D-Bus error name (dbus-protocol.h), systemd's (bus-common-errors.h), and sd-bus's for an errno.
DBUS_NAMES = [f"org.freedesktop.DBus.Error.{n}" for n in (
    "Failed NoMemory ServiceUnknown NameHasNoOwner NoReply IOError BadAddress NotSupported LimitsExceeded "
    "AccessDenied AuthFailed NoServer Timeout NoNetwork AddressInUse Disconnected InvalidArgs FileNotFound "
    "FileExists UnknownMethod UnknownObject UnknownInterface UnknownProperty PropertyReadOnly TimedOut "
    "MatchRuleNotFound MatchRuleInvalid Spawn.ExecFailed Spawn.ChildExited UnixProcessIdUnknown "
    "InvalidSignature InconsistentMessage InteractiveAuthorizationRequired").split()]
SYSTEMD_NAMES = [f"org.freedesktop.systemd1.{n}" for n in (
    "NoSuchUnit NoUnitForPID UnitExists LoadFailed BadUnitSetting JobFailed NoSuchJob NotSubscribed "
    "AlreadySubscribed OnlyByDependency TransactionJobsConflicting TransactionOrderIsCyclic "
    "TransactionIsDestructive UnitMasked UnitGenerated UnitLinked JobTypeNotApplicable NoIsolation "
    "ShuttingDown ScopeNotRunning NoSuchDynamicUser NotReferenced DiskFull NothingToClean UnitBusy "
    "UnitInactive").split()]
OCX_NAMES = ["ocx.Timeout", "ocx.NoUnixFd", "?"]


def test_a_bus_error_is_judged_by_its_exact_name_as_the_words_judged_it():
    names = DBUS_NAMES + SYSTEMD_NAMES + OCX_NAMES + [f"System.Error.{n}" for n in errno.errorcode.values()]
    for name in names:
        assert bus_passes(BusError(name, "text")) == old_says_case(name), name
    assert {n for n in names if bus_passes(BusError(n, ""))} == PASSING_NAMES


def old_says_case(name: str) -> bool:
    return any(w in name for w in OLD_BUS_SAYS)  # the old list matched names case and all


@given(st.text(max_size=80))
def test_a_bus_errors_text_never_decides(text):
    assert not bus_passes(BusError("org.freedesktop.DBus.Error.InvalidArgs", text + " Timeout NoReply"))
    assert bus_passes(BusError("org.freedesktop.DBus.Error.NoReply", text))


def test_the_node_reads_each_layers_types_through_the_chain():
    try:
        try:
            raise BusError("org.freedesktop.DBus.Error.NoReply", "no reply")
        except BusError as cause:
            raise RuntimeError("starting the run") from cause
    except RuntimeError as error:
        assert is_node_fault(error)
    assert not is_node_fault(BusError("org.freedesktop.systemd1.UnitBusy", "timed out, busy"))


def test_no_module_judges_a_failure_by_the_words_of_its_output_or_message():
    """A failure's words are typed where they are met (fossil_failure.py's table, web.LOCKED_SAYS);
    nothing looks for words in a `fossil` run's output or in an error's text (`x in str(error)`)."""
    import ast
    import re
    from pathlib import Path

    import ocx

    reading = re.compile(r"\.(stderr|stdout)\b|\bstr\((error|exc|err|failure|e)\)")
    found = []
    for path in sorted(Path(ocx.__file__).parent.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.Compare) and any(isinstance(op, (ast.In, ast.NotIn)) for op in node.ops)
                    and reading.search(ast.unparse(node))):
                found.append(f"{path.name}:{node.lineno}: {ast.unparse(node)}")
    assert not found
