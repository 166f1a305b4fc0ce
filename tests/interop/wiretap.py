#!/usr/bin/env python3
"""Debugging aid: run an MCP stdio server and log every line that crosses its stdin/stdout.

    wiretap.py LOGFILE -- COMMAND [ARGS...]

Lines go to LOGFILE prefixed `>> ` (client to server) or `<< ` (server to client). The clients in
this directory use it when OPENHUMAN_INTEROP_TRACE=DIR is set (one log per test case). Stderr of the
server passes through unchanged. The wiretap exits with the server's exit status once the server has
exited, closing the server's stdin when its own stdin reaches EOF.
"""

import subprocess
import sys
import threading


def main() -> int:
    if len(sys.argv) < 4 or sys.argv[2] != "--":
        print(__doc__, file=sys.stderr)
        return 2
    log = open(sys.argv[1], "a", buffering=1, encoding="utf-8")
    lock = threading.Lock()
    child = subprocess.Popen(sys.argv[3:], stdin=subprocess.PIPE, stdout=subprocess.PIPE)

    def write(prefix: str, line: bytes) -> None:
        with lock:
            log.write(prefix + line.decode("utf-8", "replace").rstrip("\n") + "\n")

    def pump_in() -> None:
        src = sys.stdin.buffer
        try:
            for line in iter(src.readline, b""):
                write(">> ", line)
                child.stdin.write(line)
                child.stdin.flush()
        except (BrokenPipeError, OSError):
            pass
        finally:
            write("-- ", b"client closed stdin")
            try:
                child.stdin.close()
            except OSError:
                pass

    threading.Thread(target=pump_in, daemon=True).start()
    out = sys.stdout.buffer
    for line in iter(child.stdout.readline, b""):
        write("<< ", line)
        try:
            out.write(line)
            out.flush()
        except (BrokenPipeError, OSError):
            break
    rc = child.wait()
    write("-- ", f"server exited with {rc}".encode())
    return rc


if __name__ == "__main__":
    sys.exit(main())
