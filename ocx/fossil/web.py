"""Writing through Fossil's own web forms as a logged-in caller, so that the
repository records the caller as the SENDER (rcvfrom; D21, D22). Fossil has
no command that writes a forum post; only these forms do.

The only code that talks HTTP to Fossil's pages. Standard library only
(urllib, http.cookiejar): the hook's import time matters.
Every POST carries a Referer under the base URL: without it Fossil shows the
form again (200) and writes nothing (fossil-facts.md "Forum posts"). Tags
and a run's check-ins go by sync in the session (/xfer, `push_artifacts`):
the web page's viewer has a cookie, not a password (D30), and nobody's
password goes on a command line (D41).
"""
from __future__ import annotations

import hashlib
import http.client
import http.cookiejar
import json
import re
import secrets
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from ocx.fossil.forms import Form, form_posting_to
from ocx.fossil.manifest import ManifestError, parse, tag_change, unescape

from .errors import FossilLayerError

MARKDOWN = "text/x-markdown"
_ARTIFACT_LINK = re.compile(r"/artifact/([0-9a-f]{10,64})")


# Fossil 2.21 answers a write that meets another writer's lock with a 400
# page "Database error: database is locked" at once (SQLite's deadlock
# avoidance, no busy wait), having written nothing: seen under a burst of
# posts while runs set their users up. The same form is taken a moment later.
LOCKED_DELAYS = (0.2, 0.4, 0.8, 1.6, 2.0, 2.0)  # seconds, 7 s in all
# Fossil names no SQLite code in a page or a sync's error card, only
# sqlite3_errstr(SQLITE_BUSY) after "Database error: " (db.c): its only sign.
LOCKED_SAYS = "database is locked"


class WebError(FossilLayerError, RuntimeError):
    """A page answered otherwise than a successful write does. Typed for
    fossil/faults.py: `status`, the page's HTTP status when one answered;
    `locked`, Fossil's sync answered its database locked (SQLITE_BUSY); a
    connection that failed is its __cause__ (an OSError, with its errno)."""

    def __init__(self, message: str, *, status: int | None = None, locked: bool = False):
        super().__init__(message)
        self.status = status
        self.locked = locked


class LoginRefused(WebError):
    """Fossil answered 401: it takes neither the login nor its password; asking again changes nothing."""


@dataclass(frozen=True)
class Page:
    status: int
    location: str | None
    body: bytes

    @property
    def text(self) -> str:
        return self.body.decode("utf-8", errors="replace")


class _KeepRedirects(urllib.request.HTTPRedirectHandler):
    # Fossil's answer to a write is a 302 naming what it wrote: keep it.
    def redirect_request(self, *_args: object, **_kwargs: object) -> None:
        return None


def locked(page: Page) -> bool:
    """Fossil's 400 for a write that met another writer's lock (nothing written)."""
    return page.status == 400 and LOCKED_SAYS.encode() in page.body


class WebSession:
    """One caller logged in to one served repository."""

    def __init__(self, base_url: str, login: str, password: str | None, *, timeout: float = 30.0,
                 cookie: str | None = None):
        """Log in with PASSWORD; or, with COOKIE (a logged-in viewer's Cookie
        header, as Fossil passes it to an ext page, D30), act in that login."""
        self.base_url = base_url.rstrip("/")
        self.login = login
        self.timeout = timeout
        self._cookie_header = cookie
        self._cookies = http.cookiejar.CookieJar()
        self._opener = urllib.request.build_opener(
            urllib.request.HTTPCookieProcessor(self._cookies), _KeepRedirects()
        )
        if cookie is None:
            self._log_in(password or "")

    # -- HTTP ---------------------------------------------------------------

    def _request(self, path: str, fields: dict[str, str] | None = None, *, body: bytes | None = None,
                 content_type: str | None = None, timeout: float | None = None) -> Page:
        data = urllib.parse.urlencode(fields).encode() if fields is not None else body
        headers = {"Referer": self.base_url + "/", **({"Content-Type": content_type} if content_type else {})}
        if self._cookie_header:
            headers["Cookie"] = self._cookie_header
        request = urllib.request.Request(self.base_url + path, data=data, headers=headers)
        try:
            with self._opener.open(request, timeout=timeout or self.timeout) as answer:
                return Page(answer.status, answer.headers.get("Location"), answer.read())
        except urllib.error.HTTPError as answer:
            return Page(answer.code, answer.headers.get("Location"), answer.read())
        except urllib.error.URLError as exc:
            raise WebError(f"{self.base_url}{path}: {exc.reason}") from exc
        except (OSError, http.client.HTTPException) as exc:  # a timeout, a connection cut mid-answer
            raise WebError(f"{self.base_url}{path}: {type(exc).__name__}: {exc}") from exc

    def get(self, path: str) -> Page:
        return self._request(path)

    def post(self, path: str, fields: dict[str, str]) -> Page:
        return self._request(path, fields)

    def _form(self, page: Page, action: str, what: str) -> Form:
        form = form_posting_to(page.text, action) if page.status == 200 else None
        if form is None:
            raise WebError(f"{what}: no {action} form for {self.login} (HTTP {page.status}); missing capability?",
                           status=page.status)
        return form

    def _submit(self, form: Form, values: dict[str, str], what: str, *, chosen_only: bool = False) -> str:
        """Post FORM with every field it holds (or, CHOSEN_ONLY, every field
        but selects nobody chose), VALUES over them; the 302's Location is
        Fossil's sign that it wrote."""
        sent = form.chosen_fields() if chosen_only else form.fields
        for delay in (*LOCKED_DELAYS, None):
            page = self.post(urllib.parse.urlsplit(form.action).path, {**sent, **values})
            if delay is None or not locked(page):
                break
            time.sleep(delay)
        if page.status != 302 or not page.location:
            raise WebError(f"{what}: {self.login}'s submission was not accepted (HTTP {page.status})",
                           status=page.status)
        return page.location

    def cookie(self) -> str | None:
        """This session's login cookie as a Cookie header (`fossil-…=…`), to
        act in it again later without the password (a node elsewhere keeps it, D37)."""
        if self._cookie_header:
            return self._cookie_header
        found = [f"{c.name}={c.value}" for c in self._cookies if c.name.startswith("fossil-")]
        return found[0] if found else None

    def _log_in(self, password: str) -> None:
        page = self.post("/login", {"u": self.login, "p": password, "g": "/"})
        if page.status != 302 or not any(c.name.startswith("fossil-") for c in self._cookies):
            # 401 is Fossil's own answer to a login or password it does not take; anything else (a busy
            # server's error page, a proxy's) may pass, and stays a WebError.
            refused = LoginRefused if page.status == 401 else WebError
            raise refused(f"login as {self.login} at {self.base_url} failed (HTTP {page.status}): "
                          + ("Fossil took neither the login nor its password" if page.status == 401
                             else "no session was opened"), status=page.status)

    def full_hash(self, prefix: str) -> str:
        """The full hash of artifact PREFIX, from its raw bytes on the server
        (`/raw`, needs `o`), checked by hashing them: a session may not have
        the repository file."""
        page = self.get(f"/raw/{prefix}")
        if page.status != 200:
            raise WebError(f"/raw/{prefix}: HTTP {page.status}", status=page.status)
        for digest in (hashlib.sha3_256(page.body).hexdigest(), hashlib.sha1(page.body).hexdigest()):
            if digest.startswith(prefix):
                return digest
        raise WebError(f"/raw/{prefix} returned bytes whose hash does not begin with it")

    def page_json(self, path: str, payload: dict[str, Any] | None = None, *,
                  timeout: float | None = None) -> dict[str, Any]:
        """An ext page that answers JSON (OCX's own, D30): GET it, or POST
        PAYLOAD as JSON; its answer as data, WebError if it is none. TIMEOUT:
        for an answer the page holds (a node elsewhere's wait, D38)."""
        body = json.dumps(payload).encode() if payload is not None else None
        page = self._request(path, body=body, content_type="application/json" if body is not None else None,
                             timeout=timeout)
        try:
            answer = json.loads(page.body)
        except ValueError:
            answer = None
        if page.status != 200 or not isinstance(answer, dict):
            raise WebError(f"{self.base_url}{path} answered HTTP {page.status} without OCX's JSON: is OCX's page "
                           "installed there (ocx node init)?", status=page.status)
        return answer

    def raw(self, hash_: str) -> bytes:
        page = self.get(f"/raw/{hash_}")
        if page.status != 200:
            raise WebError(f"/raw/{hash_}: HTTP {page.status}", status=page.status)
        return page.body

    # -- artifacts by sync, in this session (D21, D30) ------------------------

    def push_artifacts(self, artifacts: list[tuple[str, bytes]], project_code: str) -> None:
        """Send whole ARTIFACTS, each (its full hash, its bytes), through
        Fossil's sync endpoint (/xfer) in this session, so the server records
        this login as their sender (rcvfrom, D21): Fossil 2.21 authenticates a sync request by its login cookie as
        it does a page. No clone, no `fossil` process, no password on any
        command line (D41). Needs `i`. Each goes under the name it is known
        by (SHA1 or SHA3-256), which the server checks against its bytes.
        WebError if the server refused any."""
        # A client's own code names the pushing repository; this session has none.
        body = f"push {secrets.token_hex(20)} {project_code}\n".encode()
        body += b"".join(f"file {h} {len(a)}\n".encode() + a for h, a in artifacts)
        page = self._request("/xfer", body=body, content_type="application/x-fossil-uncompressed")
        errors = [unescape(line[6:]) for line in page.text.splitlines() if line.startswith("error ")]
        if page.status != 200 or errors:
            raise WebError(f"push by {self.login}: the server refused it (HTTP {page.status}"
                           f"{': ' + '; '.join(errors) if errors else ''})", status=page.status,
                           locked=any(LOCKED_SAYS in error.lower() for error in errors))

    def push_tag(self, checkin: str, name: str, value: str | None, project_code: str) -> str:
        """Add tag NAME = VALUE on CHECKIN (a full hash) as this login, by sync
        in this session (push_artifacts). Fossil's forms cannot: /ci_edit
        writes a tag with no value. Returns the tag change's full hash."""
        artifact = tag_change(checkin, name, value, self.login, datetime.now(UTC))
        hash_ = hashlib.sha3_256(artifact).hexdigest()
        self.push_artifacts([(hash_, artifact)], project_code)
        if self.get(f"/raw/{hash_}").status != 200:
            raise WebError(f"tag {name} by {self.login}: the server did not keep it")
        return hash_

    # -- forum (D12) ------------------------------------------------------------

    def new_thread(self, title: str, body_markdown: str) -> str:
        """Start a thread; return its root post's full hash. Needs `3` (held for
        moderation) or `4` (published at once)."""
        form = self._form(self.get("/forumnew"), "/forume1", "new thread")
        location = self._submit(
            form,
            {"title": title, "mimetype": MARKDOWN, "content": body_markdown, "submit": "Submit"},
            "new thread",
        )
        return self.full_hash(_post_in(location))

    def reply(self, to_hash: str, body_markdown: str) -> str:
        """Reply to post TO_HASH; return the reply's full hash."""
        form = self._form(self.post("/forumedit", {"fpid": to_hash, "reply": "Reply"}), "/forume2", "reply")
        location = self._submit(
            form, {"mimetype": MARKDOWN, "content": body_markdown, "submit": "Submit"}, "reply"
        )
        return self.full_hash(_post_in(location))

    def edit(self, post_hash: str, body_markdown: str, title: str | None = None) -> str:
        """Edit one's own post (D9: an edit is never a message); return the
        edit's full hash. TITLE applies to a root post only."""
        form = self._form(self.post("/forumedit", {"fpid": post_hash, "edit": "Edit"}), "/forume2", "edit")
        values = {"content": body_markdown, "submit": "Submit", **({"title": title} if title else {})}
        return self.full_hash(_post_in(self._submit(form, values, "edit")))

    # -- tickets (D12) --------------------------------------------------------------

    def new_ticket(self, title: str, comment: str, fields: dict[str, str] | None = None) -> str:
        """File a ticket through /tktnew (needs `n`); return the ticket's id."""
        form = self._form(self.get("/tktnew"), "/tktnew", "new ticket")
        values = {"title": title, "icomment": comment, "mutype": "Markdown", **(fields or {})}
        location = self._submit(form, {**values, "submit": "Submit"}, "new ticket")
        match = re.search(r"/tktview/([0-9a-f]{40})", location)
        if match is None:
            raise WebError(f"new ticket: unexpected answer {location}")
        return match.group(1)

    def ticket_change(self, ticket: str, comment: str, fields: dict[str, str] | None = None) -> str:
        """Add COMMENT (and set FIELDS) on TICKET through /tktedit (needs `c`
        or `w`); return the change's full hash.

        Fossil's answer names only the ticket, so the change is found as the
        one artifact /tkthistory lists after the edit and not before, checked
        on its raw bytes: its K card is the ticket and its U card this login."""
        before = self._ticket_artifacts(ticket)
        form = self._form(self.get(f"/tktedit/{ticket}"), "/tktedit", "ticket change")
        values = {"icomment": comment, "mutype": "Markdown", **(fields or {})}
        # Only chosen fields: an unset select would otherwise set its first option.
        self._submit(form, {**values, "submit": "Submit"}, "ticket change", chosen_only=True)
        new = [p for p in self._ticket_artifacts(ticket) if p not in before]
        mine = [h for h in map(self.full_hash, new) if _is_change_by(self.raw(h), ticket, self.login)]
        if len(mine) != 1:
            raise WebError(f"ticket change on {ticket}: found {len(mine)} new changes by {self.login}")
        return mine[0]

    def _ticket_artifacts(self, ticket: str) -> list[str]:
        page = self.get(f"/tkthistory/{ticket}")
        if page.status != 200:
            raise WebError(f"/tkthistory/{ticket}: HTTP {page.status} (needs `r`)", status=page.status)
        return list(dict.fromkeys(_ARTIFACT_LINK.findall(page.text)))


def _post_in(location: str) -> str:
    match = re.search(r"/forumpost/([0-9a-f]{10,64})", location)
    if match is None:
        raise WebError(f"forum write: unexpected answer {location}")
    return match.group(1)


def _is_change_by(data: bytes, ticket: str, login: str) -> bool:
    try:
        card = parse(data)
    except (ManifestError, UnicodeDecodeError):
        return False
    return card.text("K") == ticket and card.user == login
