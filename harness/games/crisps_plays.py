"""Crisps plays: classification and generation, by rank counts (no subset search).

Ranks are ints 2..11; 11 is the Queen (or, with the ``jacks`` option, the Jack).
A hand is a list of 12 counts indexed by rank (indices 0 and 1 unused). Cards of
equal rank are interchangeable, so a play is identified by a *key*
``(kind, length, low)``: its kind, its number of cards and its lowest rank.
Keys sort in canonical order (kind, then length, then rank).
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Mapping, Sequence

SINGLE, PAIR, RUN, PAIR_RUN, TRIPLE, QUAD = range(6)
KIND_NAMES = ("single", "pair", "run", "pair_run", "triple", "quad")
SPECIAL_KINDS = (TRIPLE, QUAD)
TOP = 11  # the Queen (or Jack)
RANKS = tuple(range(2, TOP + 1))

Key = tuple[int, int, int]


def key_ranks(key: Key) -> tuple[int, ...]:
    """The ranks of the cards of a play, ascending."""
    kind, n, low = key
    if kind == RUN:
        return tuple(range(low, low + n))
    if kind == PAIR_RUN:
        return tuple(r for r in range(low, low + n // 2) for _ in (0, 1))
    return (low,) * n


def key_high(key: Key) -> int:
    """A play's rank: its highest card."""
    kind, n, low = key
    if kind == RUN:
        return low + n - 1
    if kind == PAIR_RUN:
        return low + n // 2 - 1
    return low


def key_has_top(key: Key) -> bool:
    """True if the play contains a Queen (a Jack with ``jacks``)."""
    return key_high(key) == TOP


def classify(ranks: Sequence[int], jacks: bool) -> Key | str:
    """The key of the sorted ranks ``ranks``, or a string saying why they are no play."""
    n = len(ranks)
    if n == 0:
        return "a play needs at least one card"
    low, high = ranks[0], ranks[-1]
    if low == high:
        if n > 4:
            return "there are only four cards of each rank"
        return (SINGLE, PAIR, TRIPLE, QUAD)[n - 1], n, low
    top_ok = jacks or high < TOP
    if all(ranks[i] == low + i for i in range(n)):
        if n < 3:
            return "two different ranks are no play (a run needs 3 or more cards)"
        if not top_ok:
            return "a Queen is never part of a run"
        return RUN, n, low
    if n % 2 == 0 and all(ranks[i] == low + i // 2 for i in range(n)):
        if not top_ok:
            return "a Queen is never part of a run of pairs"
        return PAIR_RUN, n, low
    return "not a single, pair, run of 3+, run of 2+ pairs, three or four of a kind"


def lead_plays(counts: Sequence[int], jacks: bool) -> list[Key]:
    """Every play the hand ``counts`` can lead, in canonical order."""
    singles: list[Key] = []
    pairs: list[Key] = []
    specials: list[Key] = []
    quads: list[Key] = []
    for r in RANKS:
        c = counts[r]
        if c:
            singles.append((SINGLE, 1, r))
            if c >= 2:
                pairs.append((PAIR, 2, r))
                if c >= 3:
                    specials.append((TRIPLE, 3, r))
                    if c == 4:
                        quads.append((QUAD, 4, r))
    top = TOP if jacks else TOP - 1
    out = singles + pairs
    if len(singles) >= 3:
        out += _run_keys(counts, 1, top, 3, RUN)
    if len(pairs) >= 2:
        out += _run_keys(counts, 2, top, 2, PAIR_RUN)
    out += specials
    out += quads
    return out


def _run_keys(counts: Sequence[int], need: int, top: int, min_len: int, kind: int) -> list[Key]:
    """Keys of every run of ranks each held ``need`` times, by length then start."""
    segments: list[tuple[int, int]] = []  # maximal stretches of ranks held ``need`` times: (start, end)
    r = 2
    while r <= top:
        if counts[r] < need:
            r += 1
            continue
        end = r
        while end < top and counts[end + 1] >= need:
            end += 1
        if end - r + 1 >= min_len:
            segments.append((r, end))
        r = end + 2
    if not segments:
        return []
    found: list[Key] = []
    longest = max(end - start + 1 for start, end in segments)
    for size in range(min_len, longest + 1):
        n = size * need
        for start, end in segments:
            found.extend([(kind, n, s) for s in range(start, end - size + 2)])
    return found


def follow_plays(counts: Sequence[int], table: Key, jacks: bool) -> list[Key]:
    """Every play of ``counts`` that may follow the play ``table`` (rulings K3, K4), canonical order."""
    kind, n, low = table
    high = key_high(table)
    out: list[Key] = []
    if kind == SINGLE or kind == PAIR:
        out.extend((kind, n, r) for r in range(high, TOP + 1) if counts[r] >= n)
    elif kind == RUN or kind == PAIR_RUN:
        per = 1 if kind == RUN else 2
        size = n // per
        top = TOP if jacks else TOP - 1
        for start in range(low, top - size + 2):
            for r in range(start, start + size):
                if counts[r] < per:
                    break
            else:
                out.append((kind, n, start))
    if kind < TRIPLE:
        if high == TOP:  # a play containing a Queen: any special may follow
            out.extend((TRIPLE, 3, r) for r in RANKS if counts[r] >= 3)
            out.extend((QUAD, 4, r) for r in RANKS if counts[r] == 4)
    elif kind == TRIPLE:
        out.extend((TRIPLE, 3, r) for r in range(high + 1, TOP + 1) if counts[r] >= 3)
        out.extend((QUAD, 4, r) for r in RANKS if counts[r] == 4)
    else:
        out.extend((QUAD, 4, r) for r in range(high + 1, TOP + 1) if counts[r] == 4)
    return out


def may_follow(play: Key, table: Key) -> str | None:
    """None if ``play`` may follow ``table``, else the reason it may not (ruling K4)."""
    kind, n, _ = play
    tkind, tn, _ = table
    high, thigh = key_high(play), key_high(table)
    if kind in SPECIAL_KINDS:
        if tkind in SPECIAL_KINDS:
            if n > tn or (n == tn and high > thigh):
                return None
            return ("a special follows a special only with more cards, or as many cards and a strictly "
                    "higher rank")
        if thigh == TOP:
            return None
        return "a special may follow only a play that contains a Queen (or Jack with jacks), or a special"
    if tkind in SPECIAL_KINDS:
        return "an ordinary play never follows a special"
    if kind != tkind or n != tn:
        return (f"an ordinary play must follow with the same type and length: a {KIND_NAMES[tkind]} of {tn} "
                f"card{'s' if tn > 1 else ''}")
    if high < thigh:
        return "an ordinary play must follow with an equal or higher rank"
    return None


def could_follow_publicly(avail: Sequence[int], table: Key, jacks: bool) -> bool:
    """True if some play could follow ``table`` with cards not known to be out of play.

    ``avail[r]`` is how many cards of rank r are not publicly accounted for. This is the
    ``auto_skip`` test: it ignores the mover's own hand on purpose.
    """
    return bool(follow_plays(avail, table, jacks))


def _labels(jacks: bool) -> tuple[str, ...]:
    return ("", "") + tuple(str(r) for r in range(2, 11)) + ("J" if jacks else "Q",)


LABELS: Mapping[bool, tuple[str, ...]] = MappingProxyType({False: _labels(False), True: _labels(True)})
RANK_OF: Mapping[bool, Mapping[str, int]] = MappingProxyType(
    {j: MappingProxyType({lab: r for r, lab in enumerate(LABELS[j]) if lab}) for j in (False, True)})


def _all_keys() -> list[Key]:
    keys: list[Key] = []
    for r in RANKS:
        keys += [(SINGLE, 1, r), (PAIR, 2, r), (TRIPLE, 3, r), (QUAD, 4, r)]
    for size in range(2, TOP):  # 2..10 ranks: up to the run 2..J
        for start in range(2, TOP - size + 2):
            if size >= 3:
                keys.append((RUN, size, start))
            keys.append((PAIR_RUN, 2 * size, start))
    return keys


#: key -> ranks of its cards, for every play that exists (runs up to the Jack included).
KEY_RANKS: Mapping[Key, tuple[int, ...]] = MappingProxyType({k: key_ranks(k) for k in _all_keys()})
#: jacks -> key -> the card labels of the play, ascending.
KEY_LABELS: Mapping[bool, Mapping[Key, tuple[str, ...]]] = MappingProxyType(
    {j: MappingProxyType({k: tuple(LABELS[j][r] for r in rs) for k, rs in KEY_RANKS.items()}) for j in (False, True)})
#: jacks -> rank -> count -> that many labels of the rank (to list a hand quickly).
REPEAT: Mapping[bool, tuple[tuple[tuple[str, ...], ...], ...]] = MappingProxyType(
    {j: tuple(tuple((LABELS[j][r],) * k for k in range(5)) if r >= 2 else ((),) * 5 for r in range(TOP + 1))
     for j in (False, True)})
#: jacks -> the labels of a play in canonical order -> its key (the fast path of parsing a play).
KEY_OF: Mapping[bool, Mapping[tuple[str, ...], Key]] = MappingProxyType(
    {j: MappingProxyType({labels: k for k, labels in KEY_LABELS[j].items()
                          if j or not (k[0] in (RUN, PAIR_RUN) and key_high(k) == TOP)}) for j in (False, True)})
#: key -> ((rank, cards of that rank needed), ...).
KEY_NEED: Mapping[Key, tuple[tuple[int, int], ...]] = MappingProxyType(
    {k: tuple((r, rs.count(r)) for r in sorted(set(rs))) for k, rs in KEY_RANKS.items()})
