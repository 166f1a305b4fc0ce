#!/usr/bin/env python3
"""Validates server.json files against the MCP Registry's schema vendored beside this script
(server.schema.json, see README.md there), with `jsonschema` (Draft 7, formats checked):

  python3 packaging/registry/validate.py FILE...

Prints `ok - FILE` or every error under `not ok - FILE`, and exits 1 when any file fails, 2 when
`jsonschema` is not installed (tests/interop/setup.sh's py2 venv has it).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

SCHEMA = Path(__file__).resolve().parent / "server.schema.json"


def main() -> int:
    try:
        from jsonschema import Draft7Validator
    except ImportError:
        print("validate.py: the jsonschema package is not installed in this Python", file=sys.stderr)
        return 2
    if len(sys.argv) < 2:
        print("usage: validate.py FILE...", file=sys.stderr)
        return 2
    schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
    Draft7Validator.check_schema(schema)
    validator = Draft7Validator(schema, format_checker=Draft7Validator.FORMAT_CHECKER)
    failed = 0
    for name in sys.argv[1:]:
        document = json.loads(Path(name).read_text(encoding="utf-8"))
        errors = sorted(validator.iter_errors(document), key=lambda e: list(e.absolute_path))
        # The file must claim the schema it is checked against.
        if document.get("$schema") != schema["$id"]:
            print(f"not ok - {name}: $schema is {document.get('$schema')!r}, not {schema['$id']!r}")
            failed += 1
        elif errors:
            print(f"not ok - {name}")
            for e in errors:
                where = "/".join(str(p) for p in e.absolute_path) or "(top)"
                print(f"#   {where}: {e.message}")
            failed += 1
        else:
            print(f"ok - {name}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
