#!/usr/bin/env bash
# Build the box image as lazyboy/box:<hash> and tag it lazyboy/box:latest.
#
#   box/build.sh          build unless lazyboy/box:<hash> already exists
#   box/build.sh --check  exit 0 if lazyboy/box:<hash> exists, 1 if a build is needed
#   box/build.sh --tag    print lazyboy/box:<hash> for the current sources
#   box/build.sh --force  build even if the image exists (docker's layer cache still applies)
#   box/build.sh --base   print the Debian bookworm base image the build would use, making it
#                         first if need be (the release tests' clean machine starts from it)
#   BOX_REPO=name/x box/build.sh ...  the same under another name (default lazyboy/box), e.g.
#                         to try a changed image on a machine whose other users want :latest
#
# <hash> covers what goes into the image (Dockerfile and rootfs/, names, modes and contents),
# so editing this script, smoke.sh or the README does not force a rebuild.
#
# Base: debian:bookworm-slim when it is local or can be pulled; otherwise (no registry, as on
# our machines) lazyboy/base:bookworm made once with debootstrap from this host's Debian mirror
# and `docker import`, then reused. BOX_BASE=<image> overrides the choice.
set -euo pipefail
cd "$(dirname "$0")"

log() { echo "box/build.sh: $*" >&2; }
die() { log "error: $*"; exit 1; }

mode=build
case "${1:-}" in
  "") ;;
  --check) mode=check ;;
  --tag) mode=tag ;;
  --force) mode=force ;;
  --base) mode=base ;;
  *) die "unknown argument '$1' (use --check, --tag, --force or --base)" ;;
esac

# Fixed mtime/owner and the modes the Dockerfile normalizes to, so any checkout of the same
# sources hashes the same.
hash=$(tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner --mode=a+rX,go-w \
         -cf - Dockerfile rootfs | sha256sum | cut -c1-12)
repo=${BOX_REPO:-lazyboy/box}
image="$repo:$hash"
[ "$mode" = tag ] && { echo "$image"; exit 0; }

docker info >/dev/null 2>&1 \
  || die "no Docker engine answers (docker info failed). Start one, e.g. scripts/ensure-docker (as root), and rerun."

if [ "$mode" = check ]; then
  docker image inspect "$image" >/dev/null 2>&1
  exit $?
fi
if [ "$mode" = build ] && docker image inspect "$image" >/dev/null 2>&1; then
  log "$image is up to date"
  docker tag "$image" "$repo:latest"
  exit 0
fi

have_image() { docker image inspect "$1" >/dev/null 2>&1; }

# The first "<uri> <suite>/main" apt knows for a suite, e.g. "http://deb.debian.org/debian".
# apt-cache policy reads both sources.list and deb822 .sources files, so we need not parse them.
apt_uri() { apt-cache policy 2>/dev/null | awk -v s="$1/main" '$2 ~ /^https?:/ && $3 == s {print $2; exit}'; }

make_debootstrap_base() {
  [ "$(id -u)" = 0 ] || die "making lazyboy/base:bookworm needs root (debootstrap); rerun as root or provide debian:bookworm-slim"
  if ! command -v debootstrap >/dev/null 2>&1; then
    log "installing debootstrap"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null \
      || die "apt-get install debootstrap failed"
  fi
  local mirror security root t0=$SECONDS
  mirror=$(apt_uri bookworm); mirror=${mirror:-http://deb.debian.org/debian}
  security=$(apt_uri bookworm-security)
  root=$(mktemp -d /var/tmp/lazyboy-base.XXXXXX)
  # shellcheck disable=SC2064 # expand $root now
  trap "rm -rf '$root'" EXIT
  log "debootstrap --variant=minbase bookworm from $mirror (about 30 s)"
  debootstrap --variant=minbase bookworm "$root" "$mirror" >"$root.log" 2>&1 \
    || { tail -n 20 "$root.log" >&2; die "debootstrap failed (log: $root.log)"; }
  rm -f "$root.log"
  # Same suites as debian:bookworm-slim, so both bases install the same (patched) Chromium.
  {
    echo "deb $mirror bookworm main"
    echo "deb $mirror bookworm-updates main"
    [ -n "$security" ] && echo "deb $security bookworm-security main"
  } >"$root/etc/apt/sources.list"
  [ -n "$security" ] || log "warning: no bookworm-security mirror in this host's apt sources; the base will lack security updates"
  rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*
  log "docker import -> lazyboy/base:bookworm"
  tar -C "$root" -c . | docker import - lazyboy/base:bookworm >/dev/null \
    || die "docker import failed"
  rm -rf "$root"; trap - EXIT
  log "base ready in $((SECONDS - t0)) s"
}

if [ -n "${BOX_BASE:-}" ]; then
  base=$BOX_BASE
elif have_image debian:bookworm-slim; then
  base=debian:bookworm-slim
elif log "pulling debian:bookworm-slim" && timeout 30 docker pull -q debian:bookworm-slim >/dev/null 2>&1; then
  base=debian:bookworm-slim
elif have_image lazyboy/base:bookworm; then
  log "no registry; reusing lazyboy/base:bookworm"
  base=lazyboy/base:bookworm
else
  log "no registry; making lazyboy/base:bookworm with debootstrap"
  make_debootstrap_base
  base=lazyboy/base:bookworm
fi

if [ "$mode" = base ]; then
  echo "$base"
  exit 0
fi

log "building $image from $base"
t0=$SECONDS
docker build --build-arg "BASE=$base" --label "lazyboy.box.hash=$hash" \
    -t "$image" -t "$repo:latest" . \
  || die "docker build failed"
log "built $image in $((SECONDS - t0)) s ($(docker image inspect -f '{{.Size}}' "$image" | awk '{printf "%.0f MB", $1/1e6}'))"

# Older $repo:<hash> images are dead weight (~1.1 GB each); rmi refuses the ones a
# container still uses, which is what we want.
for old in $(docker images "$repo" --format '{{.Tag}}'); do
  [ "$old" = latest ] || [ "$old" = "$hash" ] || docker rmi "$repo:$old" >/dev/null 2>&1 || true
done
