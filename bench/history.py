"""Years of history on top of click.fossil, for the benchmark: `python bench/history.py OUT [POSTS] [TAGS]`.

Copies ../shared/data/click.fossil (never written in place), gives its
admin a known password, adds people, then sends POSTS forum posts (default
20,000, in threads of about ten) and TAGS `audited`/`ci` tag changes
(default 10,000, most on the newest check-ins of `main`) through a real
`fossil server`, each artifact crafted here and pushed by sync (/xfer) in
the session of the login it is from, one artifact per request: each is its
own receipt with a real sender in rcvfrom (F2), as a web form's post or a
person's `fossil tag` push would be. About one post in fifty holds a
```json block (OCX messages for other nodes, and plain JSON), so readers
meet message-like text. Writes OUT and OUT.admin-password. Deterministic
but for the hashes (D card times are now).
"""
from __future__ import annotations

import hashlib
import json
import random
import shutil
import sqlite3
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ocx.fossil import admin  # noqa: E402
from ocx.fossil.manifest import escape  # noqa: E402
from ocx.fossil.program import serve  # noqa: E402
from ocx.fossil.web import WebSession  # noqa: E402

CLICK = ROOT.parent / "shared" / "data" / "click.fossil"
PEOPLE = [f"dev{i:02d}" for i in range(24)]  # post and check in (i4)
REVIEWERS = [f"reviewer{i:02d}" for i in range(12)]  # audit (i)
BOTS = ["ci-linux", "ci-mac", "ci-windows"]  # `ci` verdicts
OTHER_NODE = "5" * 40  # messages for a node elsewhere: never this node's
WORDS = ("the parser option group command context shell completion test flag prompt echo style path "
         "argument default help usage click decorator pass env var value type choice range file").split()


def stamp(when: datetime) -> str:
    return when.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3]


def closed(body: str) -> bytes:
    data = body.encode()
    return data + b"Z " + hashlib.md5(data).hexdigest().encode() + b"\n"


def forum_post(user: str, when: datetime, text: str, *, title: str | None = None, root: str | None = None,
               parent: str | None = None) -> bytes:
    """A forum post's cards as Fossil's web form writes them (fossil-facts.md)."""
    body = text.encode()
    cards = [f"D {stamp(when)}"] + ([f"G {root}"] if root else []) + ([f"H {escape(title)}"] if title else [])
    cards += ([f"I {parent}"] if parent else []) + ["N text/x-markdown", f"U {escape(user)}", f"W {len(body)}"]
    return closed("\n".join(cards) + "\n" + text + "\n")


def tag_change(user: str, when: datetime, target: str, name: str, value: str | None, cancel: bool = False) -> bytes:
    card = f"T -sym-{name} {target}" if cancel else f"T +sym-{name} {target} {escape(value or '')}"
    return closed(f"D {stamp(when)}\n{card}\nU {escape(user)}\n")


def sentence(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words)).capitalize() + "."


def post_text(rng: random.Random, n: int) -> str:
    text = "\n\n".join(sentence(rng, rng.randint(8, 40)) for _ in range(rng.randint(1, 5)))
    if n % 50 == 7:  # a message for another node: an OCX reader must parse it and pass it by
        message = {"ocx": 1, "kind": "record", "node": OTHER_NODE, "user": f"claude-{n:06x}"[:13],
                   "runner": "claude", "objective": sentence(rng, 10), "checkins": ["main"], "hears": ["admin"],
                   "remote": False, "restrict": {}, "sandbox": {"network": True, "read_only": [], "read_write": []},
                   "budget": {"wall": "1h"}}
        text += "\n\n```json\n" + json.dumps(message) + "\n```\n"
    elif n % 50 == 31:  # plain JSON in a post: not a message at all
        text += "\n\n```json\n" + json.dumps({"option": rng.choice(WORDS), "n": n}) + "\n```\n"
    return text


class Sender:
    def __init__(self, url: str, login: str, password: str, project_code: str):
        self.session = WebSession(url, login, password)
        self.login = login
        self.project_code = project_code

    def push(self, artifact: bytes) -> str:
        """One artifact in one sync request: its own receipt, from this login."""
        hash_ = hashlib.sha3_256(artifact).hexdigest()
        head = f"push {'0' * 40} {self.project_code}\nfile {hash_} {len(artifact)}\n".encode()
        page = self.session._request("/xfer", body=head + artifact, content_type="application/x-fossil-uncompressed")
        if page.status != 200 or "\nerror " in "\n" + page.text:
            raise RuntimeError(f"push by {self.login}: HTTP {page.status} {page.text[:300]}")
        return hash_


def checkins(path: Path) -> tuple[list[str], list[str], str]:
    """(main's check-ins newest first, every other check-in, the project code)."""
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        main = [h for (h,) in db.execute(
            "SELECT b.uuid FROM event e JOIN blob b ON b.rid=e.objid JOIN tagxref x ON x.rid=e.objid"
            " JOIN tag t ON t.tagid=x.tagid WHERE e.type='ci' AND t.tagname='branch' AND x.value='main'"
            " ORDER BY e.mtime DESC")]
        every = [h for (h,) in db.execute("SELECT b.uuid FROM event e JOIN blob b ON b.rid=e.objid WHERE e.type='ci'")]
        project = db.execute("SELECT value FROM config WHERE name='project-code'").fetchone()[0]
    finally:
        db.close()
    return main, [h for h in every if h not in set(main)], project


def make(out: Path, posts: int = 20_000, tags: int = 10_000) -> None:
    rng = random.Random(15)
    work = out.parent / (out.name + ".work")
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    partial = work / out.name
    shutil.copyfile(CLICK, partial)
    partial.chmod(0o644)
    home = work / "home"
    admin.set_setting(partial, "backoffice-disable", "on", home=home)  # no hooks while it is made
    passwords = {"admin": admin.random_password()}
    admin.set_password(partial, "admin", passwords["admin"], home=home)
    for login in PEOPLE:
        passwords[login] = admin.create_user(partial, login, "i4", f"{login}@example.org", home=home)
    for login in REVIEWERS + BOTS:
        passwords[login] = admin.create_user(partial, login, "i2", f"{login}@example.org", home=home)
    main, others, project = checkins(partial)
    server = serve(partial, home=home)
    try:
        senders = {login: Sender(server.base_url, login, pw, project) for login, pw in passwords.items()}
        began, now = time.monotonic(), datetime.now(timezone.utc) - timedelta(days=365)
        threads: list[tuple[str, list[str]]] = []
        for n in range(posts):
            author = "admin" if n % 10 == 3 else rng.choice(PEOPLE)  # admins talk too
            when = now + timedelta(minutes=n)
            if n % 10 == 0 or not threads:
                root = senders[author].push(forum_post(author, when, post_text(rng, n), title=sentence(rng, 6)))
                threads.append((root, [root]))
            else:
                root, members = threads[-1] if rng.random() < 0.7 else rng.choice(threads)
                members.append(senders[author].push(forum_post(author, when, post_text(rng, n), root=root,
                                                               parent=rng.choice(members))))
            if n % 2000 == 1999:
                print(f"  {n + 1} posts ({time.monotonic() - began:.0f} s)", flush=True)
        began = time.monotonic()
        hot = main[:200]  # the newest check-ins of main hold most verdicts, as review queues do

        changes = []
        for n in range(tags):
            target = rng.choice(hot) if rng.random() < 0.7 else rng.choice(main + others)
            bot = rng.random() < 0.3
            sender = rng.choice(BOTS if bot else REVIEWERS)
            value = f"{rng.choice(['pass', 'pass', 'fail'])}: {sentence(rng, rng.randint(3, 12))[:-1]} (against PLAN.md)"
            changes.append((sender, tag_change(sender, now + timedelta(days=60, minutes=n), target,
                                               "ci" if bot else "audited", value, cancel=rng.random() < 0.05)))
        with ThreadPoolExecutor(2) as pool:  # two requests at a time: the server forks one process each
            for n, _ in enumerate(pool.map(lambda change: senders[change[0]].push(change[1]), changes)):
                if n % 2000 == 1999:
                    print(f"  {n + 1} tag changes ({time.monotonic() - began:.0f} s)", flush=True)
    finally:
        server.stop()
    admin.set_setting(partial, "backoffice-disable", "off", home=home)
    out.with_name(out.name + ".admin-password").write_text(passwords["admin"] + "\n")
    partial.replace(out)
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    target = Path(sys.argv[1])
    make(target, *(int(a) for a in sys.argv[2:]))
    print(f"made {target}")
