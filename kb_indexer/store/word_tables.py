"""Word and key tables of the tokenizer's numpy paths (:mod:`kb_indexer.store.fts_tokens`): the token ids of
the words of ASCII texts looked up a whole array at a time, as a fold of the sparse index reads 8,000 documents at
once. Imported only where the sparse index is built or read (numpy costs a cold process ~45 ms)."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

__all__ = ["KeyTable", "WordIds", "ascii_ids", "distinct", "no_pairs", "np", "top_bytes"]

#: Token ids of distinct words (ASCII bytes), learnt through SQLite's tokenizer (``Tokenizer.word_ids``).
Learn = Callable[[list[bytes]], list[int]]


def ascii_ids(joined: bytes, sizes: list[int], words: WordIds, learn: Learn, learn_long: Learn) -> list[Any]:
    """The token ids of ASCII texts (int64 arrays, one per text), given ``joined``: the texts' lower-case words
    (``Tokenizer``'s chunks: every other byte a space), one space between two texts, and ``sizes``: each
    text's length. With numpy rather than a dictionary look-up
    per word: a word of up to 16 bytes is keyed by its bytes as big-endian integers, zero-padded (exact: a word
    holds no zero byte), so only distinct words are looked up. Words of up to 8 bytes (most) are found in a
    table of known keys, words of 9-16 bytes by a hash of their two keys (``words``); new ones are learnt with
    ``learn``, longer ones one by one with ``learn_long``."""
    if not sizes:
        return []
    padded = np.frombuffer(joined + bytes(16), dtype=np.uint8)
    edges = np.diff(np.r_[False, padded[:len(joined)] != 32, False].view(np.int8))
    starts, ends = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)
    bounds = np.cumsum([0] + [n + 1 for n in sizes])   # where each text starts in ``joined``
    lengths = ends - starts
    words8 = np.ndarray((len(padded) - 7,), dtype=">u8", buffer=padded, strides=(1,))  # 8 bytes at each byte
    keep = top_bytes()
    head = words8[starts].astype(np.uint64) & keep[np.minimum(lengths, 8)]
    ids = np.empty(len(starts), dtype=np.int64)
    short = lengths <= 8
    ids[short] = words.short_ids(head[short], learn)
    mid = np.flatnonzero(~short & (lengths <= 16))
    tail = words8[starts[mid] + 8].astype(np.uint64) & keep[lengths[mid] - 8]
    ids[mid] = words.mid_ids(head[mid], tail, learn)
    long = np.flatnonzero(lengths > 16)
    ids[long] = learn_long([joined[a:b] for a, b in zip(starts[long].tolist(), ends[long].tolist())])
    return np.split(ids, np.searchsorted(starts, bounds[1:-1]))


class WordIds:
    """The token ids of the words of ASCII texts a tokenizer has learnt, by their keys (see :func:`ascii_ids`)."""

    def __init__(self) -> None:
        self.short = KeyTable()    # words of <= 8 bytes: their key -> token id
        self.mid = KeyTable()      # words of 9-16 bytes: a hash of their two keys -> token id
        self.mid_keys: Any = np.zeros((0, 2), dtype=np.uint64)   # token id -> the two keys of its 9-16 byte word

    def short_ids(self, keys: Any, learn: Learn) -> Any:
        """Token ids of words of up to 8 bytes given as their keys; new ones learnt, then added to the table."""
        ids, known = self.short.find(keys)
        if not known.all():
            new, at = np.unique(keys[~known], return_inverse=True)
            new_ids = np.asarray(learn([int(k).to_bytes(8, "big").rstrip(b"\0") for k in new.tolist()]),
                                 dtype=np.int64)
            ids[~known] = new_ids[at.ravel()]
            self.short.add(new, new_ids)
        return ids

    def mid_ids(self, hi: Any, lo: Any, learn: Learn) -> Any:
        """Token ids of words of 9-16 bytes given as their two keys: found by a hash of both, each hit checked
        against the keys its id was learnt with (a word whose hash another word took is learnt again, never
        mistaken for it); new ones learnt, then added with their keys."""
        hashed = hi * np.uint64(0x9E37_79B9_7F4A_7C15) ^ lo
        ids, known = self.mid.find(hashed)
        if len(self.mid_keys):
            at = np.clip(ids, 0, len(self.mid_keys) - 1)
            known &= (ids < len(self.mid_keys)) & (self.mid_keys[at, 0] == hi) & (self.mid_keys[at, 1] == lo)
        else:
            known[:] = False
        if not known.all():
            todo = np.flatnonzero(~known)
            words, inverse = distinct(hi[todo], lo[todo])
            new_ids = np.asarray(learn(words), dtype=np.int64)
            ids[todo] = new_ids[inverse]
            first = np.unique(inverse, return_index=True)[1]   # one position of each new word
            self._remember(new_ids, hi[todo][first], lo[todo][first], hashed[todo][first])
        return ids

    def _remember(self, ids: Any, hi: Any, lo: Any, hashed: Any) -> None:
        keep = ids >= 0
        ids, hi, lo, hashed = ids[keep], hi[keep], lo[keep], hashed[keep]
        if not len(ids):
            return
        if int(ids.max()) >= len(self.mid_keys):
            grown = np.zeros((max(int(ids.max()) + 1, 2 * len(self.mid_keys)), 2), dtype=np.uint64)
            grown[:len(self.mid_keys)] = self.mid_keys
            self.mid_keys = grown
        self.mid_keys[ids, 0], self.mid_keys[ids, 1] = hi, lo
        self.mid.add(hashed, ids)


class KeyTable:
    """Token ids of 64-bit keys (a word's bytes, a pair of token ids), looked up for a whole array at once.

    Keys are added in runs (the new words of each batch a fold reads) to levels of geometrically falling size,
    the largest first: a run becomes a level of its own, merged into the one before it once it is half that
    level's size, so adding ``n`` keys in all costs ``O(n log n)`` whatever the number of runs (rebuilding one
    table for every run cost a fold of a growing vocabulary, 370,000 words in 50,000 documents, seconds). A
    look-up asks the largest level first, and the next ones only for the keys not found yet."""

    def __init__(self) -> None:
        self._levels: list[_Level] = []

    def __len__(self) -> int:
        return sum(len(level) for level in self._levels)

    def add(self, keys: Any, ids: Any) -> None:
        """Add keys not in the table yet (distinct) with their ids."""
        keys = np.asarray(keys).astype(np.uint64)
        ids = np.asarray(ids, np.int64)
        while self._levels and 2 * len(keys) >= len(self._levels[-1]):
            last = self._levels.pop()
            keys, ids = np.r_[last.keys, keys], np.r_[last.ids, ids]
        self._levels.append(_Level(keys, ids))

    def find(self, keys: Any) -> tuple[Any, Any]:
        """(token id, known) of each key (the id of an unknown key is meaningless)."""
        keys = np.asarray(keys).astype(np.uint64, copy=False)
        if not self._levels:
            return np.zeros(len(keys), dtype=np.int64), np.zeros(len(keys), dtype=bool)
        ids, known = self._levels[0].find(keys)
        for level in self._levels[1:]:
            todo = np.flatnonzero(~known)
            if not len(todo):
                break
            got, hit = level.find(keys[todo])
            ids[todo[hit]], known[todo[hit]] = got[hit], True
        return ids, known


class _Level:
    """One level of a :class:`KeyTable`: its keys sorted, and in open hash tables of four to eight slots per key
    with one probe each (a multiplicative hash, then the slot's key compared): a key whose slot an earlier key took goes
    to the next table (another multiplier), and the few left over are found by binary search. A fold looks up
    every word of 8,000 documents; a binary search each was most of its time."""

    _MULTIPLIERS = (0x9E37_79B9_7F4A_7C15, 0xC2B2_AE3D_27D4_EB4F, 0x1656_67B1_9E37_79F9)   # odd, well mixed

    def __init__(self, keys: Any, ids: Any) -> None:
        order = np.argsort(keys, kind="stable")
        self.keys, self.ids = keys[order], ids[order]
        # (multiplier, bits, slot keys, slot ids: -1 when empty); each table sized for the keys it is given
        self._tables: list[tuple[int, int, Any, Any]] = []
        left_keys, left_ids = self.keys, self.ids
        for multiplier in self._MULTIPLIERS:
            if not len(left_keys):
                break
            bits = max(4, int(len(left_keys) * 4 - 1).bit_length())
            slot_keys = np.zeros(1 << bits, dtype=np.uint64)
            slot_ids = np.full(1 << bits, -1, dtype=np.int64)
            slots, first = np.unique(_slots(left_keys, multiplier, bits), return_index=True)   # first key wins
            slot_keys[slots], slot_ids[slots] = left_keys[first], left_ids[first]
            self._tables.append((multiplier, bits, slot_keys, slot_ids))
            rest = np.ones(len(left_keys), dtype=bool)
            rest[first] = False
            left_keys, left_ids = left_keys[rest], left_ids[rest]

    def __len__(self) -> int:
        return len(self.keys)

    def find(self, keys: Any) -> tuple[Any, Any]:
        if not self._tables:
            return np.zeros(len(keys), dtype=np.int64), np.zeros(len(keys), dtype=bool)
        multiplier, bits, slot_keys, slot_ids = self._tables[0]   # (most keys: no index arrays)
        slots = _slots(keys, multiplier, bits)
        ids = slot_ids.take(slots)
        known = slot_keys.take(slots) == keys
        known &= ids >= 0
        todo = np.flatnonzero(~known)
        for multiplier, bits, slot_keys, slot_ids in self._tables[1:]:
            if not len(todo):
                return ids, known
            slots = _slots(keys[todo], multiplier, bits)
            got = slot_ids.take(slots)
            hit = (got >= 0) & (slot_keys.take(slots) == keys[todo])
            ids[todo[hit]], known[todo[hit]] = got[hit], True
            todo = todo[~hit]
        if len(todo):   # left over from the hash tables, or not known
            pos = np.minimum(np.searchsorted(self.keys, keys[todo]), len(self.keys) - 1)
            found = self.keys[pos] == keys[todo]
            ids[todo[found]], known[todo[found]] = self.ids[pos[found]], True
        return ids, known


def _slots(keys: Any, multiplier: int, bits: int) -> Any:
    """Each key's slot in a table of ``2 ** bits`` (a multiplicative hash: the top bits of key × multiplier)."""
    slots = keys * np.uint64(multiplier)
    slots >>= np.uint64(64 - bits)
    return slots.view(np.int64)


def top_bytes() -> Any:
    """``[n]``: the mask that keeps the first n bytes of a big-endian 64-bit key (n = 0..8)."""
    return np.asarray([~((1 << 8 * (8 - n)) - 1) & 0xFFFF_FFFF_FFFF_FFFF for n in range(9)], dtype=np.uint64)


def distinct(hi: Any, lo: Any) -> tuple[list[bytes], Any]:
    """The distinct words among those keyed ``(hi, lo)`` (see :func:`ascii_ids`), and the index of
    each word in them."""
    if not len(hi):
        return [], np.zeros(0, dtype=np.int64)
    order = np.lexsort((lo, hi))
    hi, lo = hi[order], lo[order]
    new = np.r_[True, (hi[1:] != hi[:-1]) | (lo[1:] != lo[:-1])]
    inverse = np.empty(len(order), dtype=np.int64)
    inverse[order] = np.cumsum(new) - 1
    words = [(a.to_bytes(8, "big") + b.to_bytes(8, "big")).rstrip(b"\0")
             for a, b in zip(hi[new].tolist(), lo[new].tolist())]
    return words, inverse


def no_pairs() -> tuple[Any, Any, Any]:
    empty = np.zeros(0, dtype=np.int64)
    return empty, empty, empty


