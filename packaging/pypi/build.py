#!/usr/bin/env python3
"""Builds the wheels of openhuman-mcp from binaries already built: one wheel per --bin-dir,

  openhuman_mcp-<version>-py3-none-<platform tags>.whl

holding no Python code, only the binaries as the wheel's scripts (`<name>.data/scripts/`), which
installers put in the environment's bin folder, beside each other:

  openhuman-mcp        the shim, under the package's name: what `uvx openhuman-mcp` and
                       `pipx run openhuman-mcp` run
  openhuman-mcp-shim   the same shim under its own name (what `openhumand-mcp install` copies)
  openhumand-mcp       the daemon, which the shim starts from its own folder

This is the layout ruff and uv ship with (maturin's `bindings = "bin"`), assembled here with the
standard library so that it takes prebuilt binaries, works offline and needs no Rust build. The
wheels go to dist/pypi/ (or --out); their paths are printed one per line.

Usage: packaging/pypi/build.py --bin-dir [TARGET=]DIR [--bin-dir ...] [--out DIR]
"""

from __future__ import annotations

import base64
import hashlib
import os
import sys
import time
import zipfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "lib"))
import artifacts as a  # noqa: E402

TOOL = "pypi/build.py"
# The wheel's distribution name, normalised as wheel file names want it.
DIST = a.PACKAGE.replace("-", "_")


def zip_time() -> tuple:
    """SOURCE_DATE_EPOCH when set (reproducible builds), else 1980-01-01, zip's first date."""
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    if epoch:
        return time.gmtime(int(epoch))[:6]
    return (1980, 1, 1, 0, 0, 0)


def record_hash(data: bytes) -> str:
    digest = hashlib.sha256(data).digest()
    return "sha256=" + base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


def metadata(version: str) -> str:
    readme = (
        "A personal memory and agent server for MCP clients: one long-running local daemon\n"
        "(`openhumand-mcp`) and the stdio shim your client launches (`openhuman-mcp`). This wheel\n"
        "carries the prebuilt binaries; no Python code runs.\n\n"
        "Register it with a client as a stdio server:\n\n"
        '```json\n{ "mcpServers": { "openhuman": { "command": "uvx", "args": ["openhuman-mcp"] } } }\n```\n\n'
        "`uvx --from openhuman-mcp openhumand-mcp status` runs the daemon's own commands.\n"
        "Set `OPENHUMAN_HOME` to keep everything under one folder.\n\n"
        # The MCP Registry checks that the PyPI package names the server it is listed under.
        f"<!-- mcp-name: {a.server_name()} -->\n"
    )
    fields = [
        ("Metadata-Version", "2.1"),
        ("Name", a.PACKAGE),
        ("Version", version),
        ("Summary", a.SUMMARY),
        ("Home-page", a.repository_url()),
        ("License", a.license_id()),
        ("Keywords", "mcp,model-context-protocol,memory,mcp-server"),
        ("Classifier", "Environment :: Console"),
        ("Classifier", "Programming Language :: Rust"),
        ("Description-Content-Type", "text/markdown"),
    ]
    return "".join(f"{k}: {v}\n" for k, v in fields) + "\n" + readme


def wheel_file(tags: tuple) -> str:
    lines = ["Wheel-Version: 1.0", "Generator: openhuman-mcp packaging/pypi/build.py",
             "Root-Is-Purelib: false"]
    lines += [f"Tag: py3-none-{tag}" for tag in tags]
    return "\n".join(lines) + "\n"


def build_wheel(b: a.Binaries, version: str, out: Path) -> Path:
    t = b.target
    name = f"{DIST}-{version}-py3-none-{'.'.join(t.wheel_tags)}.whl"
    data = f"{DIST}-{version}.data/scripts"
    info = f"{DIST}-{version}.dist-info"
    files = [
        (f"{data}/{a.PACKAGE}{t.exe}", b.shim.read_bytes(), 0o755),
        (f"{data}/{a.SHIM}{t.exe}", b.shim.read_bytes(), 0o755),
        (f"{data}/{a.DAEMON}{t.exe}", b.daemon.read_bytes(), 0o755),
        (f"{info}/METADATA", metadata(version).encode("utf-8"), 0o644),
        (f"{info}/WHEEL", wheel_file(t.wheel_tags).encode("utf-8"), 0o644),
    ]
    if (a.ROOT / "LICENSE").is_file():
        files.append((f"{info}/LICENSE", (a.ROOT / "LICENSE").read_bytes(), 0o644))
    record = "".join(f"{path},{record_hash(body)},{len(body)}\n" for path, body, _ in files)
    record += f"{info}/RECORD,,\n"
    files.append((f"{info}/RECORD", record.encode("utf-8"), 0o644))

    path = out / name
    tmp = path.with_suffix(".whl.part")
    with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=6) as zf:
        for arcname, body, mode in files:
            entry = zipfile.ZipInfo(arcname, date_time=zip_time())
            entry.compress_type = zipfile.ZIP_DEFLATED
            entry.external_attr = (0o100000 | mode) << 16  # a regular file with this mode
            entry.create_system = 3  # Unix, so installers read the mode
            zf.writestr(entry, body)
    tmp.replace(path)
    return path


def main() -> None:
    args = a.arguments(TOOL, "Build the wheels of openhuman-mcp.", a.ROOT / "dist" / "pypi")
    version = a.version()
    for b in args.bins:
        path = build_wheel(b, version, args.out)
        print(f"{TOOL}: wrote {path}", file=sys.stderr)
        print(path)


if __name__ == "__main__":
    main()
