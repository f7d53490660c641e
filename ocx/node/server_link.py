"""A login's link to the server's node, through its page (D37): the node
user's, for everything a node elsewhere asks; an admin's, to register one.

Logged in through Fossil's /login (the password never on a command line,
D41) and kept by its cookie; a change carries the page's token for that
session (D43), fetched once. The node user's cookie and token are kept in
a root-only file in the node's state, so the node's passes, its runs'
preparations, its tool sockets and its follower share one login instead of
each logging in again; a cookie Fossil no longer takes (its expiry, a new
password) makes one new login.
"""
from __future__ import annotations

import json
import os
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ..fossil.web import LoginRefused, WebError, WebSession
from ..protocol.errors import FieldError, OcxError  # errors.py alone: no pydantic for a run's preparation
from .json_answers import JsonObject

if TYPE_CHECKING:  # pydantic's: not imported for a run's preparation
    from .config import NodeConfig

PAGE = "/ext/ocx"
WAIT_SLACK = 30.0  # beyond the page's own wait, before a held request counts as lost


class ServerRefused(FieldError):
    """The server's node refused the request, naming the field (D8's shape)."""


class Unreachable(OcxError, ConnectionError):
    """The server did not answer as OCX's page does: down, cut off (D39), or no OCX there."""


class LoginNotTaken(Unreachable):
    """The server answered, and Fossil takes neither the node user nor its password (401): the node
    taken off the list or replaced. Its passes wait as for a cut; its follower stops asking (D38)."""


@dataclass
class ServerLink:
    url: str
    login: str
    password: str = field(repr=False)
    timeout: float = 30.0
    kept: Path | None = None  # where the session's cookie and token are kept (0600), if anywhere
    _session: WebSession | None = field(default=None, repr=False)
    requests: int = 0  # HTTP requests this link made, its login included (each is a round trip on the way)
    asked: dict[str, int] = field(default_factory=dict, repr=False)  # its questions by name (`receipts`, `page`...)
    _token: str | None = field(default=None, repr=False)

    @classmethod
    def of_node(cls, config: NodeConfig) -> ServerLink:
        """CONFIG's node user (a node elsewhere's configuration), its password read from root's file."""
        return cls(config.url, config.node_user, config.node_password(), kept=session_file(config.state_dir))

    def session(self) -> WebSession:
        if self._session is None:
            saved = self._saved()
            if saved is not None:
                self._session = WebSession(self.url, self.login, None, cookie=saved["cookie"], timeout=self.timeout)
                self._token = saved.get("token")
            else:
                self.requests += 1
                self._session = WebSession(self.url, self.login, self.password, timeout=self.timeout)
                self._token = None
                self._keep()
        return self._session

    def _saved(self) -> JsonObject | None:
        if self.kept is None:
            return None
        try:
            saved = json.loads(self.kept.read_text())
        except (OSError, ValueError):
            return None
        return saved if isinstance(saved, dict) and saved.get("login") == self.login and saved.get("cookie") else None

    def _keep(self) -> None:
        if self.kept is None or self._session is None or not self._session.cookie():
            return
        temporary = self.kept.with_name(f".{self.kept.name}.{os.getpid()}")
        with os.fdopen(os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as out:
            json.dump({"login": self.login, "cookie": self._session.cookie(), "token": self._token}, out)
        os.replace(temporary, self.kept)

    def _forget(self) -> None:
        self._session, self._token = None, None
        if self.kept is not None:
            self.kept.unlink(missing_ok=True)

    def _call(self, op: str, params: list[tuple[str, str]], payload: JsonObject | None,
              timeout: float | None) -> JsonObject:
        try:
            return self._ask(op, params, payload, timeout)
        except LoginRefused as error:  # reached, and refused: no cut to wait out, no check to run (D38)
            raise LoginNotTaken(str(error)) from error
        except WebError as error:
            if self.kept is not None:  # D38, D39: the follower runs the check once the server answers it again
                lost_mark(self.kept.parent).touch()
            raise Unreachable(str(error)) from error

    def _ask(self, op: str, params: list[tuple[str, str]], payload: JsonObject | None,
             timeout: float | None) -> JsonObject:
        query = urllib.parse.urlencode([("json", ""), ("node", op), *params])
        for attempt in (1, 2):
            session = self.session()  # first: a kept session brings its token, and no request is made for one
            if payload is not None and self._token is None:
                self.requests += 1
                self._token = str(session.page_json(PAGE + "?json").get("token", ""))
                self._keep()
            body = None if payload is None else {**payload, "token": self._token}
            self.requests += 1
            self.asked[op] = self.asked.get(op, 0) + 1
            answer = session.page_json(f"{PAGE}?{query}", body, timeout=timeout)
            refused = answer.get("refused")
            if isinstance(refused, dict) and refused.get("field") == "caller" and attempt == 1:
                self._forget()  # its cookie lapsed, or the token is stale: log in again, once
                continue
            if isinstance(refused, dict):
                raise ServerRefused(str(refused.get("field", "")), str(refused.get("why", "")))
            return answer
        raise AssertionError("unreachable")

    # -- what a node elsewhere asks (web_nodes.py) --------------------------------

    def whoami(self) -> JsonObject:
        """Its own registration (D36), the server's server-code and its newest receipt."""
        return self._call("self", [], None, None)

    def receipts(self, since: int, wait: float = 0.0, admins: str | None = None,
                 facts: bool = False) -> JsonObject:
        """FACTS: with each record naming this node, what `record` answers (the follower's held request)."""
        params = [("since", str(since)), ("wait", str(wait))] + ([("admins", admins)] if admins else [])
        params += [("facts", "1")] if facts else []
        return self._call("receipts", params, None, timeout=wait + WAIT_SLACK if wait else None)

    def answer(self, record: str) -> JsonObject:
        return self._call("answer", [("record", record)], None, None)

    def record(self, record: str) -> JsonObject:
        """All a node asks before it acts on RECORD, in one request: its answer,
        its runner's page, its user's letters and node, who holds admin."""
        return self._call("record", [("record", record)], None, None)

    def runner_page(self, runner: str) -> JsonObject | None:
        return self._call("page", [("runner", runner)], None, None).get("page")

    def users(self, logins: list[str], *, owners: bool = False) -> JsonObject:
        params = [("login", login) for login in logins] + ([("owners", "1")] if owners else [])
        return self._call("users", params, None, None)

    def sender(self, artifact: str) -> str | None:
        """Who sent ARTIFACT (a full hash) to the served repository, None when it holds no such (D37)."""
        found = self._call("sender", [("artifact", artifact)], None, None).get("sender")
        return str(found) if isinstance(found, str) else None

    def releases(self, timeout: float | None = None) -> JsonObject:
        """The server's node's name, node user and last accept or roll-back, and this node's releases
        thread, read from the served repository (D46, D48: node/serving/release_facts.py)."""
        return self._call("releases", [], None, timeout)

    def release_requests(self) -> JsonObject:
        """The posts waiting in this node's releases thread, read on the served repository (D46, D48)."""
        return self._call("release-requests", [], None, None)

    def release_request(self, post: str) -> JsonObject:
        """POST read again as a request for this node, with its sender's letters now (D46, D48)."""
        return self._call("release-request", [("post", post)], None, None)

    def gate(self, checkin: str) -> str:
        """The full hash of CHECKIN when it passes D25's gate on the served repository; ServerRefused
        naming `checkin` otherwise (the verdicts' senders are the server's to say, D37)."""
        return str(self._call("gate", [("checkin", checkin)], None, None)["checkin"])

    def grant(self, record: str) -> tuple[str, str]:
        answer = self._call("grant", [], {"record": record}, None)
        return str(answer["user"]), str(answer["password"])

    def withdraw(self, record: str) -> str:
        return str(self._call("withdraw", [], {"record": record}, None)["user"])

    def register(self, name: str, node_user: str, server_code: str | None, enforces: list[str], *,
                 password: bool, replace: bool = False) -> JsonObject:
        """As an admin: make or update node NAME's node user; its new password when asked (`password`),
        and with REPLACE, what the node registered under NAME before left (`replaced`, serving/leaving.py)."""
        return self._call("register", [], {"name": name, "node_user": node_user, "server_code": server_code,
                                           "enforces": enforces, "password": password, "replace": replace}, None)

    def name_code(self, server_code: str) -> JsonObject:
        """As a node user registered with no server-code (a join): its clone's, once."""
        return self._call("code", [], {"server_code": server_code}, None)


def join(url: str, join_token: str, name: str, node_user: str, server_code: str | None, enforces: list[str], *,
         timeout: float = 30.0) -> str:
    """With a join token an admin made on the server's page, and no login (the page sees `nobody`):
    node NAME's node user made or given a new password, which is returned (web_joining.py)."""
    return str(join_answer(url, join_token, name, node_user, server_code, enforces, timeout=timeout)["password"])


def join_answer(url: str, join_token: str, name: str, node_user: str, server_code: str | None, enforces: list[str],
                *, timeout: float = 30.0) -> JsonObject:
    """join's whole answer: the password, and what a node it replaced left (`replaced`)."""
    session = WebSession(url, "nobody", None, cookie="", timeout=timeout)
    token = str(session.page_json(PAGE + "?json").get("token", ""))  # D43: nobody's, for this one POST
    answer = session.page_json(f"{PAGE}?json&node=join", {"join_token": join_token, "name": name,
                                                          "node_user": node_user, "server_code": server_code,
                                                          "enforces": enforces, "token": token})
    refused = answer.get("refused")
    if isinstance(refused, dict):
        raise ServerRefused(str(refused.get("field", "")), str(refused.get("why", "")))
    return answer


def lost_mark(state_dir: Path) -> Path:
    """Left by any of the node's processes that could not reach the server: the follower, once it
    reaches it again, takes it away and runs the deliberate check (D38), so what waited is done."""
    return Path(state_dir) / "server-lost"


HANDED_FRESH = 10.0  # seconds: an older answer handed over is asked again


def hand_over(state_dir: Path, since: int, answer: JsonObject) -> None:
    """The follower's answer of receipts after SINCE, for the pass it wakes (D38): that pass then
    asks the server one request fewer before it acts. Root's file in the node's private state."""
    from ..files import write_atomically

    write_atomically(Path(state_dir) / "receipts-handed.json", json.dumps({"since": since, "answer": answer}), 0o600)


def take_handed(state_dir: Path, since: int) -> JsonObject | None:
    """The answer handed over for receipts after SINCE, once (it is removed), if it is fresh;
    else None, and the pass asks the server itself."""
    import time

    path = Path(state_dir) / "receipts-handed.json"
    try:
        fresh = time.time() - path.stat().st_mtime < HANDED_FRESH
        handed = json.loads(path.read_text())
        path.unlink()
    except (OSError, ValueError):
        return None
    if not fresh or not isinstance(handed, dict) or handed.get("since") != since:
        return None
    answer = handed.get("answer")
    return answer if isinstance(answer, dict) else None


def session_file(state_dir: Path) -> Path:
    """Where a node elsewhere keeps its node user's session (root's, 0600, in its private state)."""
    return Path(state_dir) / "server-session.json"


__all__ = ["LoginNotTaken", "ServerRefused", "ServerLink", "Unreachable", "WebError", "hand_over", "join",
           "join_answer", "lost_mark", "session_file", "take_handed"]
