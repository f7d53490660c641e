"""A release request answered exactly once, through kills (C4, D46; docs/releases.md).

A request's command claims it (`announce.claim`: ROOT/requests/POST, made exclusively), so it is
acted on at most once. To make that exactly once, the claim says how far the command got:

- empty: claimed, and nothing begun (a kill here moved nothing);
- `{"step", "before"}`: written under the root's lock just before the step, with the links as
  they were (`begun`);
- `{"answered": POST}`: the node user's answer posted in reply (`answered`).

A command killed after its claim and before its answer leaves its request unanswered; the node
starts the request's unit again once it ended (node_service/release_requests.py), and the command,
finding the claim, completes rather than acts: it takes the lock (the root recovered: a move
completed or undone, `links.recover`), reads from the claim and the links what became of the
step (`became`), and posts that answer unless the thread holds one by the node user already.

The claims are root's (ROOT/requests is 0700): read bounded, no link followed.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass

from ...files import write_atomically
from .announce import REQUESTS
from .links import ReleaseError, Releases

_CLAIM_MAX = 16 << 10
ENDED = "its command ended (killed, or out of time)"
MOVED = {"accept": "accepted", "rollback": "rolled back", "stage": "staged as next"}


@dataclass(frozen=True)
class Became:
    """What became of a claimed step: DONE (MOVED's words, or `lost`), the RELEASE it named, WHY when lost."""

    done: str
    release: str | None
    why: str | None = None


def _path(root: str, request: str) -> str:
    return os.path.join(root, REQUESTS, request)


def read_claim(root: str, request: str) -> dict[str, object] | None:
    """The claim of REQUEST at ROOT: None when there is none, {} when claimed and nothing begun."""
    try:
        fd = os.open(_path(root, request), os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:
        return None
    with os.fdopen(fd, "rb") as claimed:
        data = claimed.read(_CLAIM_MAX + 1)
    try:
        found = json.loads(data) if data.strip() and len(data) <= _CLAIM_MAX else {}
    except ValueError:  # cut mid-write cannot be (written atomically): taken as nothing begun
        found = {}
    return found if isinstance(found, dict) else {}


def begun(root: str, request: str, step: str, releases: Releases) -> None:
    """The claim says STEP begins now, with the links as they are (under the root's lock)."""
    write_atomically(_path(root, request), json.dumps({"step": step, "before": releases.links()}), 0o600)


def answered(root: str, request: str, posted: str) -> None:
    """The claim says the request's answer is POSTED: never completed again."""
    write_atomically(_path(root, request), json.dumps({"answered": posted}), 0o600)


def became(step: str, claim: dict[str, object], releases: Releases, checkin: str | None) -> Became:
    """What became of STEP, claimed as CLAIM, read from the links after the root was recovered: the
    move completed (the links hold what the step makes) or undone (they hold what it found)."""
    before = claim.get("before")
    if claim.get("step") != step or not isinstance(before, dict):
        return Became("lost", None, f"{ENDED} before the {step} began: nothing moved")
    now = releases.links()
    if step == "accept":
        wanted = before.get("next")
        if wanted is not None and now["current"] == wanted != before.get("current"):
            return Became(MOVED[step], str(wanted))
        return Became("lost", None, f"{ENDED} before the links moved: nothing moved, next is "
                                    f"{now['next'] or 'none'}")
    if step == "rollback":
        wanted = before.get("previous")
        if wanted is not None and now["current"] == wanted != before.get("current"):
            return Became(MOVED[step], str(wanted))
        return Became("lost", None, f"{ENDED} before the links moved: nothing moved, current is "
                                    f"{now['current'] or 'none'}")
    offered = now["next"]
    if offered is not None and offered != before.get("next") and checkin is not None:
        try:
            if releases.staged(offered).checkin == checkin:
                return Became(MOVED[step], offered)
        except (ReleaseError, OSError):
            pass
    return Became("lost", None, f"{ENDED} while it staged: nothing was offered as next "
                                "(the next stage stops its build and sweeps what it left)")
