#!/usr/bin/env python3
"""Builds the npm packages of openhuman-mcp from binaries already built, with `npm pack`:

  openhuman-mcp-<version>.tgz                       the main package: bin `openhuman-mcp` (the shim)
                                                    and `openhumand-mcp` (the daemon), small JS
                                                    launchers that run the platform package's binary
  openhuman-mcp-<platform>-<version>.tgz            @openhuman-mcp/<platform> for each --bin-dir:
                                                    the two binaries, with `os` and `cpu` set

The main package lists every released platform package as an optional dependency at the same
version, so npm installs only the one that matches the machine (the way esbuild and biome ship);
there is no install script. The tarballs go to dist/npm/ (or --out), and their paths are printed
one per line, the main package first.

Usage: packaging/npm/build.py --bin-dir [TARGET=]DIR [--bin-dir ...] [--out DIR]
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "lib"))
import artifacts as a  # noqa: E402

TOOL = "npm/build.py"
HERE = Path(__file__).resolve().parent


def npm_pack(folder: Path, out: Path) -> Path:
    npm = shutil.which("npm")
    if npm is None:
        a.fail(TOOL, "npm is not on PATH")
    done = subprocess.run([npm, "pack", "--json", "--pack-destination", str(out)], cwd=folder,
                          capture_output=True, text=True)
    if done.returncode != 0:
        a.fail(TOOL, f"npm pack in {folder} failed:\n{done.stderr}")
    info = json.loads(done.stdout)
    return out / info[0]["filename"]


def write_json(path: Path, value: dict) -> None:
    path.write_text(json.dumps(value, indent=2) + "\n", encoding="utf-8")


def common_fields(version: str) -> dict:
    return {
        "version": version,
        "license": a.license_id(),
        "homepage": a.repository_url(),
        "repository": {"type": "git", "url": "git+" + a.repository_url() + ".git"},
    }


def platform_package(b: a.Binaries, version: str, stage: Path) -> Path:
    t = b.target
    folder = stage / t.npm
    (folder / "bin").mkdir(parents=True)
    a.copy_executable(b.shim, folder / "bin" / (a.SHIM + t.exe))
    a.copy_executable(b.daemon, folder / "bin" / (a.DAEMON + t.exe))
    (folder / "README.md").write_text(
        f"# {a.NPM_SCOPE}/{t.npm}\n\nThe `{t.triple}` binaries of openhuman-mcp. Install "
        f"`{a.PACKAGE}`, which picks this package on this platform.\n", encoding="utf-8")
    write_json(folder / "package.json", {
        "name": f"{a.NPM_SCOPE}/{t.npm}",
        "description": f"The {t.triple} binaries of openhuman-mcp.",
        **common_fields(version),
        "os": [t.node_os],
        "cpu": [t.node_cpu],
        "files": ["bin", "README.md"],
        "preferUnplugged": True,
    })
    return folder


def main_package(version: str, stage: Path) -> Path:
    folder = stage / a.PACKAGE
    shutil.copytree(HERE / a.PACKAGE, folder)
    released = [t for t in a.TARGETS.values() if t.released]
    platforms = {f"{t.node_os} {t.node_cpu}": f"{a.NPM_SCOPE}/{t.npm}" for t in released}
    write_json(folder / "lib" / "platforms.json", platforms)
    for launcher in (folder / "bin").iterdir():
        launcher.chmod(0o755)
    write_json(folder / "package.json", {
        "name": a.PACKAGE,
        "description": a.SUMMARY,
        **common_fields(version),
        # The MCP Registry checks that the npm package names the server it is listed under.
        "mcpName": a.server_name(),
        "keywords": ["mcp", "model-context-protocol", "memory", "mcp-server"],
        "bin": {a.PACKAGE: "bin/openhuman-mcp.js", a.DAEMON: "bin/openhumand-mcp.js"},
        "files": ["bin", "lib", "README.md"],
        "engines": {"node": ">=18"},
        "optionalDependencies": {name: version for name in sorted(platforms.values())},
    })
    return folder


def main() -> None:
    args = a.arguments(TOOL, "Build the npm packages of openhuman-mcp.", a.ROOT / "dist" / "npm")
    for b in args.bins:
        if b.target.triple == "universal-apple-darwin":
            a.fail(TOOL, "npm has a package per macOS architecture: give x86_64- and aarch64-apple-darwin")
    version = a.version()
    out = args.out
    with tempfile.TemporaryDirectory(prefix="openhuman-npm-") as tmp:
        stage = Path(tmp)
        written = [npm_pack(main_package(version, stage), out)]
        for b in args.bins:
            written.append(npm_pack(platform_package(b, version, stage), out))
    for path in written:
        print(f"{TOOL}: wrote {path}", file=sys.stderr)
        print(path)


if __name__ == "__main__":
    main()
