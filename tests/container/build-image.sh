#!/bin/bash
# Build the systemd test image from Debian's packages (Docker Hub is not
# reachable here) and print its tag on the last line of stdout.
#   1. wheels of OCX's dependencies, built on the host (pystemd is an sdist
#      needing gcc + libsystemd-dev; cp311 wheels fit the image's 3.11);
#   2. mmdebstrap a minbase bookworm and run vagrant/provision.sh in the
#      chroot (customize-hook: it has the host's network, unlike a
#      `docker build`), so the image is set up like the VM;
#   3. `docker import`, then a network-free Dockerfile step.
# The tag is a hash of every input: a second run finds it and costs nothing.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
DOCKER_HOST=${DOCKER_HOST:-$(sh "$here/engine.sh")}
export DOCKER_HOST
name=${OCX_TEST_IMAGE:-ocx-test-systemd}
cache=${OCX_TEST_CACHE:-/var/cache/ocx-tests}
log() { echo "build-image: $*" >&2; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
stage=$work/ocx-provision
mkdir -p "$stage/units"
cp "$repo/vagrant/provision.sh" "$stage/"
cp "$repo/units/ocx.slice" "$stage/units/"
sh "$repo/vagrant/provision.sh" --requirements "$repo/pyproject.toml" >"$stage/requirements.txt"

hash=$(cat "$here/build-image.sh" "$here/Dockerfile" "$here/container-init" \
    "$stage/provision.sh" "$stage/requirements.txt" "$stage/units/ocx.slice" |
    sha256sum | cut -c1-12)
tag=$name:$hash
if docker image inspect "$tag" >/dev/null 2>&1; then
    log "$tag exists"
    echo "$tag"
    exit 0
fi

for tool in mmdebstrap gcc pkg-config; do
    command -v "$tool" >/dev/null || need="${need:-} $tool"
done
dpkg-query -W -f='${Status}' libsystemd-dev 2>/dev/null | grep -q "ok installed" \
    || need="${need:-} libsystemd-dev"
if [ -n "${need:-}" ]; then
    log "installing$need"
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $need >&2
fi

t0=$(date +%s)
wheels=$cache/wheelhouse-$(sha256sum <"$stage/requirements.txt" | cut -c1-12)
if [ ! -f "$wheels/.complete" ]; then
    log "building wheels into $wheels"
    mkdir -p "$wheels"
    python3 -m pip wheel -q -w "$wheels" -r "$stage/requirements.txt" >&2
    touch "$wheels/.complete"
fi
cp -r "$wheels" "$stage/wheelhouse"
t1=$(date +%s)
log "wheels: $((t1 - t0)) s"

packages=$(sh "$repo/vagrant/provision.sh" --packages | tr ' ' ',')
log "mmdebstrap bookworm ($packages)"
mmdebstrap --variant=minbase --include="$packages" \
    --customize-hook="copy-in $stage /tmp" \
    --customize-hook='chroot "$1" env OCX_SRC=/src OCX_WHEELHOUSE=/tmp/ocx-provision/wheelhouse OCX_REQUIREMENTS=/tmp/ocx-provision/requirements.txt OCX_UNITS=/tmp/ocx-provision/units sh /tmp/ocx-provision/provision.sh' \
    --customize-hook='rm -rf "$1/tmp/ocx-provision"' \
    bookworm - 2> >(tail -5 >&2) |
    docker import -c 'CMD ["/sbin/init"]' -c 'ENV container=docker' - "$name-base:$hash" >&2
t2=$(date +%s)
log "mmdebstrap + import: $((t2 - t1)) s"

DOCKER_BUILDKIT=0 docker build -q --build-arg "BASE=$name-base:$hash" \
    -t "$tag" -f "$here/Dockerfile" "$here" >&2
log "image $tag in $(($(date +%s) - t0)) s"
echo "$tag"
