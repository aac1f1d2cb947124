"""Crisps plays: classification and generation, by rank counts (no subset search).

Ranks are ints 2..11; 11 is the Queen (or, with the ``jacks`` option, the Jack).
A hand is a list of 12 counts indexed by rank (indices 0 and 1 unused). Cards of
equal rank are interchangeable, so a play is identified by a *key*
``(kind, length, low)``: its kind, its number of cards and its lowest rank.
Keys sort in canonical order (kind, then length, then rank).

Plays are generated, never found by trying subsets: a hand is reduced to four bit masks
(ranks held at least 1, 2, 3, 4 times) and the singles, pairs, runs of every length from
every start, runs of pairs, triples and quads of each mask come from tables built at import.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import MappingProxyType

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


def _masks(counts: Sequence[int]) -> tuple[int, int, int, int]:
    """Bit masks (bit r-2 for rank r) of the ranks held at least once, twice, three and four times."""
    m1 = m2 = m3 = m4 = 0
    for r in RANKS:
        c = counts[r]
        if c:
            b = _BIT[r]
            m1 |= b
            if c >= 2:
                m2 |= b
                if c >= 3:
                    m3 |= b
                    if c == 4:
                        m4 |= b
    return m1, m2, m3, m4


def lead_plays(counts: Sequence[int], jacks: bool) -> list[Key]:
    """Every play the hand ``counts`` can lead, in canonical order (looked up by rank masks)."""
    m1, m2, m3, m4 = _masks(counts)
    return [*_SINGLES[m1], *_PAIRS[m2], *_RUNS[jacks][m1], *_PAIR_RUNS[jacks][m2], *_TRIPLES[m3], *_QUADS[m4]]


def follow_plays(counts: Sequence[int], table: Key, jacks: bool) -> list[Key]:
    """Every play of ``counts`` that may follow the play ``table`` (rulings K3, K4), canonical order."""
    kind, n, low = table
    high = key_high(table)
    m1, m2, m3, m4 = _masks(counts)
    out: list[Key]
    if kind == SINGLE:
        out = [*_SINGLES[m1 & _AT_LEAST[high]]]
    elif kind == PAIR:
        out = [*_PAIRS[m2 & _AT_LEAST[high]]]
    elif kind == RUN or kind == PAIR_RUN:
        size = n if kind == RUN else n // 2
        m = m1 if kind == RUN else m2
        top = TOP if jacks else TOP - 1
        out = []
        run_masks = _RUN_MASK[size]
        for start in range(low, top - size + 2):
            rm = run_masks[start]
            if m & rm == rm:
                out.append((kind, n, start))
    elif kind == TRIPLE:
        return [*_TRIPLES[m3 & _AT_LEAST[high + 1]], *_QUADS[m4]]
    else:
        return [*_QUADS[m4 & _AT_LEAST[high + 1]]]
    if high == TOP:  # an ordinary play containing a Queen: any special may follow
        out += _TRIPLES[m3]
        out += _QUADS[m4]
    return out


def _segment_runs(mask: int, min_len: int, kind: int, per: int) -> tuple[Key, ...]:
    """Every run (``per`` cards a rank) inside the ranks of ``mask``, by length then start."""
    segments = []  # maximal stretches of consecutive ranks in the mask: (start, end)
    r = 2
    while r <= TOP:
        if not mask & (1 << (r - 2)):
            r += 1
            continue
        end = r
        while end < TOP and mask & (1 << (end - 1)):
            end += 1
        if end - r + 1 >= min_len:
            segments.append((r, end))
        r = end + 2
    found: list[Key] = []
    for size in range(min_len, max((e - s + 1 for s, e in segments), default=0) + 1):
        for s, e in segments:
            found.extend((kind, size * per, start) for start in range(s, e - size + 2))
    return tuple(found)


_BIT = tuple(1 << (r - 2) if r >= 2 else 0 for r in range(TOP + 1))
_N_MASKS = 1 << len(RANKS)
_AT_LEAST = tuple(sum(_BIT[r] for r in range(max(h, 2), TOP + 1)) for h in range(TOP + 2))
_RUN_MASK = tuple(tuple(sum(_BIT[r] for r in range(start, start + size) if r <= TOP) for start in range(TOP + 1))
                  for size in range(TOP + 1))


def _by_rank(kind: int, n: int) -> tuple[tuple[Key, ...], ...]:
    """mask -> the keys of that kind for each rank in the mask, ascending (built lowest bit first)."""
    table: list[tuple[Key, ...]] = [()]
    for m in range(1, _N_MASKS):
        low_bit = m & -m
        table.append(((kind, n, low_bit.bit_length() + 1),) + table[m ^ low_bit])
    return tuple(table)


_SINGLES, _PAIRS, _TRIPLES, _QUADS = (_by_rank(SINGLE, 1), _by_rank(PAIR, 2), _by_rank(TRIPLE, 3),
                                      _by_rank(QUAD, 4))
_NO_TOP = (1 << len(RANKS)) - 1 - _BIT[TOP]  # Queens are never in runs without the jacks option
_RUNS_J = tuple(_segment_runs(m, 3, RUN, 1) for m in range(_N_MASKS))
_PAIR_RUNS_J = tuple(_segment_runs(m, 2, PAIR_RUN, 2) for m in range(_N_MASKS))
_RUNS = MappingProxyType({True: _RUNS_J, False: tuple(_RUNS_J[m & _NO_TOP] for m in range(_N_MASKS))})
_PAIR_RUNS = MappingProxyType({True: _PAIR_RUNS_J,
                               False: tuple(_PAIR_RUNS_J[m & _NO_TOP] for m in range(_N_MASKS))})


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
