#!/usr/bin/env python3
"""Reference random bot for every tablebots game (protocol v1, stdlib only).

Answers ``hello`` with ``ready`` and every ``request`` with a uniformly random
offered action, by index. Exits on ``bye`` or end of input.

    python3 bots/random_bot.py [--seed N] [--name NAME]

It starts fast: a league may start a bot process for every deal (one process per deal), and
what a bot imports is paid at every start. The ``json`` package's Python half imports ``re``
and ``enum`` and ``argparse`` brings ``shutil`` and ``gettext``, ~15 ms of CPU a start
together (docs/performance.md), so this bot reads its two options by hand (anything else,
``--help`` included, goes to ``argparse``) and uses the C half of ``json`` directly where the
interpreter has it. A bot that thinks for a while needs none of this.
"""

from __future__ import annotations

import random
import sys

try:  # the C half of the json package, without its Python half's imports
    from _json import encode_basestring_ascii as quote
    from _json import make_scanner
except ImportError:  # (an interpreter without it)
    make_scanner = None


class _Decoding:
    """What ``_json.make_scanner`` reads off a decoder: plain JSON, as ``json.loads`` does."""

    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    parse_constant = float  # ("NaN", "Infinity", "-Infinity")


_scan = make_scanner(_Decoding()) if make_scanner is not None else None


def loads(line: str) -> dict:
    """One line of JSON (an object) as its value."""
    if _scan is None:
        import json
        return json.loads(line)
    return _scan(line.strip(), 0)[0]


def options(argv: list[str]) -> tuple[int | None, str]:
    """``--seed N`` and ``--name NAME`` (``=`` forms too); anything else to argparse."""
    seed: int | None = None
    name = "random-py"
    words = iter(argv)
    for word in words:
        key, eq, value = word.partition("=")
        if key not in ("--seed", "--name"):
            return parsed(argv)  # --help, or a mistake that argparse explains
        if not eq:
            value = next(words, "-")
            if value.startswith("-") and not (key == "--seed" and value[1:].isdigit()):
                return parsed(argv)  # (a missing value, or an option in its place)
        if key == "--name":
            name = value
        elif value.removeprefix("-").isdigit():
            seed = int(value)
        else:
            return parsed(argv)
    return seed, name


def parsed(argv: list[str]) -> tuple[int | None, str]:
    """The options as argparse reads them (it prints --help and explains mistakes)."""
    import argparse

    parser = argparse.ArgumentParser(description="Plays a uniformly random legal action.")
    parser.add_argument("--seed", type=int, default=None, help="seed of the bot's own RNG (default: random)")
    parser.add_argument("--name", default="random-py", help="name sent in the ready message")
    args = parser.parse_args(argv)
    return args.seed, args.name


def main() -> int:
    seed, name = options(sys.argv[1:])
    rng = random.Random(seed)
    out = sys.stdout
    for line in sys.stdin:
        if not line.strip():
            continue
        msg = loads(line)
        kind = msg.get("type")
        if kind == "hello":
            out.write(f'{{"type": "ready", "name": {quote_text(name)}}}\n')
            out.flush()
        elif kind == "request":
            index = rng.randrange(len(msg["actions"]))
            out.write(f'{{"type": "action", "id": {quote_text(msg["id"])}, "index": {index}}}\n')
            out.flush()
        elif kind == "bye":
            break
        # start and result need no answer
    return 0


def quote_text(value: object) -> str:
    """A request id (an integer) or a name as JSON."""
    if type(value) is int:
        return str(value)
    if make_scanner is None:
        import json
        return json.dumps(str(value))
    return quote(str(value))


if __name__ == "__main__":
    sys.exit(main())
