#!/usr/bin/env python3
"""Precision of the top people and topics that `people_topics` printed, against the hand labels
in `labels.tsv` (one line per entity id: 1 a person / a real topic, 0 not).

Usage: precision.py <labels.tsv> <people_topics output>… [--top N]. For each output it prints
`person p/N` and `topic t/N` over its first N (default 20) of each list, and names any entity
the labels do not judge yet (those count as misses until judged).
"""

import re
import sys


def labels(path):
    out = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.startswith("#") or not line.strip():
                continue
            kind, entity, verdict, *_ = line.rstrip("\n").split("\t")
            out[entity] = verdict == "1"
    return out


def top(text, kind, n):
    section = text.split(f"## top {kind}")[1].split("## top")[0]
    return re.findall(r"^\s*\d+\. .*? \(((?:person|topic|bot):[^;]*);", section, re.M)[:n]


def main():
    args = sys.argv[1:]
    n = 20
    if "--top" in args:
        i = args.index("--top")
        n = int(args[i + 1])
        del args[i : i + 2]
    if len(args) < 2:
        sys.exit(__doc__)
    judged = labels(args[0])
    for path in args[1:]:
        with open(path, encoding="utf-8") as f:
            text = f.read()
        cells = []
        for kind in ("person", "topic"):
            ids = top(text, kind, n)
            unjudged = [i for i in ids if i not in judged]
            good = sum(1 for i in ids if judged.get(i, False))
            cells.append(f"{kind} {good}/{len(ids)}" + (f" (unjudged: {', '.join(unjudged)})" if unjudged else ""))
        print(f"{path}: " + "; ".join(cells))


if __name__ == "__main__":
    main()
