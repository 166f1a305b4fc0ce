#!/usr/bin/env python3
"""Builds the inputs of the people/topics precision measurement (BENCHMARKS.md, "People and
topics") from public data already on a Debian machine with a Rust toolchain:

  md/    every README.md and CHANGELOG.md at the top of a crate under ~/.cargo/registry/src
         (real Markdown notes-like text, written by thousands of authors);
  mail/  debian-changelogs.mbox: each entry of every /usr/share/doc/*/changelog.Debian.gz as
         one message, From: the entry's trailer (`-- Name <address>  date`), Subject: the
         package and version, body: the change lines;
  chat/  debian-changelogs.jsonl: the same entries as chat lines (`{ts, from, text, channel}`:
         the trailer's name, the change lines, the package as the channel), for the chat
         importer's senders. No public IRC or chat log ships on the machine; these are real
         people's real short messages.

  locomo/ with a second argument, the LoCoMo development file (`locomo-dev.json` of the shared
         datasets): each conversation as chat lines (`{ts, from, text, channel}`: the speaker,
         the turn, the conversation's id as the channel; each session's turns a minute apart
         from its `session_N_date_time`). Two people talking about their lives: the corpus
         where generic words (`time`, `think`, `want`) crowd the topics. `locomo-turns/` holds the
         same turns three hours apart, so the chat packer makes one chunk of each turn (short
         lines, as an IRC log's).

Usage: build.py <output dir> [locomo-dev.json]. Nothing here is committed; only this script is.
"""

import datetime
import email.utils
import glob
import json
import gzip
import os
import re
import shutil
import sys

HEADER = re.compile(r"^(\S+) \(([^)]+)\) ([^;]*);")
TRAILER = re.compile(r"^ -- (.+?) <([^>]+)>\s+(.+)$")


def markdown(out):
    n = 0
    for path in sorted(glob.glob(os.path.expanduser("~/.cargo/registry/src/*/*/*.md"))):
        name = os.path.basename(path)
        if name not in ("README.md", "CHANGELOG.md"):
            continue
        crate = os.path.basename(os.path.dirname(path))
        dest = os.path.join(out, "md", crate)
        os.makedirs(dest, exist_ok=True)
        shutil.copyfile(path, os.path.join(dest, name))
        n += 1
    return n


def changelog_entries(text):
    head, body = None, []
    for line in text.splitlines():
        m = HEADER.match(line)
        if m:
            head, body = m, []
            continue
        t = TRAILER.match(line)
        if t and head:
            yield head, body, t
            head = None
            continue
        if head:
            body.append(line)


def entries():
    """Every dated changelog entry: (package, version, distribution, name, address, when, body)."""
    for path in sorted(glob.glob("/usr/share/doc/*/changelog.Debian.gz")):
        with gzip.open(path, "rt", encoding="utf-8", errors="replace") as f:
            text = f.read()
        for head, body, trailer in changelog_entries(text):
            name, addr, date = trailer.groups()
            try:
                when = email.utils.parsedate_to_datetime(date)
            except (TypeError, ValueError):
                continue
            pkg, version, dist = head.groups()
            yield pkg, version, dist.strip(), name, addr, when, body


def mail(out, items=None):
    """Writes `items` (every entry when None) as an mbox; returns how many."""
    os.makedirs(os.path.join(out, "mail"), exist_ok=True)
    n = 0
    with open(os.path.join(out, "mail", "debian-changelogs.mbox"), "w", encoding="utf-8") as mbox:
        for pkg, version, dist, name, addr, when, body in entries() if items is None else items:
            lines = [("> " + l if l.startswith("From ") else l) for l in body]
            mbox.write("From MAILER-DAEMON " + when.strftime("%a %b %d %H:%M:%S %Y") + "\n")
            mbox.write(f"From: {email.utils.formataddr((name, addr))}\n")
            mbox.write(f"Subject: {pkg} {version} ({dist})\n")
            mbox.write(f"Date: {email.utils.format_datetime(when)}\n")
            mbox.write(f"Message-ID: <{pkg}-{version}@changelog.invalid>\n")
            mbox.write("Content-Type: text/plain; charset=utf-8\n\n")
            mbox.write("\n".join(lines).strip("\n") + "\n\n")
            n += 1
    return n


def chat(out, items=None):
    """Writes `items` (every entry when None) as chat lines; returns how many."""
    os.makedirs(os.path.join(out, "chat"), exist_ok=True)
    n = 0
    with open(os.path.join(out, "chat", "debian-changelogs.jsonl"), "w", encoding="utf-8") as f:
        for pkg, _version, _dist, name, _addr, when, body in entries() if items is None else items:
            text = "\n".join(l.strip() for l in body if l.strip())
            if text:
                msg = {"ts": int(when.timestamp()), "from": name, "text": text, "channel": pkg}
                f.write(json.dumps(msg, ensure_ascii=False) + "\n")
                n += 1
    return n


def locomo(out, path, folder="locomo", step=60):
    os.makedirs(os.path.join(out, folder), exist_ok=True)
    n = 0
    with open(path, encoding="utf-8") as f:
        conversations = json.load(f)
    for conv in conversations:
        c = conv["conversation"]
        name = conv.get("sample_id", "conversation")
        with open(os.path.join(out, folder, f"{name}.jsonl"), "w", encoding="utf-8") as dest:
            for key in sorted((k for k in c if re.fullmatch(r"session_\d+", k)), key=lambda k: int(k.split("_")[1])):
                when = datetime.datetime.strptime(c[key + "_date_time"], "%I:%M %p on %d %B, %Y")
                when = when.replace(tzinfo=datetime.timezone.utc)
                for i, turn in enumerate(c[key]):
                    ts = int(when.timestamp()) + step * i
                    dest.write(json.dumps({"ts": ts, "from": turn["speaker"], "text": turn["text"], "channel": name}) + "\n")
                    n += 1
    return n


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit("usage: build.py <output dir> [locomo-dev.json]")
    out = sys.argv[1]
    if len(sys.argv) == 3:
        print(f"locomo turns: {locomo(out, sys.argv[2])}")
        locomo(out, sys.argv[2], "locomo-turns", 3 * 3600)
    print(f"markdown files: {markdown(out)}")
    print(f"mail messages: {mail(out)}")
    print(f"chat messages: {chat(out)}")


if __name__ == "__main__":
    main()
