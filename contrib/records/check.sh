#!/bin/sh
# An example check for the CI record contrib/records/ci-dev.json: commit it
# in your repository as ci/check.sh. The node runs it in a fresh checkout of
# each check-in on dev (C2); exit 0 is a `ci` pass, anything else a fail,
# and the last line it prints is the verdict's reason (V1). It writes
# nothing into the checkout.
set -eu
exec python3 - <<'PY'
import ast, pathlib, sys
files = sorted(p for p in pathlib.Path(".").rglob("*.py") if not any(part.startswith(".") for part in p.parts))
bad = []
for path in files:
    try:
        ast.parse(path.read_bytes(), str(path))
    except SyntaxError as error:
        bad.append(f"{path}:{error.lineno}: {error.msg}")
for line in bad:
    print(line)
print(f"{len(files) - len(bad)} of {len(files)} Python files parse" + (f"; first failure {bad[0]}" if bad else ""))
sys.exit(1 if bad else 0)
PY
