"""Deterministic splits: a document's split depends only on its key, never on order or a seed.

Hashing the key (e.g. "news/1234" or a normalised sentence) means a split never
changes when a corpus is re-read, filtered or subsetted, and identical texts
always land on the same side.
"""
from __future__ import annotations

import hashlib

SPLITS = ("train", "valid", "test")


def hash_unit(key: str) -> float:
    """A number in [0, 1) fixed by `key` (the first 8 bytes of its SHA-1)."""
    return int.from_bytes(hashlib.sha1(key.encode("utf-8")).digest()[:8], "big") / 2.0**64


def split_of(key: str, valid: float = 0.05, test: float = 0.05) -> str:
    """'train', 'valid' or 'test' for `key`: the last `valid + test` of the unit interval is held out."""
    u = hash_unit(key)
    if u < 1.0 - valid - test:
        return "train"
    return "valid" if u < 1.0 - test else "test"


def check_split(split: str, allowed: tuple[str, ...] = SPLITS) -> str:
    if split not in allowed:
        raise ValueError(f"split must be one of {', '.join(map(repr, allowed))}, not {split!r}")
    return split
