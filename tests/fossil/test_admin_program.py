"""Administration through the CLI (admin.py) and the program runner
(program.py), on a real repository and server."""
from __future__ import annotations

import os

import pytest

from ocx.fossil import admin
from ocx.fossil.fossil_failure import FossilError
from ocx.fossil.program import fossil_environment, run_fossil, serve
from ocx.fossil.web import WebError, WebSession

pytestmark = pytest.mark.fossil


def test_environment_is_explicit_and_inherits_nothing(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("OCX_SHOULD_NOT_LEAK", "1")
    env = fossil_environment(tmp_path, user="alice")
    assert set(env) == {"HOME", "PATH", "LANG", "USER"}
    assert env["HOME"] == str(tmp_path) and "OCX_SHOULD_NOT_LEAK" not in env


def test_failure_raises_with_fossils_words(tmp_path) -> None:
    with pytest.raises(FossilError) as failed:
        run_fossil(["info", "-R", str(tmp_path / "missing.fossil")], home=tmp_path)
    assert failed.value.returncode != 0 and "missing.fossil" in str(failed.value)
    assert run_fossil(["version"], home=tmp_path).stdout.startswith("This is fossil version")


def test_new_repository_keeps_no_clear_text_password(tmp_path) -> None:
    path = tmp_path / "new.fossil"
    password = admin.new_repository(path, "boss", home=tmp_path / "home")
    pw = run_fossil(["sql", "--readonly", "-R", str(path), "SELECT pw FROM user WHERE login='boss'"], home=tmp_path)
    assert password not in pw.stdout and len(pw.stdout.strip().strip("'")) == 40  # a SHA1 of it


def test_passwords_and_capabilities_take_effect_on_the_server(served) -> None:
    password = admin.create_user(served.path, "frank", "i4", "frank@example.org", home=served.home)
    assert password not in " ".join(os.listdir(served.home))
    WebSession(served.base_url, "frank", password)  # logs in
    renewed = admin.set_random_password(served.path, "frank", home=served.home)
    assert renewed != password
    with pytest.raises(WebError):
        WebSession(served.base_url, "frank", password)
    session = WebSession(served.base_url, "frank", renewed)
    assert session.new_thread("frank", "may post")
    admin.withdraw_capabilities(served.path, "frank", home=served.home)
    with served.repository() as repo:
        assert repo.user("frank").capabilities == ""
        assert "4" not in repo.effective_capabilities("frank")
    with pytest.raises(WebError):
        WebSession(served.base_url, "frank", renewed).new_thread("frank", "no longer")


def test_serve_picks_a_free_port_and_stops(served, tmp_path) -> None:
    second = serve(served.path, home=tmp_path)
    try:
        assert second.port != served.server.port
        assert WebSession(second.base_url, "alice", served.passwords["alice"]).get("/timeline").status == 200
    finally:
        second.stop()
    assert second.process.poll() is not None


def test_a_hook_added_is_told_only_of_what_arrives_after_it(tmp_path) -> None:
    """`start_hooks_from_now` (D26): Fossil's first backoffice would describe to a new hook every artifact
    received within a day (hook.c), inside one write transaction; from it, only the receipts after."""
    home, path, told = tmp_path / "home", tmp_path / "r.fossil", tmp_path / "told.txt"
    admin.new_repository(path, "boss", home=home)
    run_fossil(["wiki", "create", "Before", "-R", str(path)], input="old\n", home=home, user="boss")  # a 2nd receipt
    run_fossil(["hook", "add", "--command", f"cat >> {told}", "--type", "after-receive", "-R", str(path)], home=home)
    assert admin.start_hooks_from_now(path, home=home)
    assert not admin.start_hooks_from_now(path, home=home)  # set once: a hook's own progress is Fossil's
    run_fossil(["backoffice", "--nolease", str(path)], home=home)
    assert not told.exists()  # the wiki page was received before: no backlog (Fossil's own: told of it)
    run_fossil(["wiki", "create", "After", "-R", str(path)], input="new\n", home=home, user="boss")
    run_fossil(["backoffice", "--nolease", str(path)], home=home)
    assert told.read_text().count("\n") == 1 and 'wiki "After"' in told.read_text(), told.read_text()
