"""What a run's `push` may copy, decided from the artifacts themselves (C6, D22).

Pure: given the artifacts a run's clone holds that the node's repository
lacks (their names and bytes, already checked to hash to their names,
run_clone.py) and what the node's repository says of the check-ins it
holds, it chooses the check-ins and the files they need, and nothing else:

- a check-in is an artifact Fossil would parse as one (fossil-scm.org's file
  format: only B C D F N P Q R T U Z cards, D and Z present, and a C, F, P,
  B, Q or R card); its T cards must all be its own (target `*`), since
  Fossil applies a check-in's T card that names another artifact to that
  artifact (a tag, or a branch moved, in disguise);
- its branch is its own `*branch` card's value, else its primary parent's,
  read from the node's repository or, for a parent that is new too, decided
  the same way: never from what the clone's tables say; so are the symbolic
  names it answers to (`sym-` tags, its own or passed on by its parents),
  which `fossil update NAME` goes by: with a branch restricted, a check-in
  may answer to that branch's name only, never to `trunk`'s;
- the files it needs are its F cards' and its baseline's; each file must not
  itself be a structural artifact (Fossil crosslinks any received blob that
  parses as one, so a file could carry a forum post or a tag);
- everything else new (tags, amends, forum posts, wiki pages, tickets,
  technotes, attachments, clusters) is left out, named in the plan;
- with a branch restricted, one new check-in elsewhere refuses the push whole.
"""
from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from ocx.fossil.manifest import Artifact, ManifestError, parse, strip_signature
from ocx.protocol.errors import FieldError

CHECKIN_CARDS = frozenset("BCDFNPQRTUZ")
_MARKS = frozenset("BCFPQR")  # what makes Fossil call a manifest a check-in rather than a tag change
_KINDS = (("A", "an attachment"), ("E", "a technote"), ("G", "a forum post"), ("H", "a forum post"),
          ("I", "a forum post"), ("J", "a ticket change"), ("K", "a ticket change"), ("L", "a wiki page"),
          ("M", "a cluster"), ("W", "a wiki page"), ("T", "a tag change"))
_Z_CARD = re.compile(rb"Z [0-9a-f]{32}\n")


class PlanRefused(FieldError):
    """FIELD is at fault (`branch`, or `caller` for what its clone holds), for WHY:
    a refusal naming the field, which the push tool answers as it stands (Part 4)."""


@dataclass(frozen=True)
class Line:
    """Where a check-in stands: its branch, the `sym-` tags it passes on to
    its children, and the names it answers to itself (`fossil update NAME`)."""

    branch: str | None
    passed_on: frozenset[str]
    names: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Checkin:
    hash: str
    data: bytes
    branch: str | None


@dataclass
class Plan:
    files: list[tuple[str, bytes]] = field(default_factory=list)  # (hash, bytes), sent first
    checkins: list[Checkin] = field(default_factory=list)  # parents before children
    left_out: list[tuple[str, str]] = field(default_factory=list)  # (hash, what it is)


def looks_structural(data: bytes) -> bool:
    """Whether Fossil could take DATA for a structural artifact: it ends with
    a Z card whose MD5 is right (2.21 manifest.c verify_z_card, after the same
    PGP stripping). Every structural artifact needs one; a file with one is
    never sent."""
    for text in {data, _stripped(data)}:
        if len(text) >= 35 and _Z_CARD.fullmatch(text[-35:]) \
                and hashlib.md5(text[:-35]).hexdigest().encode() == text[-33:-1]:
            return True
    return False


def _stripped(data: bytes) -> bytes:
    try:
        return strip_signature(data)
    except ManifestError:
        return data


def kind_of(artifact: Artifact) -> str:
    letters = {card.letter for card in artifact.cards}
    if letters <= CHECKIN_CARDS and {"D", "Z"} <= letters and letters & _MARKS:
        return "a check-in"
    return next((what for letter, what in _KINDS if letter in letters), "a control artifact")


def plan_push(new: Mapping[str, bytes], *, served_has: Callable[[str], bool],
              served_line: Callable[[str], Line], branch: str | None) -> Plan:
    """The plan for NEW (hash → bytes, each checked to hash to its name);
    PlanRefused when it cannot be sent as it stands. SERVED_LINE gives a
    check-in the node holds: its branch and the `sym-` tags it passes on."""
    plan, parsed = Plan(), {}
    for hash_, data in new.items():
        try:
            artifact = parse(data)
        except (ManifestError, UnicodeDecodeError):
            continue  # content: sent only as a file a check-in names
        what = kind_of(artifact)
        if what == "a check-in":
            parsed[hash_] = artifact
        else:
            plan.left_out.append((hash_, what))
    lines: dict[str, Line] = {}
    for hash_ in parsed:
        _resolve_line(hash_, parsed, lines, served_has, served_line)
    for hash_, line in lines.items():
        if branch is None:
            continue
        if line.branch != branch:
            raise PlanRefused("branch", f"check-in {hash_} is on {line.branch!r}, and the record restricts branch "
                                        f"{branch!r} (C6): nothing was copied")
        others = sorted(name.removeprefix("sym-") for name in line.names if name != "sym-" + branch)
        if others:
            raise PlanRefused("branch", f"check-in {hash_} would answer to the name {others[0]!r} (its tag "
                                        f"sym-{others[0]}, its own or its parent's), and the record restricts branch "
                                        f"{branch!r} (C6): nothing was copied")
    for hash_, artifact in parsed.items():
        for needed in _needs(artifact):
            if needed in parsed or served_has(needed) or any(needed == h for h, _ in plan.files):
                continue
            needed_data = new.get(needed)
            if needed_data is None:
                raise PlanRefused("caller", f"check-in {hash_} needs {needed[:12]}, which is neither on the node "
                                            "nor in the clone")
            if looks_structural(needed_data):
                raise PlanRefused("caller", f"check-in {hash_} holds {needed[:12]} as a file, and those bytes are "
                                            "themselves a Fossil artifact: Fossil would act on them")
            plan.files.append((needed, needed_data))
    plan.checkins = [Checkin(h, new[h], lines[h].branch) for h in _parents_first(parsed)]
    return plan


def _needs(artifact: Artifact) -> list[str]:
    """The artifacts a check-in names that must be there: its files, its
    baseline and its parents (a merge's other parents included)."""
    files = [card.args[1] for card in artifact.all("F") if len(card.args) > 1]
    baseline = [card.args[0] for card in artifact.all("B") if card.args]
    return [*files, *baseline, *artifact.parents]


def _parents_first(parsed: Mapping[str, Artifact]) -> list[str]:
    """The new check-ins, each after every new parent of its own (no recursion)."""
    ordered: list[str] = []
    placed: set[str] = set()
    for start in parsed:
        stack = [(start, False)]
        while stack:
            hash_, ready = stack.pop()
            if hash_ in placed:
                continue
            if ready:
                placed.add(hash_)
                ordered.append(hash_)
                continue
            stack.append((hash_, True))
            stack += [(p, False) for p in parsed[hash_].parents if p in parsed and p not in placed]
    return ordered


def _own_branch(hash_: str, artifact: Artifact) -> str | None:
    """The branch CHECKIN names itself, if it does; its T cards checked."""
    foreign = [t for t in artifact.tags if t.target != "*"]
    if foreign:
        raise PlanRefused("caller", f"check-in {hash_} carries a tag on another artifact ({foreign[0].op}"
                                    f"{foreign[0].name} on {foreign[0].target[:12]}): only its own tags travel with it")
    own = [t for t in artifact.tags if t.name == "branch"]
    if not own:
        return None
    if len(own) != 1 or own[0].op != "*" or not own[0].value:
        raise PlanRefused("caller", f"check-in {hash_} has a branch card Fossil would not start a branch with")
    return own[0].value


def _resolve_line(start: str, parsed: Mapping[str, Artifact], lines: dict[str, Line],
                  served_has: Callable[[str], bool], served_line: Callable[[str], Line]) -> None:
    """Each new check-in's Line, as Fossil would make it: its branch and its
    symbolic names come down its primary parents (walked up without
    recursion: a run may push a long line of check-ins), each check-in's own
    T cards applied on the way down."""
    stack, current = [], start
    while current not in lines and current not in stack:
        stack.append(current)
        parents = parsed[current].parents
        if not parents:
            base = Line(None, frozenset())
            break
        parent = parents[0]
        if parent in parsed:
            current = parent
            continue
        if not served_has(parent):
            raise PlanRefused("caller", f"check-in {current}'s parent {parent[:12]} is neither on the node nor in "
                                        "the clone")
        base = served_line(parent)
        break
    else:
        if current in stack:
            raise PlanRefused("caller", f"check-in {current[:12]} is its own ancestor")
        base = lines[current]
    for hash_ in reversed(stack):
        artifact = parsed[hash_]
        tags = [t for t in artifact.tags if t.name.startswith("sym-")]
        passed_on = (base.passed_on - {t.name for t in tags if t.op == "-"}) | {t.name for t in tags if t.op == "*"}
        base = Line(_own_branch(hash_, artifact) or base.branch, frozenset(passed_on),
                    frozenset(passed_on | {t.name for t in tags if t.op == "+"}))
        lines[hash_] = base
