"""Team tokens and sessions: what signs a team in, and what the database keeps of it.

A token is ``tb<team id>_<32 random bytes, url-safe>``: the id finds the team's row, whose
scrypt hash (n=2**12, r=8, p=1: 4 MB of memory; a random 16-byte salt) is compared with
``hmac.compare_digest``. Only the hash is stored; the token is printed once by ``harness contest
team add``.

The cost: a token has 256 random bits, so no hash cost makes guessing it any harder; the slow,
memory-hard hash is there so that a copied database gives nothing away cheaply. n=2**14 took
110 ms here (2 cores, load 8) and 20 teams signing in at once 2.6 s; n=2**12 takes ~25 ms, so
20 at once stay under the site's 1 s (bench/contest.py part 2). The site also keeps, in memory
only, the SHA-256 of tokens it has verified (:class:`TokenCache`): a script polling
``/api/submissions/ID`` pays the hash once, and a wrong token always pays it, but only within the
sign-in limit: the site counts an attempt with a token it has not verified (:meth:`TokenCache.cached`)
before hashing it, and refuses past the limit unhashed.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
import threading

from harness.contest.db import ContestDB

__all__ = ["new_token", "hash_token", "TokenCache", "session_key", "new_session_id", "new_csrf", "add_team",
           "renew_token", "TeamError"]

TOKEN_RE = re.compile(r"^tb(\d{1,9})_([A-Za-z0-9_-]{20,100})$")
SCRYPT = {"n": 2 ** 12, "r": 8, "p": 1, "dklen": 32}


def hash_token(token: str, salt: bytes) -> bytes:
    return hashlib.scrypt(token.encode("utf-8"), salt=salt, **SCRYPT)


def new_token(team_id: int) -> tuple[str, bytes, bytes]:
    """A fresh token for ``team_id``: (token, salt, hash)."""
    token = f"tb{team_id}_{secrets.token_urlsafe(32)}"
    salt = secrets.token_bytes(16)
    return token, salt, hash_token(token, salt)


class TokenCache:
    """Verifies tokens against the database, remembering the ones it verified (by their SHA-256)."""

    def __init__(self, db: ContestDB) -> None:
        self.db = db
        # by the token's SHA-256: its team and the token hash it was verified against (a renewed
        # token changes the hash, and the old one stops working here too)
        self._known: dict[bytes, tuple[int, bytes]] = {}
        self._lock = threading.Lock()

    def cached(self, token: str) -> int | None:
        """The team of a token verified before (and not renewed since), without hashing; else None."""
        digest = hashlib.sha256(token.encode("utf-8")).digest()
        with self._lock:
            known = self._known.get(digest)
        if known is not None:
            cached = self.db.team(known[0])
            if cached is not None and hmac.compare_digest(cached.token_hash, known[1]):
                return known[0]
        return None

    def team_of(self, token: str) -> int | None:
        """The id of the team whose token this is, else None."""
        match = TOKEN_RE.match(token.strip())
        if not match:
            return None
        known = self.cached(token)
        if known is not None:
            return known
        digest = hashlib.sha256(token.encode("utf-8")).digest()
        team = self.db.team(int(match.group(1)))
        if team is None:
            hash_token(token, b"0" * 16)  # the same cost as a real check: no timing tells which ids exist
            return None
        if not hmac.compare_digest(hash_token(token, team.salt), team.token_hash):
            return None
        with self._lock:
            self._known[digest] = (int(team.id), bytes(team.token_hash))
        return int(team.id)

    def forget(self) -> None:
        with self._lock:
            self._known.clear()


def new_session_id() -> str:
    return secrets.token_urlsafe(32)


def session_key(session_id: str) -> str:
    """What the sessions table keeps of a cookie value: its SHA-256 (hex)."""
    return hashlib.sha256(session_id.encode("utf-8")).hexdigest()


def new_csrf() -> str:
    return secrets.token_urlsafe(24)


NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,39}$")


class TeamError(ValueError):
    """A team that cannot be added (a bad or taken name)."""


def add_team(db: ContestDB, name: str) -> str:
    """Add the team ``name``; return its token (shown once: only its hash is stored)."""
    if not NAME_RE.match(name):
        raise TeamError(f"{name!r} is not allowed as a team name (1-40 letters, digits, '_', '.', '-', "
                        f"starting with a letter or digit)")
    if db.team_by_name(name) is not None:
        raise TeamError(f"a team named {name!r} exists already (harness contest team token DIR {name} "
                        f"gives it a new token)")
    team_id = db.add_team(name, b"", b"")  # the token names the id: hashed once the id is known
    token, salt, digest = new_token(team_id)
    db.set_team_token(team_id, salt, digest)
    return token


def renew_token(db: ContestDB, name: str) -> str:
    """A new token for the team ``name``; the old one and its sessions stop working."""
    team = db.team_by_name(name)
    if team is None:
        raise TeamError(f"no team named {name!r}")
    token, salt, digest = new_token(int(team.id))
    db.set_team_token(int(team.id), salt, digest)
    return token
