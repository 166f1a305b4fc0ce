#!/usr/bin/env python3
"""Writes the MCP Registry entry for a release, dist/server.json (or --out DIR/server.json), from
packaging/registry/server.json: every version set to the workspace's, and the bundle's entry
pointed at the published .mcpb with that file's sha256 (which the registry requires and clients
check before they run it). Prints the path written. Publish it with the registry's
`mcp-publisher publish dist/server.json`, after the npm package, the wheels and the bundle.

Usage: packaging/registry/build.py --mcpb FILE [--url-base URL] [--out DIR]
  --url-base URL  where the bundle is published (default: the repository's release download
                  folder for the tag v<version>)
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "lib"))
import artifacts as a  # noqa: E402

TOOL = "registry/build.py"


def main() -> None:
    parser = argparse.ArgumentParser(description="Write the MCP Registry server.json of a release.")
    parser.add_argument("--mcpb", type=Path, required=True, help="the bundle packaging/mcpb/build.py wrote")
    parser.add_argument("--url-base", help="where the bundle will be downloaded from")
    parser.add_argument("--out", type=Path, default=a.ROOT / "dist")
    args = parser.parse_args()
    if not args.mcpb.is_file():
        a.fail(TOOL, f"{args.mcpb} is missing")
    version = a.version()
    entry = a.server_json()
    entry["version"] = version
    url_base = (args.url_base or f"{a.repository_url()}/releases/download/v{version}").rstrip("/")
    bundles = 0
    for package in entry["packages"]:
        package["version"] = version
        if package["registryType"] == "mcpb":
            package["identifier"] = f"{url_base}/{args.mcpb.name}"
            package["fileSha256"] = hashlib.sha256(args.mcpb.read_bytes()).hexdigest()
            bundles += 1
    if bundles != 1:
        a.fail(TOOL, f"packaging/registry/server.json lists {bundles} mcpb packages; it should list one")
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out.resolve() / "server.json"
    path.write_text(json.dumps(entry, indent=2) + "\n", encoding="utf-8")
    print(f"{TOOL}: wrote {path}", file=sys.stderr)
    print(path)


if __name__ == "__main__":
    main()
