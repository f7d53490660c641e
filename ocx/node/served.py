"""What only the served repository knows, for this node (D37): who sent
each receipt and the letters Fossil gives them, whether a record is
answered, the runner pages admins wrote, logins' letters and the node each
run user works for; and the only hand allowed to change a run user's
letters and password.

The server's node reads its own repository file and writes with `fossil`
(Here). A node elsewhere reads the artifacts themselves from its clone,
which cannot know senders (it names itself for everything it pulled), and
asks the rest of the server's node through its page (Elsewhere, over
node/server_link.py). The node's code is the same on both; this is where
they differ (architecture: "the same code with a different source of
senders").
"""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from itertools import takewhile
from pathlib import Path
from typing import TYPE_CHECKING

from ..fossil.artifacts import Receipt, ReceivedArtifact
from ..fossil.errors import UnknownUser
from ..fossil.repository import Repository

if TYPE_CHECKING:
    from .config import NodeConfig
    from .json_answers import JsonObject
    from .server_link import ServerLink

ACTED_ON = ("f", "t", "ci")  # what can be a message or a delivery: the clone must hold these first


@dataclass(frozen=True)
class Answer:
    """A record's answer as the served repository holds it (C4, D31)."""

    outcome: str
    note: str = ""


@dataclass
class Here:
    """The server's node: its repository file is the served one."""

    config: NodeConfig
    elsewhere: bool = False

    def receipts(self, repository: Repository, since: int) -> tuple[list[Receipt], dict[str, frozenset[str]], bool]:
        """Settled receipts after SINCE, each sender's letters, and whether more wait (crosslinking)."""
        found = repository.receipts_since(since)
        ready = list(takewhile(repository.settled, found))
        letters = {r.sender: _capabilities(repository, r.sender) for r in ready if r.sender is not None}
        return ready, letters, len(ready) < len(found)

    def receipt(self, repository: Repository, rcvid: int) -> tuple[Receipt | None, dict[str, frozenset[str]]]:
        """Receipt RCVID read again (a retry, C4), and its sender's letters."""
        found = repository.receipt(rcvid)
        letters = {found.sender: _capabilities(repository, found.sender)} if found and found.sender else {}
        return found, letters

    def answer(self, repository: Repository, place_kind: str, place: str, record_hash: str, *, node: str,
               received: float, wall_seconds: int) -> Answer | None:
        from .arrivals import answer_in_place

        found = answer_in_place(repository, place_kind, place, record_hash, node=node,
                                node_user=self.config.node_user, received=received, wall_seconds=wall_seconds)
        return None if found is None else Answer(found.outcome.value, found.note)

    questions: dict[str, int] = field(default_factory=dict)  # none: the served repository is this host's file

    def runner_page(self, repository: Repository, name: str) -> tuple[str, str] | None:
        version = repository.wiki_latest_by_admin(name)
        return None if version is None else (version.hash, version.content)

    def letters(self, repository: Repository, login: str) -> str | None:
        try:
            return repository.user(login).capabilities
        except UnknownUser:
            return None

    def works_for(self, repository: Repository, login: str) -> str | None:
        """For this node's admission: the node LOGIN works for when it may be another (D37)."""
        from .serving.grants import nodes_known
        from .serving.ownership import works_for

        own = repository.server_code
        return works_for(repository, login, nodes_known(repository, own), other_than=own)

    def capabilities(self, repository: Repository, login: str) -> frozenset[str]:
        return _capabilities(repository, login)

    def admins(self, repository: Repository) -> frozenset[str]:
        return repository.admins()

    def letters_now(self, repository: Repository, logins: list[str]) -> tuple[dict[str, str | None], frozenset[str]]:
        """LOGINS' own letters (None: no such login) and who holds admin or setup, from one read of the
        user table: the node asks it on each pass for every open record's run user (D24)."""
        from ..fossil import capabilities

        rows = {u.login: u.capabilities for u in repository.users()}
        admins = frozenset(login for login in rows
                           if capabilities.holds_admin(capabilities.effective_capabilities(login, rows)))
        return {login: rows.get(login) for login in logins}, admins

    def withdraw(self, record_hash: str, login: str) -> None:
        """A user that does not exist (its run was stopped before its preparation made it) or holds
        nothing already is done: read first, so an answer writes no more than it must."""
        from ..fossil import admin
        from ..fossil.fossil_failure import Cause, FossilError

        with Repository(self.config.repository) as repository:
            try:
                if not repository.user(login).capabilities:
                    return
            except UnknownUser:
                return
        try:
            admin.withdraw_capabilities(self.config.repository, login, home=self.config.state_dir / "home")
        except FossilError as error:
            if error.cause is not Cause.NO_SUCH_USER:
                raise


@dataclass
class Elsewhere:
    """A node elsewhere: its repository file is a clone; the server's node answers the rest."""

    config: NodeConfig
    elsewhere: bool = True
    _link: ServerLink | None = field(default=None, repr=False)
    # What the server said of each record this pass (its `record` answer): admission asks it all at once.
    _facts: dict[str, JsonObject] = field(default_factory=dict, repr=False)
    # The same, carried by the answer of receipts that woke this pass (D38): taken once, by the
    # record's admission; every later question, a response's above all (C4), asks afresh.
    _carried: dict[str, JsonObject] = field(default_factory=dict, repr=False)

    @property
    def questions(self) -> dict[str, int]:
        """The questions asked of the server's node so far, by name (a pass's log says which it asked)."""
        return {} if self._link is None else dict(self._link.asked)

    def link(self) -> ServerLink:
        if self._link is None:
            from .server_link import ServerLink

            self._link = ServerLink.of_node(self.config)
        return self._link

    def receipts(self, repository: Repository, since: int) -> tuple[list[Receipt], dict[str, frozenset[str]], bool]:
        """The server's receipts after SINCE (D37), up to the first whose
        artifacts the clone does not hold even after a pull."""
        from .server_link import take_handed

        self._facts.clear()  # a new pass: nothing the server said before is taken as still so
        # D38: the answer that woke this pass, handed over by the follower, when it starts where this
        # pass does; a pass reads again before it stops (D26), and that read asks the server.
        answer = take_handed(self.config.state_dir, since) or self.link().receipts(since)
        self._carried = dict(answer.get("records") or {})
        found = self._listed(answer)
        letters = {login: frozenset(held) for login, held in answer["capabilities"].items()}
        ready = self._held(repository, found)
        if len(ready) < len(found):
            self.pull()
            ready = self._held(repository, found)
        return ready, letters, len(ready) < len(found) or bool(answer.get("more"))

    def receipt(self, repository: Repository, rcvid: int) -> tuple[Receipt | None, dict[str, frozenset[str]]]:
        """The server's receipt RCVID read again (a retry, C4), once the clone holds it; else None."""
        answer = self.link().receipts(rcvid - 1)
        found = [r for r in self._listed(answer) if r.rcvid == rcvid][:1]
        if found and not self._held(repository, found):
            self.pull()
        letters = {login: frozenset(held) for login, held in answer["capabilities"].items()}
        return (found[0] if found and self._held(repository, found) else None), letters

    @staticmethod
    def _listed(answer: JsonObject) -> list[Receipt]:
        return [Receipt(r["rcvid"], r["sender"], None, datetime.fromtimestamp(r["time"], UTC),
                        tuple(ReceivedArtifact(h, kind, bool(private)) for h, kind, private in r["artifacts"]))
                for r in answer["receipts"]]

    @staticmethod
    def _held(repository: Repository, receipts: list[Receipt]) -> list[Receipt]:
        wanted = [a.hash for r in receipts for a in r.artifacts if a.event_type in ACTED_ON and not a.private]
        held = repository.holding(wanted)
        return list(takewhile(lambda r: all(a.hash in held for a in r.artifacts
                                            if a.event_type in ACTED_ON and not a.private), receipts))

    def pull(self) -> None:
        """The node's clone brought up to the server, as its node user. One pull at a time on this
        host (the follower, a pass, a push may each want one): a second waits and then costs little."""
        import fcntl

        from ..fossil.sync import CallerClone

        with open(self.config.state_dir / "pull.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            CallerClone(Path(self.config.repository), self.config.node_user, self.config.state_dir / "home").pull()

    def answer(self, repository: Repository, place_kind: str, place: str, record_hash: str, *, node: str,
               received: float, wall_seconds: int) -> Answer | None:
        """Asked afresh every time (C4, D39: the server's answers first, before any response), but
        for the admission of a record the answer that woke this pass carried."""
        facts = self._carried.pop(record_hash, None) or self.link().record(record_hash)
        self._facts[record_hash] = facts
        found = facts.get("answer")
        return None if found is None else Answer(found["outcome"], found.get("note", ""))

    def _known(self, key: str, value: str) -> JsonObject | None:
        return next((facts for facts in self._facts.values() if facts.get(key) == value), None)

    def runner_page(self, repository: Repository, name: str) -> tuple[str, str] | None:
        from .serving.questions import RUNNER_PAGE_PREFIX

        runner = name.removeprefix(RUNNER_PAGE_PREFIX)
        known = self._known("runner", runner)
        found = known["page"] if known is not None else self.link().runner_page(runner)
        return None if found is None else (found["hash"], found["content"])

    def _user(self, login: str) -> JsonObject | None:
        known = self._known("login", login)
        found: JsonObject | None = (known["user"] if known is not None
                                    else self.link().users([login])["users"].get(login))
        return found

    def letters(self, repository: Repository, login: str) -> str | None:
        found = self._user(login)
        return None if found is None else found["letters"]

    def works_for(self, repository: Repository, login: str) -> str | None:
        known = self._known("login", login)
        owner: str | None = (known.get("works_for") if known is not None
                             else self.link().users([login], owners=True)["works_for"].get(login))
        return owner

    def capabilities(self, repository: Repository, login: str) -> frozenset[str]:
        found = self._user(login)
        return frozenset() if found is None else frozenset(found["capabilities"])

    def admins(self, repository: Repository) -> frozenset[str]:
        return frozenset(self.link().users([])["admins"])

    def letters_now(self, repository: Repository, logins: list[str]) -> tuple[dict[str, str | None], frozenset[str]]:
        """As Here's, from the server's node in one answer (D37)."""
        answer = self.link().users(sorted(set(logins)))
        found = answer["users"]
        return {login: (found.get(login) or {}).get("letters") for login in logins}, frozenset(answer["admins"])

    def withdraw(self, record_hash: str, login: str) -> None:
        self.link().withdraw(record_hash)

    def sender(self, repository: Repository, hash_: str) -> str | None:
        """Who sent HASH to the served repository: the server says (D37); the clone names itself."""
        return self.link().sender(hash_)


def _capabilities(repository: Repository, login: str | None) -> frozenset[str]:
    if login is None:
        return frozenset()
    try:
        return repository.effective_capabilities(login)
    except UnknownUser:  # a login deleted since: it holds nothing now
        return frozenset()


def served(config: NodeConfig) -> Here | Elsewhere:
    return Elsewhere(config) if config.elsewhere else Here(config)
