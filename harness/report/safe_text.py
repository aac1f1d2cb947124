"""Bot-supplied text made safe for a terminal: control characters shown, never obeyed.

A bot chooses its stderr, the bytes it answers and (through them) parts of every violation's
detail. Printed raw, an ESC sequence can clear the screen, retitle the window (OSC), plant a
hyperlink (OSC 8) or hide text; C1 controls (U+0080-U+009F, e.g. U+009B, the one-byte CSI)
do the same on terminals that honour them; BEL, BS, CR, NUL and DEL overwrite or hide what
the user reads. Every text output of the harness passes through :func:`visible`, which writes
each such character as a visible escape (``\\x1b``, ``\\u009b``); tab and newline stay. The
Unicode direction overrides and isolates (U+202A-U+202E, U+2066-U+2069), which reorder what is
shown, and the line and paragraph separators are escaped too. JSON outputs are not passed
through it: JSON escapes control characters itself, and must stay exact.
"""

from __future__ import annotations

import re

__all__ = ["visible"]

# C0 controls but tab and newline, DEL, C1 controls, direction overrides/isolates, separators
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
_UNSAFE_ONE_LINE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x80 else f"\\u{code:04x}"


def visible(text: str, *, one_line: bool = False) -> str:
    """``text`` with every control character written as a visible escape (``\\x1b``, ``\\u009b``).

    Tab and newline are kept unless ``one_line``, which escapes them too (for a value that must
    stay on its line, such as a bot's name in a table).
    """
    return (_UNSAFE_ONE_LINE if one_line else _UNSAFE).sub(_escape, text)
