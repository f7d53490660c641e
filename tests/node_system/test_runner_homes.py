"""A runner's shared home (D14) carries a sign-in from one run to the next,
though each run has a user of its own (D16): each run works in its own
copy, and the file its page keeps is written back when it ends (D42)."""
import json
import os
from pathlib import Path

import pytest

from ocx.protocol import Outcome

from .harness import PYTHON, journal, systemctl

pytestmark = pytest.mark.systemd

HOME = Path("/var/lib/ocx-homes/probe-test")
RUNNER = "probehome"
# Reads the sign-in the last run left, writes the next one 0600, as agents write theirs.
PROBE = """
import os
path = os.path.join(os.environ["PROBE_HOME"], "signin")
try:
    seen = open(path).read().strip()
except FileNotFoundError:
    seen = "0"
print("saw", seen, "as uid", os.getuid(), flush=True)
fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
os.write(fd, str(int(seen) + 1).encode())
os.close(fd)
"""


def run_once(node) -> str:
    record = node.post(node.record(runner=RUNNER, objective="sign in"))
    try:
        response = node.response(record, timeout=60)
    except AssertionError as error:
        unit = node.unit(record)
        raise AssertionError(f"{systemctl('status', unit)}\n{journal(unit)}") from error
    assert response.outcome is Outcome.exited and response.note.startswith("exit 0"), response.note
    return journal(node.unit(record))


def test_a_sign_in_one_run_writes_is_read_and_rewritten_by_the_next(node):
    HOME.mkdir(parents=True, exist_ok=True)
    os.chmod(HOME, 0o755)  # root's, as an operator makes it
    page = {"command": [PYTHON, "-c", PROBE], "homes": [str(HOME)], "keep": {str(HOME): ["signin"]},
            "env": {"PROBE_HOME": str(HOME)}}
    text = f"# Runner {RUNNER}: a shared home\n\n```json\n{json.dumps(page)}\n```\n"
    node.clone_of(node.admin).write_wiki(f"sandbox/{RUNNER}", text)

    first = run_once(node)
    assert "saw 0" in first, first
    signin = HOME / "signin"
    assert signin.read_text() == "1"
    info = signin.stat()
    assert info.st_uid == 0 and oct(info.st_mode & 0o777) == "0o600"  # the host's home stays root's

    second = run_once(node)
    assert "saw 1" in second, second  # what the first run wrote, read by another user
    assert signin.read_text() == "2"
    uids = {line.split()[-1] for line in (first + second).splitlines() if line.startswith("saw ")}
    assert len(uids) == 2  # two runs, two dynamic users (D16)
