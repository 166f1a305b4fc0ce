#!/usr/bin/env python3
"""Writes a Telegram Desktop account export (`result.json` shape) of generated chats, to
measure what reading a large export costs (BENCHMARKS.md, "A Telegram account export read chat
by chat").

    python3 tools/large-exports/telegram_account.py OUT.json [--chats 50] [--messages 10000]
"""
import argparse
import json
import random

WORDS = "ferry island pier snorkels boat morning ticket harbour lunch market beach towel sunscreen bus station coffee".split()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--chats", type=int, default=50)
    ap.add_argument("--messages", type=int, default=10_000)
    args = ap.parse_args()
    rng = random.Random(1)
    n = 0
    with open(args.out, "w", encoding="utf-8") as f:
        f.write('{"about": "generated", "personal_information": {"first_name": "Sam"}, "chats": {"about": "x", "list": [')
        for c in range(args.chats):
            msgs = []
            for _ in range(args.messages):
                n += 1
                text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(5, 25)))
                msgs.append({"id": n, "type": "message", "date": "2024-05-01T09:00:00",
                             "date_unixtime": str(1714554000 + n * 60), "from": rng.choice(["Ana", "Sam", "Jo"]),
                             "from_id": "user1", "text": text, "text_entities": [{"type": "plain", "text": text}]})
            f.write(("," if c else "") + json.dumps({"name": f"Chat {c}", "type": "personal_chat", "id": c, "messages": msgs}))
        f.write("]}}")


if __name__ == "__main__":
    main()
