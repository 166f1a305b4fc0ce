#!/usr/bin/env python3
"""Times `memory.recall` on a store: one `openhumand-mcp stdio` session on HOME, each question
asked 40 times, the median of the last 35 printed in milliseconds. Run it with two builds back to
back on the same home (the daemon stopped) to compare them.

    latency.py BIN HOME "question" ["question" ...]
"""
import json
import statistics
import subprocess
import sys
import time


def main():
    binary, home, questions = sys.argv[1], sys.argv[2], sys.argv[3:]
    proc = subprocess.Popen([binary, "--home", home, "stdio"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True)
    ids = iter(range(1, 1 << 30))

    def call(method, params):
        i = next(ids)
        proc.stdin.write(json.dumps({"jsonrpc": "2.0", "id": i, "method": method, "params": params}) + "\n")
        proc.stdin.flush()
        while True:
            msg = json.loads(proc.stdout.readline())
            if msg.get("id") == i:
                return msg

    call("initialize", {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "latency", "version": "1"}})
    for q in questions:
        times = []
        for _ in range(40):
            started = time.perf_counter()
            call("tools/call", {"name": "memory.recall", "arguments": {"query": q}})
            times.append((time.perf_counter() - started) * 1000)
        print(f"{statistics.median(times[5:]):7.2f} ms p50  {q}")
    proc.stdin.close()
    proc.wait(timeout=30)


if __name__ == "__main__":
    main()
