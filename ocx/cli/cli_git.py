"""`ocx git import`: the way back from git (D50), on a person's own machine.
Every line goes through say(): commit messages are other people's bytes (D41)."""
from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Annotated

import typer

from .say import say


def register(app: typer.Typer) -> None:
    git_app = typer.Typer(help="The repository as git: the way back from a clone of the node's mirror (D50).",
                          no_args_is_help=True)
    app.add_typer(git_app, name="git")

    @git_app.command("import")
    def git_import(
        branch: Annotated[str, typer.Argument(help="The git branch whose new commits become check-ins.")],
        clone: Annotated[Path, typer.Option("--clone", help="Your own Fossil clone (`fossil clone URL FILE`).")],
        git_dir: Annotated[Path, typer.Option("--git", help="The git repository (a clone of the node's /ext/git).")]
        = Path("."),
        main_branch: Annotated[str, typer.Option(help="The git branch that is Fossil's trunk.")] = "master",
        dry_run: Annotated[bool, typer.Option("--dry-run", help="List what would be made; make nothing.")] = False,
    ) -> None:
        """Make one check-in in CLONE, as the login it pushes as, per new commit of BRANCH, in order,
        keeping messages and author dates; then your `fossil push` sends them as you (D21, D50)."""
        raise typer.Exit(import_branch(branch, clone, git_dir, main_branch, dry_run))


def import_branch(branch: str, clone: Path, git_dir: Path, main_branch: str, dry_run: bool) -> int:
    """The command's work; its exit status (1: refused, the reason on standard error)."""
    from ..fossil.errors import FossilLayerError
    from ..fossil.lineage import CloneLineage
    from ..git.history import GitRepository, HistoryError
    from ..git.program import GitError
    from ..git.way_back import ImportRefused, Step, apply, plan

    if not clone.is_file():
        say(f"ocx git import: no Fossil clone at {clone}", err=True)
        return 1

    def tell(step: Step, checkin: str) -> None:
        say(f"made {checkin[:12]} from {step.commit.hash[:12]}")

    with tempfile.TemporaryDirectory(prefix="ocx-git-home-") as home:
        git = GitRepository(git_dir.resolve(), Path(home))
        lineage = CloneLineage(clone)
        try:
            made = plan(git, lineage, branch, main_branch)
            for step in made.steps:
                if step.found:
                    say(f"in Fossil   {step.commit.hash[:12]} as {step.found[:12]}: {step.commit.title}")
            verb = "would make" if dry_run else "making"
            for step in made.to_make:
                starts = f" (new branch {step.new_branch})" if step.new_branch else ""
                say(f"{verb} {step.commit.hash[:12]} on {made.fossil_branch}{starts} as {made.login}:"
                    f" {step.commit.title}")
            if not made.to_make:
                say(f"nothing to import: {branch} is in Fossil")
            elif not dry_run:
                apply(made, git, clone, lineage, tell)
                say(f"done: `fossil push -R {clone}` sends them as {made.login}")
        except (ImportRefused, HistoryError, GitError, FossilLayerError) as error:
            say(f"ocx git import: {error}", err=True)
            return 1
        finally:
            lineage.close()
    return 0
