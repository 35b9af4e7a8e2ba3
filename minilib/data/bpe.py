"""Byte-pair encoding from scratch: learn merges from word counts, then segment a word with them.

    >>> counts = word_counts(["the lower the newer", "the lowest"])   # {'the': 1, 'Ġlower': 1, 'Ġthe': 1, ...}
    >>> merges = learn_merges(counts, n_merges=10)                     # [('Ġ', 't'), ('Ġt', 'h'), ...]
    >>> segment("Ġlowest", merges)                                     # ['Ġlow', 'est']

Sennrich, Haddow & Birch (2016), "Neural Machine Translation of Rare Words with
Subword Units", §3.2: start from single symbols, count every adjacent pair in
the corpus, merge the most frequent pair into a new symbol, repeat. A word is
then segmented by replaying the merges in the order they were learned, so a
word never seen in training still splits into known pieces.

GPT-2 (Radford et al. 2019, §2.2) runs BPE on bytes instead of characters:
every byte is in the base vocabulary, so no text is ever unknown. Words come
from GPT-2's pre-tokenizer (a regex that keeps a leading space on the word and
shows it as "Ġ"; `word_counts` borrows it from Hugging Face `tokenizers`, so
this file and `minilib.data.tokenizer.train_bpe` see the same words).

Ties: when two pairs are equally frequent, the one whose symbols were added to
the vocabulary first wins (base symbols in code-point order, then merged
symbols in the order they were made). That is the rule of `tokenizers`'
BpeTrainer, so `learn_merges` reproduces its merges one for one
(tests/test_bpe.py holds it to that on corpus text).
"""
from __future__ import annotations

from collections import Counter
from typing import Iterable

Pair = tuple[str, str]


def word_counts(texts: Iterable[str]) -> Counter[str]:
    """How often each GPT-2 pre-token (a word with its leading space, bytes shown as characters) occurs."""
    from tokenizers.pre_tokenizers import ByteLevel

    split = ByteLevel(add_prefix_space=False).pre_tokenize_str
    return Counter(word for text in texts for word, _span in split(text))


def merge_pair(symbols: tuple[str, ...], pair: Pair) -> tuple[str, ...]:
    """`symbols` with every occurrence of `pair` (left to right, no overlaps) joined into one symbol."""
    out, i = [], 0
    while i < len(symbols):
        if i + 1 < len(symbols) and (symbols[i], symbols[i + 1]) == pair:
            out.append(symbols[i] + symbols[i + 1])
            i += 2
        else:
            out.append(symbols[i])
            i += 1
    return tuple(out)


def learn_merges(words_with_counts: dict[str, int], n_merges: int) -> list[Pair]:
    """The first `n_merges` merges BPE learns from `words_with_counts` (fewer if every word becomes one symbol)."""
    words = {tuple(word): count for word, count in words_with_counts.items()}     # a word as its symbols
    order = {s: i for i, s in enumerate(sorted({s for word in words for s in word}))}  # ids break ties
    merges: list[Pair] = []
    for _ in range(n_merges):
        pairs: Counter[Pair] = Counter()
        for word, count in words.items():
            for pair in zip(word, word[1:]):
                pairs[pair] += count
        if not pairs:
            break
        best = max(pairs, key=lambda p: (pairs[p], -order[p[0]], -order[p[1]]))   # most frequent, then oldest
        merges.append(best)
        order.setdefault(best[0] + best[1], len(order))
        words = {merge_pair(word, best): count for word, count in words.items()}
    return merges


def segment(word: str, merges: list[Pair]) -> list[str]:
    """Split `word` into symbols by replaying `merges`: always the earliest-learned pair present first."""
    rank = {pair: i for i, pair in enumerate(merges)}
    symbols = tuple(word)
    while len(symbols) > 1:
        best = min(zip(symbols, symbols[1:]), key=lambda p: rank.get(p, len(rank)))
        if best not in rank:
            break
        symbols = merge_pair(symbols, best)
    return list(symbols)
