"""A release's build and smoke, inside the build's unit (D45, D48).

Run by: the build's transient unit (node/releases/staging.py), `python -I -m ocx.release_build.build`.
As: the build user (staging.BUILD_USER), with no network, a budget, and only `staged/` writable.
Reads: the input root prepared for it (wheels, and the check-in's tree or the admin's wheel).
Writes: staged/ID/ (the release), staged/ID.json (what it recorded), staged/TOKEN.done or .failed.

Everything here runs unprivileged, so it may run what it builds: pip, the check-in's build
backend, the staged release's own `ocx version`. Root reads what it leaves as hostile (links.py).
The release is built at staged/build-TOKEN and renamed to its name once its digest is known; the
scripts in its bin/ then name the build's path, so a release is run as `ID/bin/python -m ocx...`,
never through bin/ocx (docs/releases.md).
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
import venv
from collections.abc import Callable

from ..files import write_atomically
from ..node.releases.links import STAGED, release_id
from ..node.releases.tree import tree_digest
from ..protocol.errors import OcxError

PIP_SECONDS = 600.0
SMOKE_SECONDS = 120.0
_MISSING = re.compile(r"No matching distribution found for ([A-Za-z0-9_.\-\[\]<>=!~, ]+)")
OUTPUT_MAX = 4000  # of a step's output kept in the .failed record


class BuildFailed(OcxError):
    """A step of the build that failed: the message says which and why, for root to print."""


def _run(argv: list[str], seconds: float, cwd: str | None = None) -> subprocess.CompletedProcess[str]:
    environment = {"PATH": "/usr/bin:/bin", "HOME": os.environ.get("HOME", "/tmp"), "LANG": "C.UTF-8",
                   "PIP_NO_INPUT": "1", "PIP_DISABLE_PIP_VERSION_CHECK": "1", "PIP_NO_CACHE_DIR": "1"}
    try:
        return subprocess.run(argv, capture_output=True, text=True, timeout=seconds, cwd=cwd, env=environment,
                              check=False)
    except subprocess.TimeoutExpired:
        raise BuildFailed(f"{' '.join(argv[2:5])}: took more than {seconds:.0f} s") from None


def _pip(python: str, step: str, *args: str, cwd: str | None = None) -> None:
    done = _run([python, "-m", "pip", *args], PIP_SECONDS, cwd)
    if done.returncode == 0:
        return
    missing = _MISSING.search(done.stderr)
    if missing:
        raise BuildFailed(f"dependency: {missing.group(1).strip()} is in no wheel given (offline build, D45)")
    raise BuildFailed(f"{step}: pip exited {done.returncode}: {done.stderr.strip()[-OUTPUT_MAX:]}")


def _build_requires(tree: str) -> list[str]:
    """What the check-in's pyproject.toml says its build needs (PEP 518), installed from the wheels
    given, offline: a missing one is refused, named. setuptools before 70.1 builds a wheel only
    with `wheel` installed beside it."""
    try:
        with open(os.path.join(tree, "pyproject.toml"), "rb") as project:
            system = tomllib.load(project).get("build-system", {})
    except (OSError, tomllib.TOMLDecodeError) as error:
        raise BuildFailed(f"pyproject.toml: {error}") from None
    requires = [str(r) for r in system.get("requires", ["setuptools"])]
    if system.get("build-backend", "setuptools.build_meta") == "setuptools.build_meta":
        requires.append("wheel")
    return requires


def _ocx_wheel(directory: str) -> str:
    wheels = sorted(name for name in os.listdir(directory) if name.startswith("ocx-") and name.endswith(".whl"))
    if len(wheels) != 1:
        raise BuildFailed(f"wheel: {len(wheels)} wheels of OCX where one was wanted")
    return os.path.join(directory, wheels[0])


def build(staged: str, inputs: str, checkin: str, token: str) -> str:
    """Build, smoke and name one release; the release's name (its ID)."""
    work = os.path.join(staged, f"build-{token}")
    shutil.rmtree(work, ignore_errors=True)
    venv.EnvBuilder(with_pip=True, symlinks=True, clear=True).create(work)
    python = os.path.join(work, "bin", "python")
    kept = os.path.join(work, "wheels")  # the wheels a later stage finds here (D45: "the current release's")
    os.mkdir(kept)
    source = os.path.join(inputs, "source")
    wheels = os.path.join(inputs, "wheels")
    if os.path.isdir(source):
        # The check-in's tree, copied where its build may write (setuptools writes build/ and *.egg-info).
        tree = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"source-{token}")
        shutil.rmtree(tree, ignore_errors=True)
        shutil.copytree(source, tree, symlinks=True)
        requires = _build_requires(tree)
        if requires:  # none: a backend in the tree itself (PEP 517 backend-path)
            _pip(python, "build requirements", "install", "--no-index", "--find-links", wheels, *requires)
            # kept too, so that the next check-in builds from this release's wheels alone
            _pip(python, "download", "download", "--no-index", "--find-links", wheels, "--dest", kept, *requires)
        _pip(python, "wheel", "wheel", "--no-index", "--no-build-isolation", "--no-deps", "--wheel-dir", kept, tree)
        shutil.rmtree(tree, ignore_errors=True)
    else:
        shutil.copy(_ocx_wheel(os.path.join(inputs, "wheel")), kept)
    wanted = f"{_ocx_wheel(kept)}[node]"
    _pip(python, "download", "download", "--no-index", "--find-links", wheels,
         "--find-links", kept, "--dest", kept, wanted)
    _pip(python, "install", "install", "--no-index", "--no-compile", "--find-links", kept, wanted)
    # Bytecode that is never checked against its source's time: the copy root makes at accept has new
    # times, and a release is never written after its digest (-B below; the units run it so too).
    _run([python, "-I", "-m", "compileall", "-q", "--invalidation-mode", "unchecked-hash", work], PIP_SECONDS)
    smoke = {"version": _smoke_version(python, work)}
    configurations = os.path.join(inputs, "config")
    if os.path.isdir(configurations):
        smoke["configuration"] = _smoke_configuration(python, work, configurations)
    copies = os.path.join(inputs, "smoke")
    if os.path.isdir(copies):
        smoke["status"] = _smoke_status(python, work, copies, configurations, token)
    if os.path.isdir(copies):
        smoke["node_check"] = _smoke_node_check(python, work, copies, configurations, token)
    for step, result in smoke.items():
        if not result.startswith("passed"):
            raise BuildFailed(f"smoke: {step} {result}")  # nothing staged (D45)
    digest = tree_digest(work)
    release = release_id(checkin, digest)
    home = os.path.join(staged, release)
    if os.path.isdir(home) and not os.path.islink(home) and tree_digest(home) == digest:
        shutil.rmtree(work)  # the same release, staged before: its files are these
    else:
        shutil.rmtree(home, ignore_errors=True)
        os.rename(work, home)
    write_atomically(os.path.join(staged, f"{release}.json"),
                     json.dumps({"checkin": checkin, "digest": digest, "smoke": smoke}), 0o644)
    return release


def _smoke_version(python: str, work: str) -> str:
    """The staged release's own `ocx version`, from its own directory (-I: nothing else on sys.path;
    -B: no bytecode written into the release after its digest)."""
    done = _run([python, "-I", "-B", "-m", "ocx.cli.launch", "version"], SMOKE_SECONDS, cwd=work)
    said = (done.stdout.strip() or done.stderr.strip())[-OUTPUT_MAX:]
    if done.returncode == 0 and said.startswith("ocx ") and (work in said or os.path.realpath(work) in said):
        return f"passed: {said}"
    return f"failed: exit {done.returncode}: {said}"


CONFIGURATION_CHECK = ("import sys\nfrom ocx.node.config import load_file\n"
                       "names = [load_file(path).name for path in sys.argv[1:]]\n"
                       "print('read the configuration of', ', '.join(names))\n")


def _smoke_configuration(python: str, work: str, directory: str) -> str:
    """The staged release reads each node's live configuration as its node would (a copy, with no
    secret: the node's password sits beside it in /etc/ocx, which the build cannot see)."""
    files = [os.path.join(directory, name) for name in sorted(os.listdir(directory)) if name.endswith(".json")]
    done = _run([python, "-I", "-B", "-c", CONFIGURATION_CHECK, *files], SMOKE_SECONDS, cwd=work)
    said = (done.stdout.strip() or done.stderr.strip())[-OUTPUT_MAX:]
    return f"passed: {said}" if done.returncode == 0 else f"failed: exit {done.returncode}: {said}"


STATUS_CHECK = '''import json, os, secrets, shutil, sys
from ocx.node.host_paths import page_secret_path
from ocx.page.web import cgi_answer
from ocx.page.web_viewer import Node, token
given, config, scratch = sys.argv[1:4]
repository = os.path.join(scratch, "repository.fossil")
shutil.copyfile(given, repository)
own = os.path.join(scratch, os.path.basename(config))
shutil.copyfile(config, own)
page_secret_path(own).write_text(secrets.token_hex(32))
env = {"FOSSIL_REPOSITORY": repository, "REQUEST_METHOD": "POST", "QUERY_STRING": "json",
       "CONTENT_TYPE": "application/json", "REQUEST_SCHEME": "http", "HTTP_HOST": "smoke.invalid",
       "SCRIPT_NAME": "/ext/ocx", "HTTP_REFERER": "http://smoke.invalid/ext/ocx"}
call = {"tool": "status", "input": {}, "token": token(Node(own, repository), env)}
answer = json.loads(cgi_answer([own], env, json.dumps(call).encode()).partition("\\r\\n\\r\\n")[2])
result = answer.get("result") or {}
if answer.get("stopped") is not None or not result.get("node"):
    print("status did not answer:", json.dumps(answer)[:2000])
    sys.exit(3)
print(f"status answered {result['login']} on node {result['node'][:16]}")
'''


def _smoke_status(python: str, work: str, copies: str, configurations: str, token: str) -> str:
    """The staged release's page answers the `status` tool in-process (its JSON door, web.py) against
    each copy of a node's repository root made without its secrets (fossil/secretless_copy.py), as
    the viewer `nobody`, in a scratch directory of the build's own private /tmp."""
    said_all = []
    for name in sorted(os.listdir(copies)):
        if not name.endswith(".fossil"):
            continue
        config = os.path.join(configurations, name.removesuffix(".fossil") + ".json")
        scratch = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"smoke-{token}")
        shutil.rmtree(scratch, ignore_errors=True)
        os.mkdir(scratch, 0o700)
        try:
            done = _run([python, "-I", "-B", "-c", STATUS_CHECK, os.path.join(copies, name), config, scratch],
                        SMOKE_SECONDS, cwd=work)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        said = (done.stdout.strip() or done.stderr.strip())[-OUTPUT_MAX:]
        if done.returncode != 0:
            return f"failed: exit {done.returncode}: {said}"
        said_all.append(said)
    return f"passed: {'; '.join(said_all)}" if said_all else "failed: no copy of a repository was given"


RUNNER_PAGES_MAX = 200  # of a copy's runner pages the step reads: a repository's pages are its senders'
# What the node reads of its configuration at its start (serve.py: NodeContext.load), with the copy in place of
# the live repository, then what it reads for every record: its login's letters, each runner page (D14, D20).
NODE_CHECK = '''import json, re, sys
from ocx.fossil.errors import UnknownUser
from ocx.fossil.repository import Repository
from ocx.node.admit import runner_page
from ocx.node.config import load_file
from ocx.node.serving.registry import NODE_USER_CAPABILITIES
from ocx.node_service.context import NodeContext
from ocx.protocol.errors import OcxError
copy, config_file, *runners = sys.argv[1:]
def refused(field, why):
    print(f"{field}: {why}")
    sys.exit(3)
config = load_file(config_file).model_copy(update={"repository": copy})
context = NodeContext.load(config)
if not re.fullmatch("[0-9a-f]{40}", context.server_code):
    refused("repository", "its server-code is not 40 hex digits: it names no node (C1)")
if config.cpu_quota <= 0:
    refused("cpu_quota", "not positive: every run's unit would be refused (D17)")
said, verdicts = [f"node {context.server_code[:16]} ({config.name}) read as at its start"], None
if config.elsewhere:
    said.append("its login and runner pages are the server node's to read (D37)")
else:
    with Repository(copy) as repository:
        try:
            letters = repository.user(config.node_user).capabilities
        except UnknownUser:
            refused("node_user", f"{config.node_user} is not a login of the repository (D20)")
        missing = sorted(set(NODE_USER_CAPABILITIES) - set(letters))
        if missing:
            refused("node_user", f"{config.node_user} lacks the letters {''.join(missing)} (D20)")
        said.append(f"node user {config.node_user} holds {NODE_USER_CAPABILITIES}")
        verdicts = {}
        for name in runners:
            try:
                verdicts[name] = None if runner_page(repository, name) else "no version by an admin (D14)"
            except (OcxError, ValueError) as error:
                verdicts[name] = str(error)[:500]
    said.append("runner pages read: " + (", ".join(n for n, v in verdicts.items() if v is None) or "none"))
print(json.dumps({"said": "; ".join(said), "runners": verdicts}))
'''


# How the release that stages reads a copy's runner pages; a test gives one that reads as an older parser.
RunnerVerdicts = Callable[[str], tuple[list[str], dict[str, str | None]]]


def _runner_verdicts(copy: str) -> tuple[list[str], dict[str, str | None]]:
    """The runner pages of COPY and how the release that stages reads each (this code, as the build
    user): a page both refuse is the admin's to mend and stops no stage; one only the staged release
    refuses would refuse records the node runs today."""
    from ..fossil.repository import Repository
    from ..node.admit import runner_page
    from ..node.runner_pages import PAGE_PREFIX

    verdicts: dict[str, str | None] = {}
    with Repository(copy) as repository:
        names = [name.removeprefix(PAGE_PREFIX) for name in repository.wiki_names(PAGE_PREFIX, RUNNER_PAGES_MAX)]
        for name in names:
            try:
                verdicts[name] = None if runner_page(repository, name) else "no version by an admin (D14)"
            except (OcxError, ValueError) as error:  # Inadmissible naming `runner`, or a page's bad card
                verdicts[name] = str(error)
    return names, verdicts


def _smoke_node_check(python: str, work: str, copies: str, configurations: str, token: str,
                      runner_verdicts: RunnerVerdicts | None = None) -> str:
    """The staged release's node reads each node's configuration as at its start, against the copy of
    its repository the status step has (in the build's private /tmp): the repository's server-code,
    the node user's login and letters, the cpu rate its runs' units take, and each runner page the
    release that stages reads (docs/releases.md, 'The smoke's node_check')."""
    said_all = []
    for name in sorted(os.listdir(copies)):
        if not name.endswith(".fossil"):
            continue
        config = os.path.join(configurations, name.removesuffix(".fossil") + ".json")
        scratch = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"node-check-{token}")
        shutil.rmtree(scratch, ignore_errors=True)
        os.mkdir(scratch, 0o700)
        try:
            copy = os.path.join(scratch, "repository.fossil")
            shutil.copyfile(os.path.join(copies, name), copy)
            names, ours = (runner_verdicts or _runner_verdicts)(copy)
            done = _run([python, "-I", "-B", "-c", NODE_CHECK, copy, config, *names], SMOKE_SECONDS, cwd=work)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        said = (done.stdout.strip() or done.stderr.strip())[-OUTPUT_MAX:]
        if done.returncode != 0:
            return f"failed: exit {done.returncode}: {said}"
        try:
            answer = json.loads(said)
            theirs, summary = answer["runners"], str(answer["said"])
        except (ValueError, KeyError, TypeError):
            return f"failed: not the check's answer: {said}"
        if theirs is not None and not isinstance(theirs, dict):
            return f"failed: not the check's answer: {said}"
        # None: a node elsewhere, whose pages the server's node reads (D37)
        lost = [] if theirs is None else [f"{runner}: {theirs.get(runner, 'not read')}" for runner, why in
                                          ours.items() if why is None and theirs.get(runner, "") is not None]
        if lost:
            return f"failed: runner: pages the node reads today refused by this release: {'; '.join(lost)}"
        said_all.append(summary)
    return f"passed: {'; '.join(said_all)}" if said_all else "failed: no copy of a repository was given"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="ocx.release_build.build")
    parser.add_argument("--root", required=True)
    parser.add_argument("--inputs", required=True)
    parser.add_argument("--checkin", required=True)
    parser.add_argument("--token", required=True)
    options = parser.parse_args(argv)
    staged = os.path.join(options.root, STAGED)
    os.umask(0o022)
    try:
        release = build(staged, options.inputs, options.checkin, options.token)
    except (OcxError, OSError, ValueError) as error:
        write_atomically(os.path.join(staged, f"{options.token}.failed"), str(error)[:OUTPUT_MAX], 0o644)
        sys.stderr.write(f"build failed: {error}\n")
        return 1
    write_atomically(os.path.join(staged, f"{options.token}.done"), release, 0o644)
    return 0


if __name__ == "__main__":
    sys.exit(main())
