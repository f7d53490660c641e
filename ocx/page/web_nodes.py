"""The page's door for nodes elsewhere (D36-D39): `/ext/ocx?json&node=OP`.

A node elsewhere logs in to the server's Fossil as its own node user (its
password is root's on its host) and keeps the cookie; Fossil authenticates
it and passes the page its login. Only a registered node user is answered
(ocx/node/serving/registry.py), and only about itself; `register` only an
admin's (or setup's) session. A change (grant, withdraw, register) is taken
as every change of the page is: a POST with the viewer's token (D30, D43).
Each answer is JSON: what the operation returns, or `{"refused": {"field",
"why"}}`.

    GET  self                        its own registration, the server's server-code and its last receipt
    GET  receipts&since=N[&wait=S][&admins=D][&facts=1]   the receipts after N, held up to S (<= 60)
                                     seconds, or until who holds admin differs from digest D (D24, D37,
                                     D38); with facts, what `record` answers for each record naming it
    GET  answer&record=H             the record's answer in the served repository, if any (C4, D31, D39)
    GET  record&record=H             its answer, its runner's page, its user's letters and node, the admins
    GET  page&runner=NAME            the runner page an admin or setup last wrote (D14)
    GET  users&login=L...[&owners=1] logins' letters, the node each works for; the admins (D24, D37, D40)
    GET  sender&artifact=H           who sent artifact H to the served repository (rcvfrom), or null: what
                                     `audit` on a node elsewhere refuses by (D25, D37)
    GET  releases                    the server's node's name, node user and last accept or roll-back, and
                                     this node's releases thread (D46, D48: node/serving/release_facts.py)
    GET  release-requests            the posts waiting in this node's releases thread, each read as a request
                                     with its sender and that sender's letters now (D46), or as talk
    GET  release-request&post=H      post H read so again: what the node's command carries out
    GET  gate&checkin=PREFIX         the check-in's full hash when it passes D25's gate here, else refused
                                     naming `checkin` (D45, D48: its own admin's stage, or a followed accept)
    POST grant     {record, token}   its run user's letters and a new password, in this answer only (C5, D37)
    POST withdraw  {record, token}   its run user's letters taken back (C4)
    POST register  {name, node_user, server_code, enforces, password, [replace], token}   an admin adds a
                                     node (D36); REPLACE: another server-code for a registered name
    POST join-token {name, token}    an admin makes a join token for node NAME, shown once (join_tokens.py)
    POST join {join_token, name, node_user, server_code, enforces, token}   any viewer, nobody too: the
                                     token's one registration of its one name; the node user's new password
    POST code {server_code, token}   a node user registered with no server-code yet (a join: its clone is
                                     made after) names its clone's, once; changing one takes an admin
"""
from __future__ import annotations

import json
import urllib.parse
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..fossil.repository import Repository
from ..protocol.numerals import decimal_number, whole_number
from .web_viewer import Node, refusal, viewer

if TYPE_CHECKING:
    from ..node.config import NodeConfig
    from ..node.serving.registry import NodeEntry

# What each operation answers, as JSON: its result, or {"refused": {"field", "why"}}.
Answer = dict[str, Any]

READS = ("self", "receipts", "answer", "record", "page", "users", "sender", "releases", "gate",
         "release-requests", "release-request")
CHANGES = ("grant", "withdraw", "register", "join-token", "join", "code")


def _refused(field: str, why: str) -> Answer:
    return {"refused": {"field": field, "why": why}}


def answer(env: Mapping[str, str], node: Node, body: str) -> Answer:
    from ..node.serving import registry

    query = urllib.parse.parse_qs(env.get("QUERY_STRING", ""), keep_blank_values=True)
    op = (query.get("node") or [""])[-1]
    served, config = env.get("FOSSIL_REPOSITORY"), node.config
    if not served or config is None or getattr(config, "elsewhere", False):
        return _refused("node", "this page serves no node's repository: nodes elsewhere ask the server's node")
    if op not in READS + CHANGES:
        return _refused("node", f"{op!r} is not one of {', '.join(READS + CHANGES)}")
    call: dict[str, Any] = {}
    if op in CHANGES:
        if env.get("REQUEST_METHOD") != "POST":
            return _refused("node", f"{op} is a change: POST it with the token")
        try:
            parsed = json.loads(body or "{}")
        except ValueError:
            return _refused("input", "a change is one JSON object")
        if not isinstance(parsed, dict):
            return _refused("input", "a change is one JSON object")
        call = parsed
        refused = refusal(env, node, str(call.get("token", "")))
        if refused is not None:
            return _refused("caller", refused)
    home = registry.nodes_dir(served) / "home"
    if op == "register":
        return _register(env, served, config, call, home)
    if op in ("join-token", "join"):
        from .web_joining import join, make_join_token

        return make_join_token(env, served, call) if op == "join-token" else join(served, config, call, home)
    with Repository(served) as repository:
        entry = registry.node_of_user(repository, viewer(env))
        own = repository.server_code
    if entry is not None and not registry.holds_own_identity(entry, own, config.node_user):
        # Registered before every way in checked it (node_identity): it answers as no node at all.
        return _refused("caller", f"node {entry.name}'s registration names the server's own node or no login a "
                                  "node user may have: an admin registers it again (D29, D36)")
    if op == "code" and entry is not None:
        from .web_joining import name_code

        return name_code(served, entry, config, call, home)
    if entry is None or not entry.server_code:
        return _refused("caller", f"{viewer(env)} is not the node user of a registered node elsewhere (D36, D37)")
    registry.hear(served, entry.node_user)
    if op == "receipts":  # the held request: the protocol's models only when asked for records' facts
        return _receipts(query, served, entry, own)
    from ..protocol.errors import FieldError

    try:
        return _node_op(op, query, call, served, entry, own, config, home)
    except FieldError as error:
        return _refused(error.field, error.why)


def _one(query: Mapping[str, list[str]], name: str) -> str:
    values = query.get(name) or [""]
    return values[-1]


def _receipts(query: Mapping[str, list[str]], served: str, entry: NodeEntry, own: str) -> Answer:
    from . import receipts

    try:
        since, wait = whole_number(_one(query, "since") or "0"), decimal_number(_one(query, "wait") or "0")
    except ValueError:
        return _refused("since", "since is a receipt's number and wait a number of seconds")
    facts = _one(query, "facts") == "1"
    if facts:  # loaded before the wait: what arrives is answered at once
        from ..node.serving import questions
    answer = receipts.wait_for_receipts(served, since, wait, admins=_one(query, "admins") or None)
    if facts and answer["receipts"]:
        with Repository(served) as repository:
            answer["records"] = questions.facts_of_records(repository, entry, answer["receipts"], own)
    return answer


def _node_op(op: str, query: Mapping[str, list[str]], call: Mapping[str, Any], served: str, entry: NodeEntry,
             own: str, config: NodeConfig, home: Path) -> Answer:
    from ..node.serving import grants, questions
    from ..protocol.errors import FieldError

    if op in ("grant", "withdraw"):
        record = call.get("record")
        if not isinstance(record, str) or len(record) not in (40, 64):
            raise FieldError("record", "a record's full hash")
        if op == "withdraw":
            return {"user": grants.withdraw(served, entry, record, home=home)}
        login, password = grants.grant(served, entry, record, own_server_code=own, own_node_user=config.node_user,
                                       home=home)
        return {"user": login, "password": password}
    with Repository(served) as repository:
        if op == "self":
            return {"node": entry.json(), "server": own, "last": repository.max_rcvid()}
        if op == "answer":
            return questions.answer_of(repository, entry, _one(query, "record"))
        if op == "record":
            return questions.record_facts(repository, entry, _one(query, "record"), own)
        if op == "page":
            return questions.runner_page(repository, _one(query, "runner"))
        if op == "sender":
            return _sender(repository, _one(query, "artifact"))
        if op in ("releases", "release-requests", "release-request"):  # D46, D48: with the served senders
            from ..node.serving import release_facts

            if op == "release-request":
                return release_facts.request_of(repository, entry, _one(query, "post"))
            return release_facts.releases_of(repository, entry, config) if op == "releases" \
                else release_facts.requests_of(repository, entry)
        if op == "gate":
            return _gate(repository, _one(query, "checkin"))
        return questions.users(repository, query.get("login") or [], own, owners=_one(query, "owners") == "1")


def _sender(repository: Repository, artifact: str) -> Answer:
    """Any receipt's sender is what `receipts` already tells a registered node user; this one by hash."""
    from ..fossil.errors import UnknownArtifact
    from ..protocol.errors import FieldError
    from ..protocol.hashes import is_full_hash

    if not is_full_hash(artifact):
        raise FieldError("artifact", "an artifact's full hash")
    try:
        return {"artifact": artifact, "sender": repository.sender(artifact).login}
    except UnknownArtifact:
        return {"artifact": artifact, "sender": None}


def _gate(repository: Repository, prefix: str) -> Answer:
    """The full hash of the check-in PREFIX names when it passes D25's gate on the served repository
    (D45, D48: a clone would count no verdict, every sender its own), else refused naming `checkin`."""
    from ..protocol.errors import FieldError
    from ..reading.release_gate import passing_checkin

    if not 10 <= len(prefix) <= 64 or set(prefix) - set("0123456789abcdef"):
        raise FieldError("checkin", "10 to 64 lower-case hex digits of a check-in's hash")
    try:
        return {"checkin": passing_checkin(repository, prefix)}
    except LookupError as error:  # NotPassed, NotACheckin: each names the check-in and why
        raise FieldError("checkin", str(error).removeprefix("checkin: ")) from None


def _register(env: Mapping[str, str], served: str, config: NodeConfig, call: Mapping[str, Any],
              home: Path) -> Answer:
    from ..node.serving import registry
    from ..protocol.admission import holds_admin
    from ..protocol.errors import FieldError

    if not holds_admin(env.get("FOSSIL_CAPABILITIES", "")):
        return _refused("caller", f"{viewer(env)} holds neither admin nor setup: only they add a node (D36)")
    name, login, code = call.get("name"), call.get("node_user"), call.get("server_code")
    enforces = call.get("enforces") or []
    if not (isinstance(name, str) and name and isinstance(login, str) and login
            and (code is None or isinstance(code, str)) and isinstance(enforces, list)):
        return _refused("input", "register takes name, node_user, server_code (or null), enforces, password")
    entry = registry.NodeEntry(name, login, code, tuple(str(e) for e in enforces))
    try:
        done = registry.register(served, entry, own_node_user=config.node_user,
                                 new_password=bool(call.get("password")), home=home,
                                 replace=call.get("replace") is True)
    except FieldError as error:
        return _refused(error.field, error.why)
    return {"node_user": login, "password": done.password, "replaced": done.replaced and done.replaced.json()}
