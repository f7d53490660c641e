"""The demonstration `ocx demo` runs on its node, end to end (docs/operating.md, 'The demo').

As the demo's admin, through Fossil's own web forms and a clone of its own:
a runner page `sandbox/demo`, a CI record on branch `demo`, a check-in
there and the `ci` verdict the node writes on it, then a session record
that the node runs and answers `exited`. Each step says what happened and
where to look. Everything it writes is an ordinary artifact with its
sender; nothing here reaches past the node (the node does the work).
"""
from __future__ import annotations

import json
import secrets
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from ..fossil.fossil_failure import FossilError
from ..fossil.repository import Repository
from ..fossil.sync import CallerClone
from ..fossil.web import WebSession
from ..node.config import NodeConfig
from ..node.record_dirs import RecordDir
from ..protocol.finder import find_message
from ..protocol.verdict import parse_verdict

RUNNER = "demo"
BRANCH = "demo"
# The demo session: it reads its first delivery (D13) and prints it.
SESSION = ["/usr/bin/python3", "-c",
           "import json, sys; d = json.loads(sys.stdin.readline()); print('demo session read:', d['text'])"]
CI_SCRIPT = """import pathlib
checked = sorted(p.name for p in pathlib.Path(".").iterdir() if not p.name.startswith(".") and p.is_file())
print(f"demo CI: {len(checked)} files checked out, all readable")
"""
WAIT_SECONDS = 180

Found = TypeVar("Found")


class Demonstration:
    def __init__(self, config: NodeConfig, admin: str, password: str, say: Callable[[str], None]):
        self.config, self.admin, self.say = config, admin, say
        self.web = WebSession(config.url, admin, password)
        work = Path(tempfile.mkdtemp(prefix="ocx-demo-"))
        self.clone = CallerClone.create(work / "admin.fossil", config.url, admin, password, home=work)
        self.checkout = work / "checkout"
        with Repository(config.repository) as repository:
            self.node = repository.server_code

    def record(self, **fields: object) -> str:
        base = {"ocx": 1, "kind": "record", "node": self.node, "checkins": [], "hears": [self.admin],
                "remote": False, "restrict": {}, "sandbox": {"network": True, "read_only": [], "read_write": []}}
        message = {**base, **fields}
        body = f"{fields['objective']}\n\n```json\n{json.dumps(message, indent=1)}\n```\n"
        return self.web.new_thread(f"OCX demo: {fields['objective']}", body)

    def runner_page(self) -> None:
        page = {"command": SESSION, "homes": [], "env": {}}
        text = f"# Runner {RUNNER}\n\nThe demo's session program (D14).\n\n```json\n{json.dumps(page)}\n```\n"
        self.clone.write_wiki(f"sandbox/{RUNNER}", text)
        self.say(f"  runner page     sandbox/{RUNNER} written by {self.admin} (D14): {' '.join(SESSION[:2])} …")

    def ci(self) -> None:
        user = f"ci-demo-{secrets.token_hex(2)}"
        record = self.record(runner="command", command=["python3", "ci.py"], user=user, hears=[],
                             objective="The demo CI passes", checkins=[BRANCH], budget={"wall": "2m"})
        self.say(f"  CI record       {record[:12]} on branch {BRANCH}, run as {user}: "
                 f"{self.config.url}/forumpost/{record[:12]}")
        self._wait(lambda: self._opened(record), "the node to open the CI record")
        self.clone.pull()
        try:  # a demo run before made the branch: go on from its tip
            self.clone.open_checkout(self.checkout, BRANCH)
            new_branch = None
        except FossilError:
            self.clone.open_checkout(self.checkout)
            new_branch = BRANCH
        (self.checkout / "ci.py").write_text(CI_SCRIPT)
        (self.checkout / "README.txt").write_text(f"A demo check-in, {time.ctime()}\n")
        checkin = self.clone.commit(self.checkout, "A demo check-in for the CI record", branch=new_branch)
        self.say(f"  check-in        {checkin[:12]} on {BRANCH} by {self.admin}")
        verdict = self._wait(lambda: self._ci_verdict(checkin), "its ci verdict")
        self.say(f"  ci verdict      {verdict} (tag ci on {checkin[:12]}, by {self.config.node_user})")
        self.say(f"                  unit ocx-{self.node[:12]}-{record[:12]}-{checkin[:12]}.service; "
                 f"the record stays open until stopped")

    def session(self) -> None:
        user = f"demo-{secrets.token_hex(2)}"
        record = self.record(runner=RUNNER, user=user, objective="Say what you were asked", budget={"wall": "2m"})
        self.say(f"  session record  {record[:12]}, runner {RUNNER}, as {user}: "
                 f"{self.config.url}/forumpost/{record[:12]}")
        outcome, note = self._wait(lambda: self._response(record), "its response")
        unit = f"ocx-{self.node[:12]}-{record[:12]}.service"
        self.say(f"  response        {outcome}: {note}")
        self.say(f"                  what it printed: journalctl -u {unit}")

    def _opened(self, record: str) -> bool:
        return RecordDir.of(self.config, record).exists() or bool(self._response(record))

    def _ci_verdict(self, checkin: str) -> str | None:
        with Repository(self.config.repository) as repository:
            for change in repository.tag_history(checkin, ["ci"]):
                if change.sender.login == self.config.node_user and parse_verdict(change.value or ""):
                    return change.value
        return None

    def _response(self, record: str) -> tuple[str | None, str | None] | None:
        with Repository(self.config.repository) as repository:
            for post in repository.thread(record):
                message = find_message(post.body)
                if (message and message.get("kind") == "response" and message.get("answers") == record
                        and post.sender.login == self.config.node_user):
                    return message.get("outcome"), message.get("note")
        return None

    def _wait(self, check: Callable[[], Found | None], what: str) -> Found:
        deadline = time.monotonic() + WAIT_SECONDS
        while time.monotonic() < deadline:
            found = check()
            if found:
                return found
            time.sleep(0.3)
        raise TimeoutError(f"waited {WAIT_SECONDS} s for {what}: see journalctl -u ocx-node@{self.config.name}")
