"""Data-free units: tokenizer, normaliser, Vocab, splits, the Brown tag map, the leak guard, Parquet bits."""
from __future__ import annotations

import numpy as np
import pytest

from minilib.data import UNIVERSAL_TAGS, LeakGuard, Vocab, normalize, tokenize, universal_tag
from minilib.data.parquet import _rle_hybrid, snappy_decompress
from minilib.data.splits import hash_unit, split_of


# ----------------------------------------------------------------------------- tokenize

@pytest.mark.parametrize("text, tokens", [
    ("Don't panic!", ["do", "n't", "panic", "!"]),
    ("It's the dog's bone; they're here, I'm sure we'll go.",
     ["it", "'s", "the", "dog", "'s", "bone", ";", "they", "'re", "here", ",", "i", "'m", "sure", "we", "'ll",
      "go", "."]),
    ("I can't", ["i", "ca", "n't"]),                             # Penn Treebank convention
    ("A well-known U.S. firm grew 3.5% in the 1990s.",
     ["a", "well-known", "u.s.", "firm", "grew", "3.5", "%", "in", "the", "1990s", "."]),
    ("$1,000 at 10:30 -- wait...", ["$", "1,000", "at", "10:30", "--", "wait", "..."]),
    ("\u201cCurly\u201d \u2018quotes\u2019 \u2014 dash", ['"', "curly", '"', "'", "quotes", "'", "--", "dash"]),
    ("``Brown'' quotes", ['"', "brown", '"', "quotes"]),
    ("", []),
])
def test_tokenize(text, tokens):
    assert tokenize(text) == tokens


def test_normalize_ignores_case_accents_punctuation_and_spacing():
    assert normalize("Sex and Lucía: self-absorbed!") == normalize("sex and lucia -- self absorbed")
    assert normalize("I can't") == normalize("i ca n't")
    assert normalize("a b") != normalize("a c")


# ----------------------------------------------------------------------------- Vocab

def test_vocab_build_order_and_counts():
    v = Vocab.build([["b", "a", "c", "a"], ["b", "a", "d"]], specials=("<unk>", "<pad>"))
    assert v.itos == ["<unk>", "<pad>", "a", "b", "c", "d"]       # by count, ties alphabetical
    assert v.counts.tolist() == [0, 0, 3, 2, 1, 1]
    assert v.unk_id == 0 and len(v) == 6 and "a" in v and "z" not in v
    assert v.stoi["b"] == 3 and v["zzz"] == v.unk_id


def test_vocab_min_count_and_max_size_include_specials():
    toks = [["a"] * 5 + ["b"] * 3 + ["c"] * 2 + ["d"]]
    assert Vocab.build(toks, min_count=2).itos == ["<unk>", "a", "b", "c"]
    assert len(Vocab.build(toks, max_size=3)) == 3                  # an embedding table of exactly 3 rows
    assert Vocab.build(toks, max_size=3).itos == ["<unk>", "a", "b"]


def test_vocab_encode_decode_save_load(tmp_path):
    v = Vocab.build([tokenize("the cat sat on the mat")])
    ids = v.encode(["the", "dog", "sat"])
    assert ids == [v.stoi["the"], v.unk_id, v.stoi["sat"]]
    arr = v.encode_array(["the", "mat"])
    assert arr.dtype == np.int64 and v.decode(arr) == ["the", "mat"]
    v.save(tmp_path / "v.json")
    w = Vocab.load(tmp_path / "v.json")
    assert w.itos == v.itos and np.array_equal(w.counts, v.counts) and w.unk_id == v.unk_id


def test_vocab_without_unk_rejects_unknown_tokens():
    v = Vocab.build([["a", "b"]], specials=())
    assert v.unk_id is None
    with pytest.raises(KeyError):
        v.encode(["c"])


# ----------------------------------------------------------------------------- splits

def test_split_depends_only_on_the_key():
    keys = [f"src/{i}" for i in range(20_000)]
    splits = [split_of(k) for k in keys]
    assert splits == [split_of(k) for k in keys]
    frac = {s: splits.count(s) / len(keys) for s in ("train", "valid", "test")}
    assert abs(frac["train"] - 0.9) < 0.01 and abs(frac["valid"] - 0.05) < 0.01
    assert 0 <= hash_unit("x") < 1 and hash_unit("x") == hash_unit("x")


# ----------------------------------------------------------------------------- Brown -> universal tags

@pytest.mark.parametrize("tag, universal", [
    ("at", "DET"), ("nn", "NOUN"), ("np-tl", "NOUN"), ("nn$", "NOUN"), ("nns$-hl", "NOUN"), ("nn-tl-hl", "NOUN"),
    ("vbd-hl", "VERB"), ("md*", "VERB"), ("do*", "VERB"), ("bez", "VERB"), ("hvd*", "VERB"),
    ("*", "ADV"), ("*-hl", "ADV"), ("ql", "ADV"), ("wrb", "ADV"),
    ("fw-nn", "X"), ("fw-in+at-tl", "X"), ("uh", "X"),
    ("ppss+md", "PRON"), ("pp$", "PRON"), ("pp$$", "PRON"), ("wps", "PRON"),
    ("in", "ADP"), ("cs", "ADP"), ("cc", "CONJ"), ("cd", "NUM"), ("od", "ADJ"), ("jjt", "ADJ"),
    ("to", "PRT"), ("rp", "PRT"), ("ex", "DET"),
    (".", "."), ("---hl", "."), ("``", "."), ("(", "."), ("vb+ppo", "VERB"),
])
def test_universal_tag(tag, universal):
    assert universal_tag(tag) == universal
    assert universal in UNIVERSAL_TAGS


def test_universal_tag_rejects_unknown_tags():
    with pytest.raises(KeyError):
        universal_tag("zz")


# ----------------------------------------------------------------------------- leak guard

def test_leak_guard_rules():
    g = LeakGuard(["The gorgeously elaborate continuation of The Lord of the Rings trilogy is so huge.",
                   "What is a caldera ?"])
    assert g.matches("the gorgeously-elaborate continuation of ''The Lord of the Rings'' trilogy is so huge")
    assert g.matches("What is a caldera?")                            # exact after normalising
    assert not g.matches("What is a volcano ?")
    assert not g.matches("caldera")                                   # short texts match only exactly
    assert g.matches("Critics agree: the gorgeously elaborate continuation of The Lord of the Rings trilogy "
                     "is so huge that words fail.")                   # contains a protected sentence
    assert g.matches("The gorgeously elaborate continuation of The Lord")       # a cut of one (containment)
    assert g.matches("The gorgeously elaborate continuation of The Lord of the Rings is <i>junk")  # same start
    assert g.mask(["nothing to see here at all, really nothing", "What is a caldera ?"]) == [False, True]


# ----------------------------------------------------------------------------- Parquet pieces

def test_snappy_literal_and_overlapping_copy():
    # length 12, literal "abc", then copy 9 bytes from offset 3 (overlapping): "abcabcabcabc"
    assert snappy_decompress(bytes([12, (3 - 1) << 2]) + b"abc" + bytes([((9 - 4) << 2) | 1, 3])) == b"abc" * 4


def test_rle_bitpacked_hybrid():
    # RLE run: header (5 << 1), value 7 in one byte; then a bit-packed group of 8 3-bit values 0..7
    packed = int("".join(format(v, "03b") for v in reversed(range(8))), 2).to_bytes(3, "little")
    buf = bytes([5 << 1, 7, (1 << 1) | 1]) + packed
    assert _rle_hybrid(buf, 3, 13).tolist() == [7] * 5 + list(range(8))
