"""Server paths out of everything a team sees.

A sandboxed bot runs in its upload's directory at its real path, and a crash's traceback, a
runtime's error or the bot's own prints carry that path (the contest's directory) and the
harness's (its checkout, its Python). The site shows such text to the team (its stderr, its
violations, its check log, its downloads): every string rendered into a page, and every download,
goes through :func:`Redactor.text`, which writes ``<contest>``, ``<tablebots>`` and ``<python>``
instead of those directories.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from markupsafe import Markup

__all__ = ["Redactor"]


class Redactor:
    """Replaces the server's directories (under ``root``, the contest's) in text shown to teams."""

    def __init__(self, root: Path) -> None:
        checkout = Path(__file__).resolve().parents[2]
        pairs = [(root, "<contest>"), (checkout, "<tablebots>"), (Path(sys.prefix), "<python>"),
                 (Path(sys.base_prefix), "<python>")]
        found: dict[str, str] = {}
        for path, name in pairs:
            for form in {str(path), os.path.realpath(path)}:
                if len(form) > 1:  # never "/"
                    found.setdefault(form, name)
        self._pairs = sorted(found.items(), key=lambda p: -len(p[0]))  # the longest first: nested paths

    def text(self, value: str) -> str:
        for path, name in self._pairs:
            if path in value:
                value = value.replace(path, name)
        return value

    def finalize(self, value: Any) -> Any:
        """A Jinja ``finalize``: every string rendered (Markup stays Markup: paths hold no markup)."""
        if isinstance(value, Markup):
            return Markup(self.text(str(value)))
        if isinstance(value, str):
            return self.text(value)
        return value
