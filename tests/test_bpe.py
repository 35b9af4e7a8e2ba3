"""From-scratch BPE (minilib.data.bpe) against Hugging Face `tokenizers` trained with the same settings."""
from __future__ import annotations

import json

import pytest
from tokenizers import Tokenizer, models, pre_tokenizers, trainers

from minilib import data
from minilib.data.bpe import learn_merges, merge_pair, segment, word_counts

# A paragraph from the book's chapter 01 text, written for it (no corpus needed).
TEXT = """In 2013 Tomas Mikolov and his colleagues at Google released word2vec: a shallow network that reads
raw text and, by learning to predict which words appear near which, gives every word a vector of a few
hundred numbers. Words used in similar contexts end up close together, and some relations turn into
directions: king minus man plus woman lands near queen. A year later Stanford's GloVe reached the same
kind of vectors by factorising global co-occurrence counts. For the next five years almost every NLP
system began by looking its input words up in one of these tables. The idea is older than neural
networks: you shall know a word by the company it keeps. Count the company, and similar words have
similar counts. Skip-gram with negative sampling is, in effect, factorising a matrix of shifted
pointwise mutual information, so we build both routes, the counting one and the predicting one."""


def hf_bpe(texts: list[str], n_merges: int) -> Tokenizer:
    """`tokenizers`' BPE with GPT-2's byte-level settings, asked for `n_merges` merges (256 bytes + merges)."""
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    trainer = trainers.BpeTrainer(vocab_size=256 + n_merges, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  show_progress=False)
    tok.train_from_iterator(texts, trainer)
    return tok


def hf_merges(tok: Tokenizer) -> list[tuple[str, str]]:
    merges = json.loads(tok.to_str())["model"]["merges"]
    return [tuple(m) if isinstance(m, list) else tuple(m.split(" ")) for m in merges]


def assert_same_as_tokenizers(texts: list[str], n_merges: int, held_out: list[str]) -> None:
    tok = hf_bpe(texts, n_merges)
    reference = hf_merges(tok)
    assert len(reference) == n_merges                          # the text had enough pairs for every merge
    counts = word_counts(texts)
    merges = learn_merges(counts, n_merges)
    assert merges == reference                                 # same merges, in the same order
    for word in list(counts) + list(word_counts(held_out)):    # training words, and words never seen
        assert segment(word, merges) == [t.value for t in tok.model.tokenize(word)], word


def test_merge_pair_joins_left_to_right_without_overlap():
    assert merge_pair(("a", "a", "a", "b"), ("a", "a")) == ("aa", "a", "b")
    assert merge_pair(("a", "a", "a", "a"), ("a", "a")) == ("aa", "aa")
    assert merge_pair(("x", "y"), ("a", "b")) == ("x", "y")


def test_learn_merges_by_hand():
    # Sennrich et al. (2016) §3.2's dictionary. es and st are tied at 9: the pair of older symbols
    # wins ('e' < 's' in code-point order); then lo and ow tie at 7 and 'l' < 'o'.
    counts = {"low": 5, "lower": 2, "newest": 6, "widest": 3}
    merges = learn_merges(counts, 4)
    assert merges == [("e", "s"), ("es", "t"), ("l", "o"), ("lo", "w")]
    assert segment("lowest", merges) == ["low", "est"]
    assert segment("slow", merges) == ["s", "low"]             # never seen, made of known pieces
    assert learn_merges({"ab": 3}, 10) == [("a", "b")]         # stops when every word is one symbol


def test_segment_applies_earliest_merge_first():
    merges = [("b", "c"), ("a", "b")]                           # bc was learned first: it wins over ab
    assert segment("abc", merges) == ["a", "bc"]
    assert segment("abc", merges[::-1]) == ["ab", "c"]


def test_from_scratch_equals_tokenizers_on_a_paragraph():
    assert_same_as_tokenizers(TEXT.splitlines(), 120, held_out=["Unaffable bankers kept the riverbank's apples."])


@pytest.mark.data
def test_from_scratch_equals_tokenizers_on_corpus_text():
    # ~3,000 words of the train split, 300 merges; words of a valid document must segment alike too.
    train = [d.text for d in data.pretraining_corpus("train", max_words=3_000)]
    valid = [d.text for d in data.pretraining_corpus("valid", max_words=2_000)]
    assert_same_as_tokenizers(train, 300, held_out=valid)
