"""What the npm, PyPI and MCP Bundle builders share: the version every crate carries, the
release targets and what each one is called by npm, by wheel tags and by the bundle format,
the server's registry name, and the `--bin-dir [TARGET=]DIR` option that hands a builder the
binaries of one target (already built, as `packaging/release.sh --bin-dir` takes them).

Standard library only, so the builders run on any machine with Python 3.8 or newer.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

ROOT = Path(__file__).resolve().parents[2]
DAEMON = "openhumand-mcp"
SHIM = "openhuman-mcp-shim"
# The package name users type: `npx -y openhuman-mcp`, `uvx openhuman-mcp`.
PACKAGE = "openhuman-mcp"
# The scope of the per-platform npm packages: @openhuman-mcp/linux-x64 and so on.
NPM_SCOPE = "@openhuman-mcp"
SUMMARY = "Personal memory and agent server for MCP clients: one local daemon, a stdio shim per client."


@dataclass(frozen=True)
class Target:
    """One build target and its names elsewhere."""

    triple: str
    npm: str  # the platform package's suffix, `<process.platform>-<process.arch>`
    wheel_tags: tuple  # platform tags of the wheel
    mcpb: str  # the bundle format's platform: darwin, linux or win32
    released: bool  # built by the release workflow (the npm main package depends on these)

    @property
    def node_os(self) -> str:
        return self.npm.split("-")[0]

    @property
    def node_cpu(self) -> str:
        return self.npm.split("-")[1]

    @property
    def exe(self) -> str:
        return ".exe" if self.mcpb == "win32" else ""


# Static musl binaries run on every glibc and musl distribution, so their wheel carries both
# tag families. The -gnu targets are local builds (the tests package the debug binaries): their
# `linux_*` tag installs on the machine that built them and is refused by the index, as it
# should be.
TARGETS = {
    t.triple: t
    for t in [
        Target("x86_64-unknown-linux-musl", "linux-x64",
               ("manylinux_2_17_x86_64", "manylinux2014_x86_64", "musllinux_1_1_x86_64"), "linux", True),
        Target("aarch64-unknown-linux-musl", "linux-arm64",
               ("manylinux_2_17_aarch64", "manylinux2014_aarch64", "musllinux_1_1_aarch64"), "linux", True),
        Target("x86_64-apple-darwin", "darwin-x64", ("macosx_10_12_x86_64",), "darwin", True),
        Target("aarch64-apple-darwin", "darwin-arm64", ("macosx_11_0_arm64",), "darwin", True),
        # Both macOS binaries joined by `lipo` (the release workflow does it on a macOS runner):
        # the bundle's one darwin entry, which has no room for two architectures.
        Target("universal-apple-darwin", "darwin-universal", ("macosx_10_12_universal2",), "darwin", False),
        Target("x86_64-pc-windows-msvc", "win32-x64", ("win_amd64",), "win32", True),
        Target("x86_64-unknown-linux-gnu", "linux-x64", ("linux_x86_64",), "linux", False),
        Target("aarch64-unknown-linux-gnu", "linux-arm64", ("linux_aarch64",), "linux", False),
    ]
}


def fail(tool: str, message: str) -> NoReturn:
    print(f"{tool}: {message}", file=sys.stderr)
    sys.exit(1)


def version() -> str:
    """The `[workspace.package]` version in Cargo.toml."""
    text = (ROOT / "Cargo.toml").read_text(encoding="utf-8")
    section = re.search(r"^\[workspace\.package\]\s*$(.*?)(?=^\[|\Z)", text, re.M | re.S)
    found = section and re.search(r'^version\s*=\s*"([^"]+)"', section.group(1), re.M)
    if not found:
        fail("packaging", "cannot read [workspace.package] version from Cargo.toml")
    return found.group(1)


def license_id() -> str:
    text = (ROOT / "Cargo.toml").read_text(encoding="utf-8")
    found = re.search(r'^license\s*=\s*"([^"]+)"', text, re.M)
    return found.group(1) if found else "Apache-2.0"


def server_json() -> dict:
    """packaging/registry/server.json: the registry entry, whose `name` the npm package
    (`mcpName`) and the wheel's description (`mcp-name:`) repeat for the registry's checks."""
    return json.loads((ROOT / "packaging/registry/server.json").read_text(encoding="utf-8"))


def server_name() -> str:
    return server_json()["name"]


def repository_url() -> str:
    return server_json()["repository"]["url"]


def host_triple() -> str:
    try:
        out = subprocess.run(["rustc", "-vV"], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError) as e:
        fail("packaging", f"--bin-dir without a TARGET= needs rustc to name the host ({e})")
    for line in out.splitlines():
        if line.startswith("host: "):
            return line[len("host: "):].strip()
    fail("packaging", "rustc -vV printed no host line")


@dataclass(frozen=True)
class Binaries:
    target: Target
    daemon: Path
    shim: Path


def parse_bin_dir(tool: str, value: str) -> Binaries:
    """`TARGET=DIR` or `DIR` (the host's target), checked: both binaries must be there."""
    triple, sep, folder = value.partition("=")
    if not sep:
        triple, folder = host_triple(), value
    target = TARGETS.get(triple)
    if target is None:
        fail(tool, f"unknown target {triple!r}; known: {', '.join(sorted(TARGETS))}")
    folder_path = Path(folder)
    found = {}
    for name in (DAEMON, SHIM):
        path = folder_path / (name + target.exe)
        if not path.is_file():
            fail(tool, f"{path} is missing (build it, or point --bin-dir at the folder that has it)")
        found[name] = path
    return Binaries(target, found[DAEMON], found[SHIM])


def parse_bin_dirs(tool: str, values: list) -> list:
    """Every --bin-dir, at most one per target."""
    if not values:
        fail(tool, "give at least one --bin-dir [TARGET=]DIR")
    result = [parse_bin_dir(tool, v) for v in values]
    seen = set()
    for b in result:
        if b.target.triple in seen:
            fail(tool, f"--bin-dir names {b.target.triple} twice")
        seen.add(b.target.triple)
    return result


def copy_executable(src: Path, dst: Path) -> None:
    dst.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(src, dst)
    dst.chmod(0o755)


def arguments(tool: str, description: str, default_out: Path, more=None) -> argparse.Namespace:
    """A builder's command line: every --bin-dir (checked, as `bins`), --out (made, absolute),
    and whatever `more(parser)` adds."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--bin-dir", action="append", default=[],
                        help="[TARGET=]DIR: a folder holding openhumand-mcp and openhuman-mcp-shim built for "
                             "TARGET (a Rust target triple; the host's when left out). Repeat it for more targets.")
    parser.add_argument("--out", type=Path, default=default_out, help=f"where to write (default: {default_out})")
    if more is not None:
        more(parser)
    args = parser.parse_args()
    args.bins = parse_bin_dirs(tool, args.bin_dir)
    args.out.mkdir(parents=True, exist_ok=True)
    args.out = args.out.resolve()
    return args
