#!/bin/sh
# Installs a LazyBoy release tarball for one user (no root needed):
#
#   sh install.sh --sha256 SUM lazyboy-VERSION-TARGET.tar.gz
#   curl -fsSL URL/install.sh | sh -s -- --sha256 SUM URL/lazyboy-VERSION-TARGET.tar.gz
#
# The tarball (a file, or an http(s) URL fetched with curl or wget) must match the SHA-256
# it is given, else nothing is installed. The three binaries go to PREFIX/bin side by side
# (lazyboy finds lazyboyd beside itself, lazyboyd finds lazyboy-sandbox), the README and the
# license to PREFIX/share/doc/lazyboy, the systemd user unit to PREFIX/share/systemd/user
# (a directory the user manager reads when PREFIX is ~/.local). Default PREFIX: ~/.local.
# Installing again (an upgrade) replaces the binaries; the data in the LazyBoy home is never
# touched. Afterwards, `lazyboy daemon restart` makes a running daemon the new one.
set -eu

usage() {
  echo "usage: sh install.sh [--prefix DIR] --sha256 SUM TARBALL_OR_URL" >&2
  exit 2
}
die() { echo "install.sh: $*" >&2; exit 1; }

prefix=${HOME:?HOME is not set}/.local
sum=
source=
while [ $# -gt 0 ]; do
  case $1 in
    --prefix) [ $# -ge 2 ] || usage; prefix=$2; shift 2 ;;
    --prefix=*) prefix=${1#--prefix=}; shift ;;
    --sha256) [ $# -ge 2 ] || usage; sum=$2; shift 2 ;;
    --sha256=*) sum=${1#--sha256=}; shift ;;
    -h|--help) usage ;;
    -*) echo "install.sh: unknown option $1" >&2; usage ;;
    *) [ -z "$source" ] || usage; source=$1; shift ;;
  esac
done
[ -n "$source" ] || usage
[ -n "$sum" ] || die "no --sha256 given: take it from the release's SHA256SUMS (or the .sha256 file beside the tarball); nothing was installed"
case $sum in
  *[!0-9a-fA-F]*) die "--sha256 $sum is not a SHA-256 (64 hex digits)" ;;
esac
[ ${#sum} -eq 64 ] || die "--sha256 $sum is not a SHA-256 (64 hex digits)"
case $prefix in
  /*) ;;
  *) die "--prefix must be an absolute directory, not $prefix" ;;
esac

work=$(mktemp -d "${TMPDIR:-/tmp}/lazyboy-install.XXXXXX")
trap 'rm -rf "$work"' EXIT INT TERM

case $source in
  http://*|https://*)
    if command -v curl >/dev/null 2>&1; then
      curl -fsSL --proto '=http,https' -o "$work/lazyboy.tar.gz" "$source" || die "cannot download $source"
    elif command -v wget >/dev/null 2>&1; then
      wget -q -O "$work/lazyboy.tar.gz" "$source" || die "cannot download $source"
    else
      die "neither curl nor wget is installed to download $source: download it yourself and give the file"
    fi
    tarball=$work/lazyboy.tar.gz ;;
  *)
    [ -f "$source" ] || die "$source is not a file"
    tarball=$source ;;
esac

if command -v sha256sum >/dev/null 2>&1; then
  actual=$(sha256sum "$tarball" | cut -d' ' -f1)
elif command -v shasum >/dev/null 2>&1; then
  actual=$(shasum -a 256 "$tarball" | cut -d' ' -f1)
else
  die "neither sha256sum nor shasum is installed to check the tarball"
fi
expected=$(printf '%s' "$sum" | tr 'A-F' 'a-f')
[ "$actual" = "$expected" ] || die "$source has SHA-256 $actual, not $expected: nothing was installed"

mkdir "$work/x"
tar -xzf "$tarball" -C "$work/x" || die "$source is not a LazyBoy tarball (tar failed)"
set -- "$work"/x/lazyboy-*/
[ $# -eq 1 ] && [ -d "$1" ] || die "$source is not a LazyBoy tarball (no single lazyboy-VERSION-TARGET/ directory)"
top=${1%/}
for file in bin/lazyboyd bin/lazyboy bin/lazyboy-sandbox README.md LICENSE \
    share/systemd/user/lazyboyd.service.in; do
  [ -f "$top/$file" ] && [ ! -L "$top/$file" ] || die "$source lacks $file (a regular file)"
done

bindir=$prefix/bin
docdir=$prefix/share/doc/lazyboy
unitdir=$prefix/share/systemd/user
mkdir -p "$bindir" "$docdir" "$unitdir"
# Each binary is copied beside its final name and renamed over it: a running daemon keeps its
# old file, and no binary is ever half written.
for bin in lazyboy-sandbox lazyboyd lazyboy; do
  cp "$top/bin/$bin" "$bindir/.$bin.new"
  chmod 755 "$bindir/.$bin.new"
  mv -f "$bindir/.$bin.new" "$bindir/$bin"
done
cp "$top/README.md" "$top/LICENSE" "$docdir/"
sed "s|@BINDIR@|$bindir|g" "$top/share/systemd/user/lazyboyd.service.in" > "$unitdir/.lazyboyd.service.new"
mv -f "$unitdir/.lazyboyd.service.new" "$unitdir/lazyboyd.service"

version=$("$bindir/lazyboy" --version 2>/dev/null || echo "lazyboy (unknown version)")
echo "installed $version into $bindir"
lb=lazyboy
case ":${PATH:-}:" in
  *":$bindir:"*) ;;
  *) echo "($bindir is not on your PATH: add it, e.g. export PATH=\"$bindir:\$PATH\" in ~/.profile)"
     lb=$bindir/lazyboy ;;
esac
echo "next:"
echo "  $lb daemon start    # start the daemon; prints the dashboard and a login link"
echo "  $lb doctor          # check the model, the sandbox and Docker for the box"
