#!/usr/bin/env python3
"""Builds the Claude Desktop extension of openhuman-mcp, an MCP Bundle, from binaries already
built, and checks it with the official CLI (@anthropic-ai/mcpb): `mcpb validate` on the
manifest, then `mcpb pack`. Writes

  openhuman-mcp-<version>.mcpb          manifest.json, icon.png, LICENSE and server/<platform>/
                                        holding the shim and the daemon for each --bin-dir
  openhuman-mcp-<version>.mcpb.sha256

to dist/ (or --out) and prints the bundle's path. The bundle runs the shim (`binary` server
type): its command is chosen per platform (`platform_overrides`), and the home folder the user
may pick in Claude Desktop's settings becomes OPENHUMAN_HOME (left empty, the daemon uses the
platform's data folders, shared with every other client).

A bundle has one binary per operating system: give at most one target per OS, and for macOS
the `universal-apple-darwin` binaries that `lipo` makes of the two architectures.

Usage: packaging/mcpb/build.py --bin-dir [TARGET=]DIR [--bin-dir ...] [--out DIR] [--mcpb CLI.js]
  --mcpb CLI.js   the mcpb CLI to run with node (default: $OPENHUMAN_MCPB, else the one
                  packaging/tools/install.sh installs)
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "lib"))
import artifacts as a  # noqa: E402

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import icon  # noqa: E402

TOOL = "mcpb/build.py"
# The platform whose command is the manifest's default; the others are overrides.
PLATFORM_ORDER = ["darwin", "win32", "linux"]
# Tools the bundle lists for Claude Desktop's extension page (the test checks each one exists).
LISTED_TOOLS = [
    ("memory.search", "Keyword search over everything in your memory."),
    ("memory.recall", "Semantic recall: memories that match the meaning of a question."),
    ("memory.store", "Save a document in your memory."),
    ("memory.learn", "Keep a preference, fact or procedure about you or your work."),
    ("memory.list", "Stored memory items, newest first."),
    ("memory.forget", "Delete items for good."),
    ("tree.browse", "Browse memory chunks by source, entity or time."),
    ("agent.list_subagents", "The subagents OpenHuman can run."),
]


def find_cli(given: str | None) -> str:
    cli = given or os.environ.get("OPENHUMAN_MCPB")
    if not cli:
        done = subprocess.run(["bash", str(a.ROOT / "packaging/tools/install.sh")], stdout=subprocess.PIPE,
                              text=True)
        if done.returncode != 0:
            a.fail(TOOL, "packaging/tools/install.sh failed; cannot get the mcpb CLI")
        for line in done.stdout.splitlines():
            if line.startswith("OPENHUMAN_MCPB="):
                cli = line.split("=", 1)[1]
    if not cli or not Path(cli).is_file():
        a.fail(TOOL, f"the mcpb CLI {cli!r} is not there")
    return cli


def run_cli(cli: str, *args: str) -> str:
    node = shutil.which("node")
    if node is None:
        a.fail(TOOL, "node is not on PATH")
    done = subprocess.run([node, cli, *args], capture_output=True, text=True)
    output = done.stdout + done.stderr
    if done.returncode != 0:
        a.fail(TOOL, f"mcpb {' '.join(args)} failed:\n{output}")
    return output


def manifest(version: str, platforms: dict) -> dict:
    order = [p for p in PLATFORM_ORDER if p in platforms]
    default = order[0]

    def command(platform: str) -> str:
        return "${__dirname}/" + platforms[platform]

    config = {
        "command": command(default),
        "args": [],
        "env": {"OPENHUMAN_HOME": "${user_config.home}"},
    }
    overrides = {p: {"command": command(p)} for p in order[1:]}
    if overrides:
        config["platform_overrides"] = overrides
    return {
        "manifest_version": "0.3",
        "name": a.PACKAGE,
        "display_name": "OpenHuman memory",
        "version": version,
        "description": "Your personal memory for Claude: notes, documents, mail and chats, kept by one local daemon.",
        "long_description": (
            "openhuman-mcp keeps a personal memory store warm in one long-running local daemon and "
            "serves it to every MCP client through a small stdio shim. This extension runs the shim, "
            "which starts the daemon on demand; other clients registered with openhuman-mcp share "
            "the same memory."
        ),
        "author": {"name": "openhuman-mcp contributors", "url": a.repository_url()},
        "repository": {"type": "git", "url": a.repository_url()},
        "homepage": a.repository_url(),
        "license": a.license_id(),
        "icon": "icon.png",
        "keywords": ["memory", "notes", "search", "agents"],
        "server": {
            "type": "binary",
            "entry_point": platforms[default],
            "mcp_config": config,
        },
        "tools": [{"name": n, "description": d} for n, d in LISTED_TOOLS],
        "compatibility": {"platforms": order},
        "user_config": {
            "home": {
                "type": "directory",
                "title": "Home folder",
                "description": (
                    "Where openhuman keeps its config, memory and logs (OPENHUMAN_HOME). Leave it "
                    "empty to use the platform's data folders, shared with your other MCP clients."
                ),
                "required": False,
            }
        },
    }


def main() -> None:
    args = a.arguments(TOOL, "Build the MCP Bundle (.mcpb) of openhuman-mcp.", a.ROOT / "dist",
                       lambda p: p.add_argument("--mcpb", help="the mcpb CLI (a JS file run with node)"))
    by_os = {}
    for b in args.bins:
        if b.target.mcpb in by_os:
            a.fail(TOOL, f"{by_os[b.target.mcpb].target.triple} and {b.target.triple} are both {b.target.mcpb} "
                   "binaries; a bundle holds one per OS (for macOS, universal-apple-darwin)")
        by_os[b.target.mcpb] = b
    cli = find_cli(args.mcpb)
    version = a.version()
    bundle = args.out / f"{a.PACKAGE}-{version}.mcpb"
    with tempfile.TemporaryDirectory(prefix="openhuman-mcpb-") as tmp:
        stage = Path(tmp) / a.PACKAGE
        stage.mkdir()
        entries = {}
        for os_name, b in by_os.items():
            folder = f"server/{os_name}"
            a.copy_executable(b.shim, stage / folder / (a.SHIM + b.target.exe))
            a.copy_executable(b.daemon, stage / folder / (a.DAEMON + b.target.exe))
            entries[os_name] = f"{folder}/{a.SHIM}{b.target.exe}"
        (stage / "icon.png").write_bytes(icon.png(256))
        shutil.copyfile(a.ROOT / "LICENSE", stage / "LICENSE")
        (stage / "manifest.json").write_text(json.dumps(manifest(version, entries), indent=2) + "\n",
                                             encoding="utf-8")
        said = run_cli(cli, "validate", str(stage / "manifest.json"))
        print(f"{TOOL}: mcpb validate: {said.strip().splitlines()[0] if said.strip() else 'ok'}", file=sys.stderr)
        bundle.unlink(missing_ok=True)
        run_cli(cli, "pack", str(stage), str(bundle))
    if not bundle.is_file():
        a.fail(TOOL, f"mcpb pack reported success but wrote no {bundle}")
    sha = hashlib.sha256(bundle.read_bytes()).hexdigest()
    Path(str(bundle) + ".sha256").write_text(f"{sha}  {bundle.name}\n", encoding="utf-8")
    print(f"{TOOL}: wrote {bundle} (sha256 {sha})", file=sys.stderr)
    print(bundle)


if __name__ == "__main__":
    main()
