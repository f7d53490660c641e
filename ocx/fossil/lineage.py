"""What `ocx git import` reads of a person's own Fossil clone (D50): a
check-in's primary children, whether it is a leaf, and its files, read-only
through Repository (the only code that opens a repository file).

A check-in's files are its manifest's F cards; a delta manifest (a B card)
names only what changed from its baseline, which holds the rest
(`files_of_cards`, pure).
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ocx.fossil.manifest import Artifact, Card, ManifestError, unescape
from ocx.fossil.repository import Repository

# A file's content read to compare it with a git blob: the person's own clone, so bounded only
# against a damaged one (storage.TooLarge past it).
FILE_BYTES = 1 << 30


@dataclass(frozen=True)
class FossilFile:
    hash: str  # the artifact's hash (SHA1 or SHA3-256 of its content)
    executable: bool


def files_of_cards(cards: Sequence[Card], baseline: Sequence[Card] = ()) -> dict[str, FossilFile]:
    """The files F CARDS name, over BASELINE's when the manifest is a delta: in a delta, an F card
    with no hash removes its name."""
    files: dict[str, FossilFile] = {}
    for card in (*baseline, *cards):
        if card.letter != "F":
            continue
        if not card.args:
            raise ManifestError("an F card names no file")
        name = unescape(card.args[0])
        if len(card.args) == 1:
            files.pop(name, None)
            continue
        files[name] = FossilFile(card.args[1], len(card.args) > 2 and card.args[2] == "x")
    return files


class CloneLineage(Repository):
    """A person's Fossil clone, read for the way back (ocx/git/way_back.py)."""

    def children(self, hash_: str) -> list[str]:
        """The check-ins whose primary parent is HASH_, oldest first."""
        return [child for (child,) in self._rows(
            "SELECT b.uuid FROM plink p JOIN blob b ON b.rid=p.cid WHERE p.pid=? AND p.isprim"
            " ORDER BY p.mtime, p.cid", (self._rid(hash_),))]

    def is_leaf(self, hash_: str) -> bool:
        return self._one("SELECT 1 FROM leaf WHERE rid=?", (self._rid(hash_),)) is not None

    def files_of(self, hash_: str) -> dict[str, FossilFile]:
        manifest = self.parsed(hash_)
        return files_of_cards(manifest.cards, self._baseline(manifest))

    def _baseline(self, manifest: Artifact) -> tuple[Card, ...]:
        card = manifest.first("B")
        return self.parsed(card.args[0]).cards if card and card.args else ()

    def content(self, hash_: str) -> bytes:
        return self.artifact(hash_, FILE_BYTES)
