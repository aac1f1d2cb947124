#!/usr/bin/env python3
"""A hostile test bot: terminal control sequences everywhere a bot can put text.

It writes escape sequences to stderr (clear screen, OSC window title, OSC 8 hyperlink, the
one-byte CSI U+009B, BEL, BS, CR, NUL, DEL), answers ready with such a name, and answers its
first request with a line full of them (a malformed answer, so it is recorded as received).
"""

import json
import sys

NASTY = "\x1b[2J\x1b]0;pwned\x07\x1b]8;;http://127.0.0.1/\x1b\\link\x1b]8;;\x1b\\\u009b31m\x08\r\x00\x7f"

sys.stderr.write("stderr says " + NASTY + "\n")
sys.stderr.flush()
for line in sys.stdin:
    msg = json.loads(line)
    if msg["type"] == "hello":
        print(json.dumps({"type": "ready", "name": "evil" + NASTY}), flush=True)
    elif msg["type"] == "request":
        sys.stderr.write("thinking " + NASTY + "\n")
        sys.stderr.flush()
        sys.stdout.buffer.write(("not json " + NASTY + "\n").encode("utf-8"))
        sys.stdout.flush()
    elif msg["type"] == "bye":
        break
