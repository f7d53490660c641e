"""Tools called from anywhere: sent to the node's web page as the caller (D22, D30).

Off the node's host, every default and check a tool makes depends on what
only the node knows (its server-code, who holds admin or setup now, the
runner pages admins sent, every artifact's sender, whether a record is
answered, what the node enforces); a caller's clone knows none of it. So
the CLI and MCP log in to the node's Fossil server with the caller's
password (Fossil authenticates the caller), and send the typed input to the
node's page, `/ext/ocx?json`, in that session: the page runs the one tool there,
as that login, and answers in the one shape (ocx/page/web.py). A call
leaves nothing on disk; the session lives as long as the process (an MCP
server keeps it for all its calls).
"""
from __future__ import annotations

from typing import Any

from ..fossil.web import WebError, WebSession
from .credentials import Credentials
from .framework import Answer, Stopped

PAGE = "/ext/ocx?json"


def _stopped(name: str, why: str) -> dict[str, Any]:
    return Answer(tool=name, dry_run=False, log=[], stopped=Stopped(field="caller", why=why)).model_dump(mode="json")


class RemoteTools:
    """One caller's calls to one node's page."""

    def __init__(self, credentials: Credentials, page: str = PAGE):
        self.credentials, self.page = credentials, page
        self._session: WebSession | None = None

    def _logged_in(self) -> WebSession:
        if self._session is None:
            given = self.credentials
            self._session = WebSession(given.url, given.login, given.password)
        return self._session

    def call(self, name: str, raw: object) -> dict[str, Any]:
        given = self.credentials
        if given.password is None:
            return _stopped(name, given.why)
        try:
            session = self._logged_in()
            token = session.page_json(self.page).get("token", "")
            answer = session.page_json(self.page, {"tool": name, "input": raw, "token": token})
        except (WebError, OSError) as error:
            self._session = None  # a later call logs in again
            return _stopped(name, f"{error} (the node's page at {given.url}{self.page}, D30)")
        try:
            return Answer.model_validate(answer).model_dump(mode="json")
        except ValueError:
            return _stopped(name, f"{given.url}{self.page} answered something other than a tool's answer")
