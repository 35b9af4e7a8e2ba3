"""One tokenizer interface (minilib.data.tokenizer): words, byte-level BPE, WordPiece; save/load; generate."""
from __future__ import annotations

import json

import pytest
import torch

from minilib import data
from minilib.data.tokenizer import (ByteLevelBPE, WordPieceTokenizer, WordTokenizer, build_tokenizer,
                                    embedding_share, load_tokenizer, pretrained_tokenizer, tokenizer_path,
                                    tokens_per_word, train_bpe, train_wordpiece)
from minilib.data.vocab import Vocab
from minilib.generate import block_size, generate, next_word_log_probs

# Training text for the fixture tokenizers: one sentence a line (no corpus needed).
TEXTS = [
    "The bank raised its interest rates on loans this year.",
    "We sat on the grassy bank and watched the river flow past.",
    "She peeled an apple and cut it into slices for the pie.",
    "Apple announced a new phone and a faster computer chip.",
    "The central bank printed more money to pay the debt.",
    "A ripe red apple fell from the tree in the orchard.",
    "Children fished from the steep bank beside the lake.",
    "Shares of Apple rose after the company reported record profits.",
] * 5


@pytest.fixture(scope="module")
def bpe():
    return train_bpe(TEXTS, 400)


@pytest.fixture(scope="module")
def wordpiece():
    return train_wordpiece(TEXTS, 200, min_char_count=1)


# ----------------------------------------------------------------------------- words

def test_word_tokenizer_wraps_a_vocab():
    vocab = Vocab.build([data.tokenize(t) for t in TEXTS], specials=("<unk>", "<eos>"))
    tok = WordTokenizer(vocab)
    ids = tok.encode("The bank's zebra.")
    assert ids == vocab.encode(["the", "bank", "'s", "zebra", "."])
    assert ids[2] == ids[3] == tok.unk_id == vocab.unk_id                  # "'s" and "zebra" are not in TEXTS
    assert tok.decode(ids) == "the bank <unk> <unk> ."
    assert tok.pieces("The bank") == ["the", "bank"]
    assert tok.specials == {"unk": 0, "eos": 1} and tok.eos_id == 1 and tok.pad_id is None and tok.mask_id is None
    assert tok.vocab_size == len(vocab) == len(tok)


def test_word_tokenizer_decode_joins_words():
    tok = WordTokenizer(Vocab(["<unk>", "the", "cat", "sat", "."]))
    assert tok.decode(tok.encode("The cat sat.")) == "the cat sat ."
    assert tok.decode(torch.tensor([1, 0, 2])) == "the <unk> cat"


def test_word_tokenizer_save_load(tmp_path):
    tok = WordTokenizer(Vocab.build([data.tokenize(t) for t in TEXTS], specials=("<unk>", "<pad>")))
    tok.save(tmp_path / "words.json")
    back = load_tokenizer(tmp_path / "words.json")
    assert isinstance(back, WordTokenizer) and back.vocab.itos == tok.vocab.itos
    assert back.specials == {"unk": 0, "pad": 1}
    assert Vocab.load(tmp_path / "words.json").itos == tok.vocab.itos    # still a plain Vocab file


# ----------------------------------------------------------------------------- byte-level BPE

@pytest.mark.parametrize("text", [
    "The bank raised its interest rates.",
    "Unaffable  bankers\n\nkept the riverbank's apples",          # unseen words, double space, newlines
    "café naïve “quotes” — 3.5% ½ 🍎 日本語",                      # bytes never seen in training
    " leading and trailing spaces ",
    "",
])
def test_bpe_round_trip_is_exact(bpe, text):
    ids = bpe.encode(text)
    assert bpe.decode(ids) == text
    assert all(0 <= i < bpe.vocab_size for i in ids)
    assert "".join(bpe.pieces(text)) == "".join(bpe.id_to_token(i) for i in ids)


def test_bpe_specials_and_size(bpe):
    assert bpe.vocab_size == 400
    assert bpe.specials == {"bos": 0, "eos": 0, "pad": 1}
    assert bpe.unk_id is None and bpe.cls_id is None and bpe.mask_id is None
    assert bpe.id_to_token(0) == "<|endoftext|>" and bpe.id_to_token(1) == "<pad>"
    assert bpe.encode("one<|endoftext|>two")[1] == bpe.eos_id          # the separator is one id


def test_bpe_merges_frequent_words_and_splits_rare_ones(bpe):
    assert bpe.pieces("The bank") == ["The", "Ġbank"]                     # seen 15 times: one piece each
    pieces = bpe.pieces(" riverbanks")
    assert len(pieces) > 1 and "".join(pieces) == "Ġriverbanks"


def test_bpe_training_is_deterministic(bpe):
    assert train_bpe(TEXTS, 400).hf.to_str() == bpe.hf.to_str()


def test_bpe_too_small_a_vocabulary_is_a_clear_error():
    with pytest.raises(ValueError, match="too small"):
        train_bpe(TEXTS, 200)


# ----------------------------------------------------------------------------- WordPiece

def test_wordpiece_specials_come_first(wordpiece):
    assert wordpiece.specials == {"pad": 0, "unk": 1, "cls": 2, "sep": 3, "mask": 4}
    assert [wordpiece.id_to_token(i) for i in range(5)] == ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    assert wordpiece.bos_id is None and wordpiece.eos_id is None
    assert wordpiece.vocab_size == 200


def test_wordpiece_lowercases_splits_punctuation_and_marks_continuations(wordpiece):
    assert wordpiece.pieces("The BANK.") == ["the", "bank", "."]
    pieces = wordpiece.pieces("riverbanks")
    assert len(pieces) > 1 and pieces[0] == "river" and all(p.startswith("##") for p in pieces[1:])
    assert wordpiece.decode(wordpiece.encode("The Bank. the river.")) == "the bank. the river."
    assert wordpiece.encode("the ☃ bank")[1] == wordpiece.unk_id         # a character it has never seen


def test_wordpiece_encode_pair_layout_and_segments(wordpiece):
    a, b = "the bank raised rates", "we sat on the bank"
    ids, segments = wordpiece.encode_pair(a, b)
    na, nb = len(wordpiece.encode(a)), len(wordpiece.encode(b))
    assert ids == [wordpiece.cls_id, *wordpiece.encode(a), wordpiece.sep_id, *wordpiece.encode(b), wordpiece.sep_id]
    assert segments == [0] * (na + 2) + [1] * (nb + 1)
    assert wordpiece.decode(ids) == "[CLS] the bank raised rates [SEP] we sat on the bank [SEP]"
    single, seg = wordpiece.encode_pair(a)
    assert single == [wordpiece.cls_id, *wordpiece.encode(a), wordpiece.sep_id] and seg == [0] * (na + 2)
    # the file's own post-processor (for `tokenizers` users) agrees
    enc = wordpiece.hf.encode(a, b)
    assert (enc.ids, enc.type_ids) == (ids, segments)


def test_wordpiece_training_is_deterministic(wordpiece):
    # `tokenizers` alone numbers "##x" pieces in hash order, different in every run; see train_wordpiece.
    for _ in range(3):
        assert train_wordpiece(TEXTS, 200, min_char_count=1).hf.to_str() == wordpiece.hf.to_str()


# ----------------------------------------------------------------------------- files

def test_save_and_load_give_the_same_tokenizer(tmp_path, bpe, wordpiece):
    text = "Shares of Apple rose; the riverbank flooded."
    for tok in (bpe, wordpiece):
        path = tmp_path / f"{tok.kind}.tokenizer.json"
        tok.save(path)
        back = load_tokenizer(path)
        assert type(back) is type(tok) and back.specials == tok.specials and back.vocab_size == tok.vocab_size
        assert back.encode(text) == tok.encode(text) and back.decode(back.encode(text)) == tok.decode(tok.encode(text))
        back.save(tmp_path / "again.json")
        assert (tmp_path / "again.json").read_bytes() == path.read_bytes()


def test_load_tokenizer_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="python -m minilib data tokenizer"):
        load_tokenizer(tmp_path / "missing.json")
    (tmp_path / "other.json").write_text(json.dumps({"model": {"type": "Unigram"}}))
    with pytest.raises(ValueError, match="not a tokenizer file"):
        load_tokenizer(tmp_path / "other.json")
    with pytest.raises(ValueError, match="unknown tokenizer kind"):
        pretrained_tokenizer("sentencepiece", "laptop")


def test_tokens_per_word_and_embedding_share(bpe, wordpiece):
    stats = tokens_per_word(bpe, ["the bank", "apple"])
    assert stats["words"] == 3 and stats["tokens"] == len(bpe.encode("the bank")) + len(bpe.encode("apple"))
    assert stats["unk_rate"] == 0
    assert tokens_per_word(wordpiece, ["☃ bank"])["unk_rate"] == 0.5
    assert embedding_share(8000, 128, 4) == pytest.approx(8000 * 128 / (8000 * 128 + 12 * 4 * 128 ** 2))


# ----------------------------------------------------------------------------- generate

class FixedLM(torch.nn.Module):
    """Always predicts token (last id + 1) mod V; records the longest context it was given."""

    def __init__(self, vocab_size: int, block_size: int | None = None):
        super().__init__()
        self.vocab_size, self.longest = vocab_size, 0
        self.w = torch.nn.Parameter(torch.zeros(1))
        if block_size is not None:
            self.cfg = type("Cfg", (), {"block_size": block_size})()

    def forward(self, x):                                            # (B, T) -> ((B, T, V), None)
        self.longest = max(self.longest, x.shape[1])
        logits = torch.full((*x.shape, self.vocab_size), -10.0)
        logits.scatter_(2, ((x + 1) % self.vocab_size)[..., None], 10.0)
        return logits, None


def test_generate_with_bpe_decodes_the_whole_text(bpe):
    model = FixedLM(bpe.vocab_size)
    prompt = "The bank"
    ids = bpe.encode(prompt)
    text = generate(model, bpe, prompt, n_words=4, temperature=0)
    expected = ids + [(ids[-1] + k) % bpe.vocab_size for k in range(1, 5)]
    assert text == bpe.decode(expected) and text.startswith(prompt)


def test_generate_never_samples_padding(bpe):
    model = FixedLM(bpe.vocab_size)
    text = generate(model, bpe, bpe.decode([0]), n_words=1, temperature=0)  # the model wants id 1 = <pad>
    assert "<pad>" not in text


def test_generate_crops_the_context_to_block_size(bpe):
    model = FixedLM(bpe.vocab_size, block_size=8)
    assert block_size(model) == 8 and block_size(FixedLM(5)) is None
    generate(model, bpe, "The bank raised its interest rates on loans this year.", n_words=10, temperature=0)
    assert model.longest == 8
    lp = next_word_log_probs(model, list(range(20)))                 # only the last 8 ids are read
    assert int(lp.argmax()) == 20


# ----------------------------------------------------------------------------- the shipped vocabularies

SHIPPED = [k for k in ("bpe", "wordpiece") if tokenizer_path(k, "laptop").exists()]


@pytest.mark.parametrize("kind", SHIPPED)
def test_shipped_tokenizer_matches_its_provenance(kind):
    path = tokenizer_path(kind, "laptop")
    meta = json.loads(path.with_name(f"{kind}-laptop.json").read_text())
    tok = load_tokenizer(path)
    assert meta["tokenizer"] == path.name and meta["tokenizer_bytes"] == path.stat().st_size
    assert meta["vocab_size"] == tok.vocab_size and meta["specials"] == tok.specials
    assert meta["data"]["split"] == "train"


@pytest.mark.data
@pytest.mark.slow
@pytest.mark.parametrize("kind", SHIPPED)
def test_shipped_tokenizer_remeasures_its_tokens_per_word(kind):
    tok = load_tokenizer(tokenizer_path(kind, "laptop"))
    meta = json.loads(tokenizer_path(kind, "laptop").with_name(f"{kind}-laptop.json").read_text())
    valid = tokens_per_word(tok, [d.text for d in data.pretraining_corpus("valid")])
    assert valid == meta["valid"]


@pytest.mark.data
def test_rare_words_become_bpe_pieces_not_unk():
    """Chapter 01's apple/bank sentences: a word vocabulary with as many ids as the BPE, built from the same
    train split, maps the rarer words to <unk>; byte-level BPE encodes them in known pieces, losslessly."""
    from minilab.experiments.contextual import EXAMPLES

    bpe = load_tokenizer(tokenizer_path("bpe", "laptop"))
    train = data.pretraining_corpus("train")
    words = WordTokenizer(Vocab.build((data.tokenize(d.text) for d in train), max_size=bpe.vocab_size))
    sentences = [s for examples in EXAMPLES.values() for _, s in examples]
    unknown = sorted({w for s in sentences for w in data.tokenize(s) if w not in words.vocab})
    assert {"cinnamon", "grassy", "orchard", "smartphone"} <= set(unknown)
    for word in unknown:
        assert words.encode(word) == [words.unk_id]
        assert bpe.decode(bpe.encode(" " + word)) == " " + word
    assert bpe.pieces(" smartphone") == ["Ġsmart", "phone"] and bpe.pieces(" grassy") == ["Ġgrass", "y"]
    for s in sentences:
        assert bpe.decode(bpe.encode(s)) == s


def test_full_profile_uses_the_laptop_file():
    if "bpe" not in SHIPPED:
        pytest.skip("no shipped BPE")
    assert pretrained_tokenizer("bpe", "full").hf.to_str() == load_tokenizer(tokenizer_path("bpe", "laptop")).hf.to_str()


# ----------------------------------------------------------------------------- CLI

def run_cli(*argv: str) -> int:
    import argparse

    from minilab.cli.data import tokenizer_command, tokenizer_options

    parser = argparse.ArgumentParser()
    tokenizer_options(parser)
    return tokenizer_command(parser.parse_args(argv))


def test_cli_bad_measure_list_is_exit_2(capsys):
    assert run_cli("bpe", "--measure", "4k,8k") == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: --measure takes comma-separated integers") and "\n" not in err


@pytest.mark.data
def test_cli_builds_a_smoke_tokenizer_with_provenance(tmp_path, capsys):
    out = tmp_path / "bpe-smoke.tokenizer.json"
    assert run_cli("bpe", "--profile", "smoke", "--out", str(out)) == 0
    meta = json.loads((tmp_path / "bpe-smoke.json").read_text())
    tok = load_tokenizer(out)
    assert tok.vocab_size == meta["vocab_size"] == 2000 and meta["data"]["words"] == 200_000
    assert tok.hf.to_str() == pretrained_tokenizer("bpe", "smoke").hf.to_str()     # the same training, twice
    assert run_cli("wordpiece", "--profile", "smoke", "--vocab-size", "100", "--out", str(tmp_path / "w.json")) == 2
    assert "too small" in capsys.readouterr().err
