"""wiki_latest_by_admin counts only versions whose SENDER holds admin or
setup (D14), however new a version from anyone else is."""
from __future__ import annotations

import pytest

from ocx.fossil import admin
from ocx.fossil.program import run_fossil

pytestmark = pytest.mark.fossil

PAGE = "sandbox/claude"


def test_newer_version_from_a_non_admin_is_ignored(served) -> None:
    by_admin = served.clone("admin").write_wiki(PAGE, '```json\n{"command": ["claude"]}\n```\n')
    by_alice = served.clone("alice").write_wiki(PAGE, '```json\n{"command": ["evil"]}\n```\n')
    assert served.sender_by_sql(by_admin)[0] == "admin"
    assert served.sender_by_sql(by_alice)[0] == "alice"
    with served.repository() as repo:
        versions = repo.wiki_versions(PAGE)
        latest = repo.wiki_latest_by_admin(PAGE)
    assert [v.hash for v in versions] == [by_alice, by_admin]  # alice's is the newest
    assert latest is not None and latest.hash == by_admin
    assert latest.content == '```json\n{"command": ["claude"]}\n```\n'
    assert latest.sender.login == "admin" and latest.name == PAGE


def test_page_with_no_admin_version_counts_for_nothing(served) -> None:
    served.clone("bob").write_wiki("sandbox/codex", "bob's page\n")
    with served.repository() as repo:
        assert len(repo.wiki_versions("sandbox/codex")) == 1
        assert repo.wiki_latest_by_admin("sandbox/codex") is None
        assert repo.wiki_latest_by_admin("sandbox/none") is None


def test_a_forged_admin_user_card_does_not_count(served) -> None:
    clone = served.clone("bob")

    clone.pull()
    # bob makes a local `admin` in his own clone and writes as it.
    admin.create_user(clone.path, "admin", "s", "forged", home=clone.home)
    run_fossil(
        ["wiki", "create", "sandbox/forged", "--mimetype", "text/x-markdown",
         "--user", "admin", "-R", str(clone.path)],
        home=clone.home,
        input="claims to be admin\n",
    )
    clone.push()
    with served.repository() as repo:
        (version,) = repo.wiki_versions("sandbox/forged")
        assert (version.user, version.sender.login) == ("admin", "bob")
        assert repo.wiki_latest_by_admin("sandbox/forged") is None
