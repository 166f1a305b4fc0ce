#!/usr/bin/env python3
"""Measures recall on a personal store the way issue 23's check reads one: short notes written
for this measurement (`notes/`), next to other people's chat and mail, asked everyday questions
about the notes (`questions.tsv`; `paraphrases.tsv` asks the same notes in other words).
`notes-b/` and `questions-b.tsv` are a second set, written later to see how rules tuned on the
first carry over: 24 notes in other shapes (lists, lower-case jottings, planning notes) and 40
questions written before any ranking was looked at, asked with `--notes notes,notes-b` (both
sets in one store).

The store is a watched folder in a fresh home: the notes, LoCoMo development conversations as a
chat export (`--chats`, two by default) and a seeded sample of real mail (`--mail`, 2,000 by
default: Debian changelog entries as an mbox, built by ../people-corpus/build.py from what the
machine has, so the sample changes with the packages installed), and with `--tech-chat N` N
other entries as technical chat lines; `--irc` writes the chat as irssi logs instead of chat
lines. Every question goes through `openhumand-mcp recall --json
-k 10`.

Reported, over the questions about notes:
  P@1     the note that answers comes first;
  MRR     mean reciprocal rank of that note within the first k hits (0 when absent);
  padded  questions with more than one mail or chat hit (the check allows one), and those hits;
  and how many snippets mark an English function word (the check allows none).

Usage:
  measure.py --bin target/fast/openhumand-mcp --work /dev/shm/ps [--mail 2000] [--chats 2]
             [--tech-chat N] [--irc] [--locomo locomo-dev.json] [--notes notes,notes-b]
             [--questions questions-b.tsv] [--reuse] [-v]

`--locomo` is a file of LoCoMo conversations (the public LoCoMo data, or a development split of
it); without one, `--chats 0` leaves chat out.

`--reuse` keeps the work directory's home and folder and only restarts the daemon with `--bin`
(to compare two builds on the same store). `-v` prints every question that misses or pads.
"""

import argparse
import importlib.util
import json
import os
import random
import re
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))

# English function words: a snippet that marks one of them (`**my**`) fails the check.
STOP = set("""a about above after again against all am an and any are as at be because been before being
below between both but by can could did do does doing down during each few for from further had has
have having he her here hers herself him himself his how i if in into is it its itself just me more
most my myself no nor not now of off on once only or other our ours ourselves out over own same she
should so some such than that the their theirs them themselves then there these they this those
through to too under until up very was we were what when where which while who whom why will with
would you your yours yourself yourselves us must might shall may also every among upon yet ever
either neither whether within without""".split())
MARK = re.compile(r"\*\*([^*]+)\*\*")


def load_build():
    spec = importlib.util.spec_from_file_location("build", os.path.join(HERE, "..", "people-corpus", "build.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def questions(name):
    out = []
    with open(os.path.join(HERE, name), encoding="utf-8") as f:
        for line in f:
            if line.startswith("#") or not line.strip():
                continue
            q, note = line.rstrip("\n").split("\t")
            out.append((q, note))
    return out


def build_folder(folder, args):
    build = load_build()
    os.makedirs(folder)
    for notes in args.notes.split(","):
        for name in sorted(os.listdir(os.path.join(HERE, notes))):
            shutil.copyfile(os.path.join(HERE, notes, name), os.path.join(folder, name))
    if args.chats:
        with open(args.locomo, encoding="utf-8") as f:
            conversations = json.load(f)[: args.chats]
        scratch = os.path.join(args.work, "scratch")
        os.makedirs(scratch)
        first = os.path.join(scratch, "locomo.json")
        with open(first, "w", encoding="utf-8") as f:
            json.dump(conversations, f)
        build.locomo(scratch, first)
        for name in os.listdir(os.path.join(scratch, "locomo")):
            shutil.copyfile(os.path.join(scratch, "locomo", name), os.path.join(folder, name))
    if args.mail or args.tech_chat:
        # One seeded order of every entry: the mail is its start, the technical chat the entries
        # after it, so that no entry is both.
        entries = list(build.entries())
        random.Random(args.seed).shuffle(entries)
        scratch = os.path.join(args.work, "scratch")
        if args.mail:
            build.mail(scratch, entries[: args.mail])
            shutil.copyfile(os.path.join(scratch, "mail", "debian-changelogs.mbox"), os.path.join(folder, "mail.mbox"))
        if args.tech_chat:
            build.chat(scratch, entries[args.mail : args.mail + args.tech_chat])
            shutil.copyfile(
                os.path.join(scratch, "chat", "debian-changelogs.jsonl"), os.path.join(folder, "tech-chat.jsonl")
            )
    if args.irc:
        as_irc_logs(folder)


def as_irc_logs(folder):
    """Rewrites every chat-lines file of `folder` as irssi logs, one `#<channel>.log` per
    channel, the way a user's IRC client keeps them: nicks, one line per message line."""
    for name in sorted(os.listdir(folder)):
        if not name.endswith(".jsonl"):
            continue
        channels = {}
        with open(os.path.join(folder, name), encoding="utf-8") as f:
            for line in f:
                m = json.loads(line)
                channels.setdefault(m["channel"], []).append(m)
        os.remove(os.path.join(folder, name))
        for channel, msgs in channels.items():
            msgs.sort(key=lambda m: m["ts"])
            safe = re.sub(r"[^\w.+-]", "_", channel)
            with open(os.path.join(folder, f"#{safe}.log"), "w", encoding="utf-8") as out:
                day = None
                for m in msgs:
                    when = time.gmtime(m["ts"])
                    if day is None:
                        out.write(time.strftime("--- Log opened %a %b %d %H:%M:%S %Y\n", when))
                    elif when[:3] != day:
                        out.write(time.strftime("--- Day changed %a %b %d %Y\n", when))
                    day = when[:3]
                    nick = re.sub(r"\W", "_", m["from"].split()[0].lower()) if m["from"].split() else "someone"
                    for text in m["text"].splitlines():
                        if text.strip():
                            out.write(f"{time.strftime('%H:%M', when)} < {nick}> {text.strip()}\n")


def cli(args, *rest, check=True):
    cmd = [args.bin, "--home", args.home, *rest]
    return subprocess.run(cmd, check=check, capture_output=True, text=True)


def start(args):
    cli(args, "stop", check=False)
    deadline = time.time() + 30
    while cli(args, "status", check=False).returncode == 0:
        if time.time() > deadline:
            sys.exit("a daemon on this home did not stop within 30 s")
        time.sleep(0.2)
    log = open(os.path.join(args.work, "daemon.log"), "a")
    proc = subprocess.Popen([args.bin, "--home", args.home, "serve"], stdout=log, stderr=log)
    deadline = time.time() + 30
    while time.time() < deadline:
        if cli(args, "status", "--json", check=False).returncode == 0:
            return proc
        time.sleep(0.2)
    sys.exit("the daemon did not answer `status` within 30 s; see daemon.log")


def watching(args, folder):
    deadline = time.time() + 1800
    while time.time() < deadline:
        r = cli(args, "recall", "--json", "-k", "1", "anything")
        if "still_reading" not in json.loads(r.stdout):
            return
        time.sleep(1)
    sys.exit(f"{folder} was still being read after 30 minutes")


def note_of(hit):
    """The note (a Markdown file of the folder) a hit comes from, or None for mail and chat."""
    base = os.path.basename(str(hit.get("source_ref", "")))
    return base[:-3] if base.endswith(".md") else None


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--bin", required=True)
    p.add_argument("--work", required=True)
    p.add_argument("--mail", type=int, default=2000)
    p.add_argument("--chats", type=int, default=2)
    p.add_argument("--tech-chat", type=int, default=0, help="also this many changelog entries as short technical chat lines, one channel per package")
    p.add_argument("--irc", action="store_true", help="write the chat (LoCoMo and technical) as irssi logs, one per channel, instead of chat lines")
    p.add_argument("--seed", type=int, default=23)
    p.add_argument("--locomo", default=os.path.join(HERE, "..", "..", "..", "shared", "datasets", "locomo-dev", "locomo-dev.json"))
    p.add_argument("-k", type=int, default=10)
    p.add_argument("--reuse", action="store_true")
    p.add_argument("-v", action="store_true")
    p.add_argument("--notes", default="notes", help="the folders of notes to store, comma-separated (notes, notes-b)")
    p.add_argument("--questions", default="questions.tsv", help="questions.tsv, or paraphrases.tsv (no rarer word in common with the note)")
    args = p.parse_args()
    args.bin = os.path.abspath(args.bin)
    args.home = os.path.join(args.work, "home")
    folder = os.path.join(args.work, "notes")
    if not args.reuse:
        if args.chats and not os.path.exists(args.locomo):
            sys.exit(f"no LoCoMo file at {args.locomo}: pass --locomo <locomo-dev.json>, or --chats 0 for no chat")
        if os.path.exists(args.work):
            sys.exit(f"{args.work} exists; remove it or pass --reuse")
        os.makedirs(args.home)
        build_folder(folder, args)
    proc = start(args)
    try:
        if not args.reuse:
            cli(args, "sources", "add", folder)
        watching(args, folder)
        qs = questions(args.questions)
        first = rr = padded = other_hits = 0
        stop_marked = []
        for q, note in qs:
            r = cli(args, "recall", "--json", "-k", str(args.k), q)
            hits = json.loads(r.stdout).get("chunks", [])
            notes = [note_of(h) for h in hits]
            for h in hits:
                stop_marked += [w for w in MARK.findall(h.get("snippet", "")) if w.lower() in STOP]
            others = sum(1 for n in notes if n is None)
            rank = next((i + 1 for i, n in enumerate(notes) if n == note), None)
            first += rank == 1
            rr += 1 / rank if rank else 0
            other_hits += others
            padded += others > 1
            if args.v and (rank != 1 or others > 1):
                shown = ", ".join(n or (h.get("source_kind") or "?") for n, h in zip(notes, hits))
                print(f"  rank {rank}, {others} other: {q}  [{shown}]")
        n = len(qs)
        print(f"P@1 {first}/{n} = {first / n:.3f}  MRR {rr / n:.3f}  padded {padded} ({other_hits} mail/chat hits)")
        print(f"stop words marked in snippets: {len(stop_marked)} {sorted(set(stop_marked))[:20]}")
    finally:
        cli(args, "stop", check=False)
        proc.wait(timeout=30)


if __name__ == "__main__":
    main()
