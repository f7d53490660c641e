#!/bin/sh
# Provision a Debian 12 machine as an OCX node's host. The same script sets
# up the Vagrant VM (vagrant/Vagrantfile) and the systemd test image
# (tests/container/build-image.sh runs it inside the mmdebstrap chroot), so
# the two cannot drift apart.
#
#   provision.sh                 provision this machine (as root)
#   provision.sh --packages      print the Debian packages it needs
#   provision.sh --requirements PYPROJECT
#                                print the Python requirements read from
#                                pyproject.toml (dependencies + extras
#                                node and test), one a line
#
# Environment:
#   OCX_SRC        the OCX source tree (default /vagrant); the venv sees it
#                  through a .pth file, so `import ocx` works everywhere
#   OCX_WHEELHOUSE install Python packages offline from this directory
#                  (the test image: its wheels are built on the host)
#   OCX_REQUIREMENTS a requirements file (default: read from OCX_SRC)
#   OCX_UNITS      directory holding OCX's unit files (default OCX_SRC/units)
set -eu

# nodejs: the agents the runner pages name (claude, codex's launcher) run on it.
PACKAGES="systemd systemd-sysv dbus libsystemd0 python3 python3-venv fossil
ca-certificates procps iproute2 util-linux less nodejs git systemd-container"

requirements() {
    # One list, in pyproject.toml. testcontainers is left out: it drives
    # Docker from outside the node and is never needed on it.
    python3 - "$1" <<'PY'
import sys, tomllib
with open(sys.argv[1], "rb") as f:
    p = tomllib.load(f)["project"]
reqs = list(p.get("dependencies", []))
for extra in ("node", "test"):
    reqs += p.get("optional-dependencies", {}).get(extra, [])
for r in reqs:
    if not r.lower().startswith("testcontainers"):
        print(r)
PY
}

case "${1:-}" in
--packages) echo $PACKAGES; exit 0 ;;
--requirements) requirements "$2"; exit 0 ;;
esac

OCX_SRC=${OCX_SRC:-/vagrant}
OCX_UNITS=${OCX_UNITS:-$OCX_SRC/units}
VENV=/opt/ocx/venv

missing=""
for p in $PACKAGES; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" \
        || missing="$missing $p"
done
if [ -n "$missing" ]; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update
    # shellcheck disable=SC2086
    apt-get install -y --no-install-recommends $missing
fi

[ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"

reqfile=${OCX_REQUIREMENTS:-}
if [ -z "$reqfile" ]; then
    reqfile=$(mktemp)
    requirements "$OCX_SRC/pyproject.toml" >"$reqfile"
fi
if [ -n "${OCX_WHEELHOUSE:-}" ]; then
    "$VENV/bin/pip" install -q --no-index --find-links "$OCX_WHEELHOUSE" -r "$reqfile"
else
    # pystemd is a source distribution: it needs a compiler and libsystemd-dev.
    apt-get install -y --no-install-recommends gcc libsystemd-dev pkg-config python3-dev
    "$VENV/bin/pip" install -q -r "$reqfile"
fi

# OCX itself from its source tree, like an editable install, without
# writing into the tree (the test container mounts it read-only).
site=$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
echo "$OCX_SRC" >"$site/ocx-src.pth"

# The slice every run lives in (D3).
if [ -f "$OCX_UNITS/ocx.slice" ]; then
    install -m 0644 "$OCX_UNITS/ocx.slice" /etc/systemd/system/ocx.slice
fi
# The `ocx` command for the node's units, the shell and `docker exec`
# (OCX is not pip-installed, so no console script exists).
cat >"$VENV/bin/ocx" <<'SH'
#!/bin/sh
exec /opt/ocx/venv/bin/python -m ocx.cli.launch "$@"
SH
chmod 0755 "$VENV/bin/ocx"
ln -sfn "$VENV/bin/ocx" /usr/local/bin/ocx
# The units' Documentation= points here (docs/operating.md).
mkdir -p /usr/share/doc
ln -sfn "$OCX_SRC/docs" /usr/share/doc/ocx
echo "provisioned: $VENV ($("$VENV/bin/python" --version))"
