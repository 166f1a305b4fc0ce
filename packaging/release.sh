#!/bin/sh
# Builds the release artifacts of openhuman-mcp from this checkout, into dist/ (or --out):
#   openhuman-mcp-<version>-<target>.tar.gz   both binaries, README.md, LICENSE, packaging/ and
#                                             install.sh (runs `./openhumand-mcp install`)
#   openhuman-mcp-<version>-<target>.tar.gz.sha256
#   openhuman-mcp.rb                          the Homebrew formula for that tarball
#   openhuman-mcp_<version>-1_<arch>.deb      with --deb (needs cargo-deb: cargo install cargo-deb --locked)
#
# Usage: packaging/release.sh [--target TRIPLE] [--profile release|debug] [--bin-dir DIR]
#                             [--out DIR] [--deb] [--url-base URL] [--homepage URL]
#   --bin-dir DIR   package the binaries already in DIR instead of building them
#   --url-base URL  where the tarball will be published (the formula's url is URL/<tarball>);
#                   by default the formula points at the local file, for `brew install ./dist/openhuman-mcp.rb`
set -eu

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

target=""
profile=release
bin_dir=""
out="$root/dist"
deb=0
url_base=""
homepage=""
while [ $# -gt 0 ]; do
    case "$1" in
        --target) target=$2; shift 2 ;;
        --profile) profile=$2; shift 2 ;;
        --bin-dir) bin_dir=$2; shift 2 ;;
        --out) out=$2; shift 2 ;;
        --deb) deb=1; shift ;;
        --url-base) url_base=$2; shift 2 ;;
        --homepage) homepage=$2; shift 2 ;;
        -h|--help) sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "release.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
    esac
done
case "$profile" in
    release|debug) ;;
    *) echo "release.sh: --profile is release or debug" >&2; exit 2 ;;
esac
if [ "$deb" = 1 ] && [ "$profile" != release ]; then
    echo "release.sh: --deb packages release binaries only" >&2
    exit 2
fi

say() { echo "release.sh: $*" >&2; }

# The version every crate shares ([workspace.package] in Cargo.toml).
version=$(sed -n '/^\[workspace.package\]/,/^\[/s/^version *= *"\(.*\)"/\1/p' Cargo.toml)
[ -n "$version" ] || { say "cannot read the version from Cargo.toml"; exit 1; }
host=$(rustc -vV | sed -n 's/^host: //p')
[ -n "$target" ] || target=$host

if [ -n "$bin_dir" ]; then
    [ "$deb" = 0 ] || { say "--deb builds its own binaries; leave out --bin-dir"; exit 2; }
else
    target_root=${CARGO_TARGET_DIR:-$root/target}
    set -- build --locked -p openhumand-mcp -p openhuman-mcp-shim
    [ "$profile" = release ] && set -- "$@" --release
    if [ "$target" != "$host" ]; then
        set -- "$@" --target "$target"
        bin_dir=$target_root/$target/$profile
    else
        bin_dir=$target_root/$profile
    fi
    say "cargo $*"
    cargo "$@"
fi
for b in openhumand-mcp openhuman-mcp-shim; do
    [ -x "$bin_dir/$b" ] || { say "$bin_dir/$b is missing"; exit 1; }
done

name=openhuman-mcp-$version-$target
mkdir -p "$out"
out=$(cd "$out" && pwd)
stage=$out/$name
rm -rf "$stage"
mkdir -p "$stage"
cp "$bin_dir/openhumand-mcp" "$bin_dir/openhuman-mcp-shim" "$stage/"
cp README.md LICENSE "$stage/"
cp -R packaging "$stage/packaging"
cp packaging/install.sh "$stage/install.sh"
chmod 755 "$stage/openhumand-mcp" "$stage/openhuman-mcp-shim" "$stage/install.sh"
# Symbols are for profiling a build, not for users (cargo-deb strips the .deb's copies too).
if [ "$profile" = release ] && command -v strip >/dev/null 2>&1; then
    strip "$stage/openhumand-mcp" "$stage/openhuman-mcp-shim" 2>/dev/null || say "strip failed; the binaries keep their symbols"
fi
tarball=$name.tar.gz
(cd "$out" && tar -czf "$tarball" "$name")
rm -rf "$stage"

if command -v sha256sum >/dev/null 2>&1; then
    sha=$(sha256sum "$out/$tarball" | cut -d' ' -f1)
else
    sha=$(shasum -a 256 "$out/$tarball" | cut -d' ' -f1)
fi
echo "$sha  $tarball" > "$out/$tarball.sha256"
say "wrote $out/$tarball (sha256 $sha)"

if [ -n "$url_base" ]; then
    url=${url_base%/}/$tarball
else
    url=file://$out/$tarball
fi
[ -n "$homepage" ] || homepage=${url_base:-$url}
sed -e "s|@VERSION@|$version|g" -e "s|@URL@|$url|g" -e "s|@SHA256@|$sha|g" -e "s|@HOMEPAGE@|$homepage|g" \
    packaging/homebrew/openhuman-mcp.rb.in > "$out/openhuman-mcp.rb"
say "wrote $out/openhuman-mcp.rb"

if [ "$deb" = 1 ]; then
    # The packaged user units run /usr/bin/openhumand-mcp and listen where the daemon puts its
    # socket without OPENHUMAN_HOME (~/.local/share/openhuman/run/mcp.sock); cargo-deb takes
    # them from the target directory ([package.metadata.deb] in daemon/Cargo.toml).
    units=$bin_dir/deb-units
    mkdir -p "$units"
    sed 's|@EXEC@|/usr/bin/openhumand-mcp|' packaging/systemd/openhuman-mcp.service > "$units/openhuman-mcp.service"
    sed 's|@SOCKET@|%h/.local/share/openhuman/run/mcp.sock|' packaging/systemd/openhuman-mcp.socket \
        > "$units/openhuman-mcp.socket"
    set -- deb -p openhumand-mcp --no-build --output "$out"
    [ "$target" != "$host" ] && set -- "$@" --target "$target"
    say "cargo $*"
    cargo "$@"
fi
