"""WordNet 3.1 senses, glosses and example sentences, read straight from the database files.

    >>> [s.name for s in wordnet_senses("bank", pos="n")][:3]
    ['bank.n.01', 'depository_financial_institution.n.01', 'bank.n.03']
    >>> wordnet_senses("bank", pos="n")[1].examples
    ('he cashed a check at the bank', 'that bank holds the mortgage on my home')
    >>> next(wordnet_examples())
    SenseExample(lemma='...', sense='....n.01', sentence='...', index=3)

The ELMo lesson's word-sense probe averages contextual vectors of a lemma over
each sense's example sentences (a sense centroid) and labels new uses by the
nearest centroid. File format: WordNet's wndb(5WN) and wninput(5WN) manual pages.
"""
from __future__ import annotations

import functools
import re
from typing import Iterator, NamedTuple

from minilib.data.sources import cached, source_file
from minilib.data.words import tokenize

POS_FILES = {"n": "noun", "v": "verb", "a": "adj", "r": "adv"}
_DICT = "package/dict/"


class Sense(NamedTuple):
    """One WordNet synset, as a sense of some word."""

    synset: str                # "<offset>-<pos>", e.g. "02086723-n" (WordNet 3.1 offsets)
    name: str                  # NLTK-style "lemma.pos.NN", e.g. "dog.n.01"
    pos: str                   # "n" noun, "v" verb, "a" adjective, "s" satellite adjective, "r" adverb
    lemmas: tuple[str, ...]    # lemma names, "_" for spaces: ("dog", "domestic_dog", "Canis_familiaris")
    gloss: str                 # the definition, without the examples
    examples: tuple[str, ...]  # example sentences from the gloss ("" quotes removed)


class SenseExample(NamedTuple):
    """An example sentence of a sense, with where its lemma occurs."""

    lemma: str                 # the synset lemma found in the sentence, e.g. "bank"
    sense: str                 # Sense.name, e.g. "bank.n.01"
    sentence: str
    index: int                 # position of (the first word of) the lemma in tokenize(sentence); -1 if not found


_ADJ_MARKER = re.compile(r"\((a|p|ip)\)$")   # syntactic markers on adjectives: "galore(ip)"


def _parse_data(pos: str) -> dict[str, tuple]:
    """synset id -> (pos, lemmas, gloss, examples) from data.<pos>."""
    synsets = {}
    with open(source_file("wordnet", _DICT + "data." + POS_FILES[pos]), encoding="utf-8") as f:
        for line in f:
            if line.startswith("  "):          # the licence header
                continue
            fields, _, gloss = line.partition(" | ")
            parts = fields.split()
            offset, ss_type, w_cnt = parts[0], parts[2], int(parts[3], 16)
            lemmas = tuple(_ADJ_MARKER.sub("", parts[4 + 2 * i]) for i in range(w_cnt))
            examples = tuple(e.strip() for e in re.findall(r'"([^"]*)"', gloss) if e.strip())
            definition = gloss.split('"')[0].strip().rstrip(";").strip()
            synsets[f"{offset}-{pos}"] = (ss_type, lemmas, definition, examples)
    return synsets


def _parse_index(pos: str) -> dict[str, list[str]]:
    """lemma -> synset ids in WordNet's sense order (most frequent sense first), from index.<pos>."""
    index = {}
    with open(source_file("wordnet", _DICT + "index." + POS_FILES[pos]), encoding="utf-8") as f:
        for line in f:
            if line.startswith("  "):
                continue
            parts = line.split()
            lemma, synset_cnt, p_cnt = parts[0], int(parts[2]), int(parts[3])
            offsets = parts[4 + p_cnt + 2:]     # skip the pointer symbols, sense_cnt and tagsense_cnt
            assert len(offsets) == synset_cnt, line
            index[lemma] = [f"{o}-{pos}" for o in offsets]
    return index


def _parse_all() -> tuple[dict, dict]:
    synsets, index = {}, {}
    for pos in POS_FILES:
        synsets.update(_parse_data(pos))
        index[pos] = _parse_index(pos)
    return synsets, index


@functools.lru_cache(maxsize=1)
def _wordnet() -> tuple[dict, dict]:
    return cached("wordnet-v1", _parse_all, sources=["wordnet"])


def _sense(synset_id: str) -> Sense:
    synsets, index = _wordnet()
    ss_type, lemmas, definition, examples = synsets[synset_id]
    first = lemmas[0].lower()
    pos = synset_id[-1]
    number = index[pos].get(first, [synset_id]).index(synset_id) + 1
    return Sense(synset_id, f"{first}.{ss_type}.{number:02d}", ss_type, lemmas, definition, examples)


def wordnet_senses(word: str, pos: str | None = None) -> list[Sense]:
    """The senses of `word` (a lemma: "bank", "give_up" or "give up"), most frequent first.

    `pos` is one of "n", "v", "a" (adjectives, satellites included), "r", or None for all,
    listed noun, verb, adjective, adverb. No morphology: "banks" finds nothing.
    """
    _synsets, index = _wordnet()
    if pos == "s":
        pos = "a"
    if pos is not None and pos not in POS_FILES:
        raise ValueError(f"pos must be one of n, v, a, s, r or None, not {pos!r}")
    lemma = "_".join(word.lower().split())
    return [_sense(sid) for p in ([pos] if pos else POS_FILES) for sid in index[p].get(lemma, [])]


def wordnet_synsets() -> Iterator[Sense]:
    """Every synset, nouns then verbs, adjectives, adverbs, in file order."""
    for synset_id in _wordnet()[0]:
        yield _sense(synset_id)


def _forms(word: str) -> set[str]:
    """Regular inflections of a word, enough to find "respiring" for "respire" in an example."""
    if len(word) < 3:                       # "i" (one) must not match "is"
        return {word}
    forms = {word, word + "s", word + "es", word + "ed", word + "d", word + "ing", word + "er", word + "est"}
    if word.endswith("e"):
        forms |= {word[:-1] + "ing", word + "r", word + "st"}
    if word.endswith("y"):
        forms |= {word[:-1] + "ies", word[:-1] + "ied", word[:-1] + "ier", word[:-1] + "iest"}
    if len(word) > 2 and word[-1] not in "aeiouwxy":
        forms |= {word + word[-1] + "ed", word + word[-1] + "ing", word + word[-1] + "er"}
    return forms


def _find(tokens: list[str], lemma: str) -> int:
    parts = [_forms(t) for t in tokenize(lemma.replace("_", " "))]
    if not parts:
        return -1
    for i in range(len(tokens) - len(parts) + 1):
        if all(tokens[i + j] in forms for j, forms in enumerate(parts)):
            return i
    return -1


def wordnet_examples(require_match: bool = True) -> Iterator[SenseExample]:
    """Every (lemma, sense, example sentence, token index) in WordNet.

    The lemma is the first of the synset's lemmas found in the sentence (regular
    inflections allowed: "respiring" for "respire"). With `require_match` (default)
    examples where no lemma is found (irregular forms, paraphrases) are skipped;
    otherwise they come with the synset's first lemma and index -1.
    """
    for sense in wordnet_synsets():
        for sentence in sense.examples:
            tokens = tokenize(sentence)
            found = next(((lemma, i) for lemma in sense.lemmas if (i := _find(tokens, lemma.lower())) >= 0), None)
            if found:
                yield SenseExample(found[0], sense.name, sentence, found[1])
            elif not require_match:
                yield SenseExample(sense.lemmas[0], sense.name, sentence, -1)
