"""The feeder's fork and exec (ocx/inside_run/spawn.py): what Popen gave the program, it still gets (D13)."""
import os
import signal
import sys

import pytest

from ocx.inside_run.spawn import spawn

ENV = {"PATH": "/usr/bin:/bin"}
IGNORED = (1 << (signal.SIGPIPE - 1)) | (1 << (signal.SIGXFSZ - 1))


def run(argv: list[str], env: dict[str, str] = ENV, cwd: str | None = None) -> tuple[int, bytes]:
    """ARGV's exit status and what it printed on its standard output."""
    read, write = os.pipe()
    try:
        child = spawn(argv, env, (os.open(os.devnull, os.O_RDONLY), write, write), cwd)
    finally:
        os.close(write)
    with os.fdopen(read, "rb") as out:
        printed = out.read()
    return child.wait(), printed


def test_the_program_holds_only_its_three_streams_and_its_environment(tmp_path):
    leaked = os.open(tmp_path, os.O_RDONLY)
    os.set_inheritable(leaked, True)  # close_fds: even an inheritable descriptor stays the feeder's
    try:
        status, printed = run([sys.executable, "-S", "-c", "import os; print(sorted(os.listdir('/proc/self/fd'))); "
                               "print(os.getcwd())"], ENV, str(tmp_path))
    finally:
        os.close(leaked)
    assert status == 0 and printed.decode().splitlines() == ["['0', '1', '2', '3']", str(tmp_path)]  # 3: the listing's
    assert run(["env"], {**ENV, "ONLY": "1"}) == (0, b"PATH=/usr/bin:/bin\nONLY=1\n")


def test_signals_python_ignores_are_the_programs_default_again():
    assert signal.getsignal(signal.SIGPIPE) == signal.SIG_IGN  # the interpreter's own, which the feeder inherits too
    status, printed = run(["cat", "/proc/self/status"])
    [ignored] = [line.split()[1] for line in printed.decode().splitlines() if line.startswith("SigIgn:")]
    assert status == 0 and int(ignored, 16) & IGNORED == 0


def test_the_program_is_found_on_its_environments_path_and_its_end_told_as_popen_tells_it(tmp_path):
    program = tmp_path / "bin" / "ends"
    program.parent.mkdir()
    program.write_text("#!/bin/sh\nkill -TERM $$\n")
    program.chmod(0o755)
    assert run(["ends"], {"PATH": f"/nonexistent:{program.parent}"})[0] == -signal.SIGTERM
    assert run(["sh", "-c", "exit 7"])[0] == 7


@pytest.mark.parametrize("case", ["no program", "not executable", "no directory", "a null byte"])
def test_a_program_that_cannot_start_raises_its_error_in_the_feeder(tmp_path, case):
    plain = tmp_path / "plain"
    plain.write_text("not a program\n")
    argv, cwd, error = {"no program": (["no-such-program-here"], None, FileNotFoundError),
                        "not executable": ([str(plain)], None, PermissionError),
                        "no directory": (["true"], str(tmp_path / "gone"), FileNotFoundError),
                        "a null byte": (["true", "a\0b"], None, OSError)}[case]
    with pytest.raises(error):
        spawn(argv, ENV, (0, 1, 2), cwd)
