"""One interface for every tokenizer in the book: words (chapters 1-4), byte-level BPE (GPT), WordPiece (BERT).

    >>> tok = pretrained_tokenizer("bpe")                  # checkpoints/bpe-<profile>.tokenizer.json
    >>> ids = tok.encode("The flywheel turns.")            # list[int]
    >>> tok.decode(ids)                                    # 'The flywheel turns.' (byte-level BPE is lossless)
    >>> tok.pieces("unaffable")                            # the strings behind the ids
    >>> tok.vocab_size, tok.eos_id, tok.pad_id

    >>> bert = pretrained_tokenizer("wordpiece")
    >>> ids, segments = bert.encode_pair("the man went to the store", "he bought milk")
    >>> # [CLS] the man went to the store [SEP] he bought milk [SEP]   /   0 ... 0 1 ... 1

    >>> words = WordTokenizer(vocab)                       # a data.Vocab behind the same interface
    >>> load_tokenizer(path)                               # whichever of the three a file holds

Every tokenizer has `encode(text) -> ids`, `decode(ids) -> text`, `pieces(text)`,
`vocab_size`, the ids of the special tokens it has (`pad_id`, `unk_id`, `bos_id`,
`eos_id`, `cls_id`, `sep_id`, `mask_id`: None where it has none), and `save(path)`.

The subword vocabularies are trained with Hugging Face `tokenizers` on the
train split of the pretraining corpus (never valid or test), and saved in its
JSON format, so a file here also loads with `tokenizers.Tokenizer.from_file`:

  * byte-level BPE as in GPT-2 (Radford et al. 2019, §2.2): case kept, every
    byte in the base vocabulary, so no text is ever unknown and decode(encode(t))
    gives t back exactly. Specials: <|endoftext|> (between documents; GPT-2's
    only special) and <pad> (so padding can be told apart from a real token).
    `minilib.data.bpe` learns the same merges from scratch.
  * WordPiece as in BERT (Devlin et al. 2019, §3; the uncased model):
    lowercased, accents stripped, punctuation split off, "##" marks a piece
    that continues a word, [PAD] [UNK] [CLS] [SEP] [MASK]. `tokenizers` learns
    the pieces by frequency-ranked merges (BPE-style) rather than by the
    language-model likelihood of Wu et al. (2016); segmentation is BERT's
    greedy longest match first.

Build the shipped files with `python -m minilib data tokenizer bpe|wordpiece
--profile laptop` (`build_tokenizer`); each gets a provenance JSON beside it.
"""
from __future__ import annotations

import hashlib
import json
import os
import time
from collections import Counter
from pathlib import Path
from typing import Any, Iterable, Sequence

from minilib.data.words import tokenize
from minilib.data.vocab import Vocab

KINDS = ("bpe", "wordpiece")

# Vocabulary sizes and training text per profile. `words` caps the train split (None: all of it).
# The choice of sizes is measured by `measure_vocab_sizes` (`data tokenizer bpe --measure ...`).
TOKENIZER_SIZES: dict[str, dict[str, Any]] = {
    "smoke": dict(words=200_000, bpe=2_000, wordpiece=2_000),
    "laptop": dict(words=None, bpe=8_000, wordpiece=8_000),
    "full": dict(words=None, bpe=8_000, wordpiece=8_000),
}
WORDPIECE_MIN_CHAR_COUNT = 10   # rarer characters are left out of the alphabet: a word holding one is [UNK]


def _special(role: str) -> property:
    return property(lambda self: self.specials.get(role),
                    doc=f"Id of the {role} token, or None if this tokenizer has none.")


class Tokenizer:
    """What every tokenizer offers. Subclasses set `kind` and `specials` and fill in the methods."""

    kind: str                       # "word" | "bpe" | "wordpiece"
    specials: dict[str, int]        # role -> id, for the roles this tokenizer has (see `_special`)

    pad_id = _special("pad")        # fills a batch to one length; never a training target
    unk_id = _special("unk")        # stands for anything out of vocabulary
    bos_id = _special("bos")        # starts a text
    eos_id = _special("eos")        # ends a text
    cls_id = _special("cls")        # BERT: first token, its vector summarises the input
    sep_id = _special("sep")        # BERT: ends each segment
    mask_id = _special("mask")      # BERT: a position the masked LM must fill in

    @property
    def vocab_size(self) -> int:
        raise NotImplementedError

    def encode(self, text: str) -> list[int]:
        """Ids of `text` (no special tokens added)."""
        raise NotImplementedError

    def decode(self, ids: Iterable[int]) -> str:
        """Text of `ids` (a list, array or tensor of ints); special tokens are shown, not dropped."""
        raise NotImplementedError

    def pieces(self, text: str) -> list[str]:
        """The token strings `encode(text)` gives ids for."""
        raise NotImplementedError

    def save(self, path: str | os.PathLike) -> None:
        raise NotImplementedError

    def __len__(self) -> int:
        return self.vocab_size

    def __repr__(self) -> str:
        specials = ", ".join(f"{role}={i}" for role, i in self.specials.items())
        return f"{type(self).__name__}({self.vocab_size:,} tokens; {specials})"


class WordTokenizer(Tokenizer):
    """The book's word tokenizer (`data.tokenize`: lowercased words and punctuation) and a `Vocab`.

    One id per word; a word outside the vocabulary becomes <unk>, and decoding
    joins words with spaces, so decode(encode(t)) is the tokenized text.
    """

    kind = "word"
    ROLES = {"unk": "<unk>", "pad": "<pad>", "bos": "<bos>", "eos": "<eos>"}

    def __init__(self, vocab: Vocab):
        self.vocab = vocab
        self.specials = {role: vocab.stoi[tok] for role, tok in self.ROLES.items()
                         if tok in vocab and (role != "unk" or vocab.unk == tok)}

    @property
    def vocab_size(self) -> int:
        return len(self.vocab)

    def encode(self, text: str) -> list[int]:
        return self.vocab.encode(tokenize(text))

    def decode(self, ids: Iterable[int]) -> str:
        return " ".join(self.vocab.decode(ids))

    def pieces(self, text: str) -> list[str]:
        return self.vocab.decode(self.encode(text))

    def save(self, path: str | os.PathLike) -> None:
        self.vocab.save(path)


class SubwordTokenizer(Tokenizer):
    """A trained Hugging Face `tokenizers.Tokenizer` behind the book's interface (`self.hf` is it)."""

    ROLES: dict[str, str] = {}      # role -> token string

    def __init__(self, hf):
        self.hf = hf
        self.specials = {role: hf.token_to_id(tok) for role, tok in self.ROLES.items()
                         if hf.token_to_id(tok) is not None}

    @property
    def vocab_size(self) -> int:
        return self.hf.get_vocab_size(with_added_tokens=True)

    def encode(self, text: str) -> list[int]:
        return self.hf.encode(text, add_special_tokens=False).ids

    def decode(self, ids: Iterable[int]) -> str:
        return self.hf.decode([int(i) for i in ids], skip_special_tokens=False)

    def pieces(self, text: str) -> list[str]:
        return self.hf.encode(text, add_special_tokens=False).tokens

    def id_to_token(self, i: int) -> str:
        return self.hf.id_to_token(int(i))

    def save(self, path: str | os.PathLike) -> None:
        from minilib.files import atomic_write_bytes

        atomic_write_bytes(Path(path), self.hf.to_str().encode("utf-8"))


class ByteLevelBPE(SubwordTokenizer):
    """GPT-2's tokenizer: byte-level BPE, case kept, lossless. "Ġ" in a piece is the space before a word."""

    kind = "bpe"
    EOT, PAD = "<|endoftext|>", "<pad>"
    ROLES = {"bos": EOT, "eos": EOT, "pad": PAD}    # GPT-2 marks both ends of a document with one token


class WordPieceTokenizer(SubwordTokenizer):
    """BERT's tokenizer: lowercased WordPiece with [CLS] [SEP] [MASK] [PAD] [UNK]; "##" continues a word."""

    kind = "wordpiece"
    ROLES = {"pad": "[PAD]", "unk": "[UNK]", "cls": "[CLS]", "sep": "[SEP]", "mask": "[MASK]"}

    def encode_pair(self, a: str, b: str | None = None) -> tuple[list[int], list[int]]:
        """BERT's input (§3, Figure 2): `[CLS] a [SEP] b [SEP]` and its segment ids (0 for a's part, 1 for b's).

        With `b` None: `[CLS] a [SEP]`, all segment 0 (a single sentence, as for classification).
        """
        first = [self.cls_id, *self.encode(a), self.sep_id]
        second = [] if b is None else [*self.encode(b), self.sep_id]
        return first + second, [0] * len(first) + [1] * len(second)


# ----------------------------------------------------------------------------- training

def _corpus_texts(split: str, words: int | None) -> list[str]:
    from minilib.data.corpora import pretraining_corpus

    return [d.text for d in pretraining_corpus(split, max_words=words)]


def _check_vocab_size(vocab_size: int, floor: int, kind: str) -> None:
    if vocab_size <= floor:
        raise ValueError(f"vocab_size={vocab_size} is too small for {kind}: its base alphabet and specials "
                         f"alone take {floor} ids; use more, e.g. 8000")


def train_bpe(texts: Sequence[str], vocab_size: int) -> ByteLevelBPE:
    """Byte-level BPE (GPT-2 settings) learned from `texts`: 256 bytes + 2 specials + merges up to `vocab_size`."""
    from tokenizers import Tokenizer as HF, decoders, models, pre_tokenizers, trainers

    specials = [ByteLevelBPE.EOT, ByteLevelBPE.PAD]
    _check_vocab_size(vocab_size, 256 + len(specials), "byte-level BPE")
    hf = HF(models.BPE())
    # GPT-2's regex split, a leading space kept on each word, bytes shown as printable characters.
    hf.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    hf.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=specials, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())   # all 256 bytes
    hf.train_from_iterator(texts, trainer)
    return ByteLevelBPE(hf)


def _bert_normalizer():
    from tokenizers import normalizers

    return normalizers.BertNormalizer(clean_text=True, handle_chinese_chars=True, strip_accents=True, lowercase=True)


def train_wordpiece(texts: Sequence[str], vocab_size: int,
                    min_char_count: int = WORDPIECE_MIN_CHAR_COUNT) -> WordPieceTokenizer:
    """BERT-style uncased WordPiece learned from `texts`, `vocab_size` ids in all, specials 0-4."""
    from tokenizers import Tokenizer as HF, decoders, models, pre_tokenizers, processors, trainers

    specials = list(WordPieceTokenizer.ROLES.values())          # [PAD] [UNK] [CLS] [SEP] [MASK] = ids 0..4
    normalizer = _bert_normalizer()
    chars: Counter[str] = Counter()
    for text in texts:
        chars.update(normalizer.normalize_str(text))
    alphabet = sorted(c for c, n in chars.items() if n >= min_char_count and not c.isspace())
    _check_vocab_size(vocab_size, len(specials) + 2 * len(alphabet), "WordPiece")
    # Determinism: `tokenizers` numbers the "##x" pieces in hash-map order, which changes from run to run
    # and breaks ties between equally frequent merges differently. Listing them up front (as specials of the
    # trainer only) fixes their ids; the alphabet is given exactly, so no rare-character cut is left to chance.
    trainer = trainers.WordPieceTrainer(vocab_size=vocab_size, show_progress=False,
                                        special_tokens=specials + [f"##{c}" for c in alphabet],
                                        initial_alphabet=alphabet, limit_alphabet=len(alphabet),
                                        continuing_subword_prefix="##")
    draft = HF(models.WordPiece(unk_token="[UNK]"))
    draft.normalizer = normalizer
    draft.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    draft.train_from_iterator(texts, trainer)

    # The final tokenizer: the learned vocabulary, with only the five real specials.
    vocab = draft.get_vocab(with_added_tokens=False)
    hf = HF(models.WordPiece(vocab=vocab, unk_token="[UNK]", continuing_subword_prefix="##",
                             max_input_chars_per_word=100))
    hf.normalizer = _bert_normalizer()
    hf.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    hf.decoder = decoders.WordPiece(prefix="##")
    hf.add_special_tokens(specials)
    # The same [CLS] a [SEP] b [SEP] layout as `encode_pair`, for anyone loading the file into `tokenizers`.
    hf.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", vocab["[CLS]"]), ("[SEP]", vocab["[SEP]"])])
    return WordPieceTokenizer(hf)


TRAINERS = {"bpe": train_bpe, "wordpiece": train_wordpiece}


def tokens_per_word(tok: Tokenizer, texts: Iterable[str]) -> dict[str, float]:
    """Tokens per whitespace-separated word over `texts`, and the share of tokens that are unknown."""
    n_words = n_tokens = n_unk = 0
    for text in texts:
        ids = tok.encode(text)
        n_words += len(text.split())
        n_tokens += len(ids)
        n_unk += sum(i == tok.unk_id for i in ids) if tok.unk_id is not None else 0
    return {"words": n_words, "tokens": n_tokens, "tokens_per_word": n_tokens / n_words, "unk_rate": n_unk / n_tokens}


def embedding_share(vocab_size: int, d_model: int, n_layers: int) -> float:
    """Share of a Transformer's parameters in its (tied) token embedding: V·d against 12·L·d² for the
    blocks (attention 4d², MLP 8d²; biases, norms and positions left out)."""
    emb = vocab_size * d_model
    return emb / (emb + 12 * n_layers * d_model ** 2)


# ----------------------------------------------------------------------------- files

def tokenizer_path(kind: str, profile: str) -> Path:
    """checkpoints/<kind>-<profile>.tokenizer.json; its provenance is <kind>-<profile>.json beside it."""
    from minilib.files import REPO_ROOT

    return REPO_ROOT / "checkpoints" / f"{kind}-{profile}.tokenizer.json"


def load_tokenizer(path: str | os.PathLike) -> Tokenizer:
    """The tokenizer saved at `path`: a word Vocab, a byte-level BPE or a WordPiece, told apart by content."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"no tokenizer at {path}: build one with "
                                f"`python -m minilib data tokenizer bpe|wordpiece --profile laptop`")
    d = json.loads(path.read_text(encoding="utf-8"))
    if "itos" in d:
        return WordTokenizer(Vocab.load(path))
    try:
        return load_tokenizer_json(path.read_text(encoding="utf-8"))
    except ValueError:
        raise ValueError(f"{path} is not a tokenizer file this library wrote (a Vocab JSON with 'itos', "
                         f"or a `tokenizers` JSON with a BPE or WordPiece model)") from None


def load_tokenizer_json(text: str) -> SubwordTokenizer:
    """A byte-level BPE or WordPiece tokenizer from the `tokenizers` JSON `text` (`hf.to_str()`)."""
    kind = (json.loads(text).get("model") or {}).get("type")
    if kind not in ("BPE", "WordPiece"):
        raise ValueError(f"not a `tokenizers` JSON with a BPE or WordPiece model (model type {kind!r})")
    from tokenizers import Tokenizer as HF

    hf = HF.from_str(text)
    return ByteLevelBPE(hf) if kind == "BPE" else WordPieceTokenizer(hf)


def pretrained_tokenizer(kind: str, profile: str | None = None) -> Tokenizer:
    """The shipped `kind` tokenizer for `profile` (default: the current one).

    smoke has no file: it trains one on a slice of the corpus (a few seconds).
    """
    from minilib import runtime

    if kind not in KINDS:
        raise ValueError(f"unknown tokenizer kind {kind!r}; use one of {', '.join(KINDS)}")
    profile = profile or runtime.profile()
    if TOKENIZER_SIZES[profile] == TOKENIZER_SIZES["laptop"]:
        profile = "laptop"          # full trains on the same text to the same sizes: one file serves both
    if profile == "smoke":
        sizes = runtime.pick(TOKENIZER_SIZES, profile)
        return TRAINERS[kind](_corpus_texts("train", sizes["words"]), sizes[kind])
    return load_tokenizer(tokenizer_path(kind, profile))


def build_tokenizer(kind: str, profile: str, *, vocab_size: int | None = None, words: int | None = None,
                    out: str | os.PathLike | None = None, command: str | None = None) -> Path:
    """Train a `kind` tokenizer on the train split, write it and its provenance JSON; returns its path."""
    from minilib import files, runtime
    from minilib.data.corpora import DEFAULT_SOURCES
    from minilib.data.sources import source

    sizes = dict(runtime.pick(TOKENIZER_SIZES, profile))
    vocab_size = vocab_size or sizes[kind]
    words = words or sizes["words"]
    out = Path(out) if out else tokenizer_path(kind, profile)
    t0 = time.perf_counter()
    texts = _corpus_texts("train", words)
    t1 = time.perf_counter()
    tok = TRAINERS[kind](texts, vocab_size)
    train_seconds = time.perf_counter() - t1
    tok.save(out)
    digest = hashlib.sha256()
    for text in texts:
        digest.update(text.encode("utf-8") + b"\0")
    valid = tokens_per_word(tok, _corpus_texts("valid", None))
    meta = runtime.stamp(
        command=command, profile=profile, model=kind, vocab_size=tok.vocab_size, specials=tok.specials,
        data={"split": "train", "documents": len(texts), "words": sum(len(t.split()) for t in texts),
              "sha256": digest.hexdigest(),
              "sources": {name: source(name).artifact.sha256 for name in DEFAULT_SOURCES}},
        valid=valid, read_seconds=round(t1 - t0, 1), train_seconds=round(train_seconds, 1),
        tokenizer=out.name, tokenizer_bytes=out.stat().st_size,
        tokenizer_sha256=hashlib.sha256(out.read_bytes()).hexdigest())
    files.write_json(out.with_name(out.name.replace(".tokenizer.json", "") + ".json"), meta)
    return out


def measure_vocab_sizes(kind: str, vocab_sizes: Sequence[int], words: int | None = None,
                        models: Sequence[tuple[int, int]] = ((4, 128), (4, 256), (6, 256))) -> list[dict[str, Any]]:
    """For each vocabulary size: tokens per word on the valid split, unknown rate, training time, and the
    embedding's share of a Transformer of each (n_layers, d_model) in `models`."""
    texts, valid = _corpus_texts("train", words), _corpus_texts("valid", None)
    rows = []
    for v in vocab_sizes:
        t0 = time.perf_counter()
        tok = TRAINERS[kind](texts, v)
        row = {"kind": kind, "vocab_size": v, "train_seconds": round(time.perf_counter() - t0, 1),
               **tokens_per_word(tok, valid)}
        row["embedding_share"] = {f"L{n}-d{d}": round(embedding_share(v, d, n), 3) for n, d in models}
        rows.append(row)
    return rows
