"""Two language models that read different tokens, scored on the same held-out text in one unit.

The AWD-LSTM (chapter 04) reads lowercased words from a 15k vocabulary, every rarer word as <unk>;
GPT (chapter 06) reads byte-level BPE and must spell every word out, case included. Per-token
perplexities of the two do not compare. Here both score the same documents of the valid split
and their total negative log-likelihood (nats) is divided by one count: the AWD-LSTM's word-level
tokens of that text (words, punctuation marks and line ends). exp(nats / words) is each model's
**perplexity per word**. Three views, from the most favourable to the AWD-LSTM to the least:

* `ppl_per_word`: all the text. The AWD-LSTM's <unk> is one easy prediction standing for every
  rare word (its `unk_rate`), and its text is lowercased;
* `matched`: only the lines in which the AWD-LSTM meets no <unk>: both models pay for every
  word there, no speller involved (GPT still pays for case);
* `ppl_per_word_open`: all the text, the AWD-LSTM charged for spelling each <unk> word out
  (`spelling_nats`).

GPT's bits per byte (nats / ln 2 / UTF-8 bytes) needs no word tokenizer at all.

    from minilab.experiments import lm_quality
    res = lm_quality.compare()                  # results/lm-quality-<profile>.json, stamped
    res["matched"]["awd_ppl_per_word"], res["matched"]["gpt_ppl_per_word"], res["gpt"]["bits_per_byte"]
"""
from __future__ import annotations

import math
import time
from pathlib import Path

import numpy as np

from minilib import data, runtime
from minilab import provenance
from minilib.data.corpora import documents_fingerprint
from minilab.experiments import store
from minilab import shipped

RESULT = store.register("lm-quality", "profile", "checkpoints", "data")   # results/lm-quality-<profile>.json
VALID_WORDS = {"smoke": 5_000, "laptop": 100_000, "full": 400_000}   # the first words of the valid split


def word_stream(docs, vocab) -> tuple[np.ndarray, np.ndarray]:
    """The AWD-LSTM's view of `docs` (as it was pretrained): each line's words, then <eos>; and for each
    token the index of its line (lines counted over all documents, empty ones too)."""
    from minilib.data.batching import EOS

    eos = [vocab.stoi[EOS]] if EOS in vocab else []
    ids: list[int] = []
    line_of: list[int] = []
    line = 0
    for doc in docs:
        for text in doc.text.split("\n"):
            tokens = data.tokenize(text)
            if tokens:
                ids += vocab.encode(tokens) + eos
                line_of += [line] * (len(tokens) + len(eos))
            line += 1
    return np.asarray(ids, dtype=np.int64), np.asarray(line_of, dtype=np.int64)


def bpe_stream(tok, docs) -> tuple[np.ndarray, np.ndarray]:
    """GPT's view of `docs` (recipes/gpt.py `encode_documents`: each document's BPE ids, then
    <|endoftext|>); and for each token the index of its line, found from the piece's first character
    (a newline piece belongs to the line it ends; <|endoftext|> to the document's last line)."""
    from bisect import bisect_left

    from minilib.recipes.gpt import document_encodings

    ids: list[int] = []
    line_of: list[int] = []
    first_line = 0
    for text, enc in document_encodings(tok, docs):
        newlines = [i for i, c in enumerate(text) if c == "\n"]
        ids += enc.ids + [tok.eos_id]
        line_of += [first_line + bisect_left(newlines, a) for a, _ in enc.offsets] + [first_line + len(newlines)]
        first_line += len(newlines) + 1
    return np.asarray(ids, dtype=np.int64), np.asarray(line_of, dtype=np.int64)


def spelling_nats(words, train_words) -> float:
    """What spelling `words` out costs a character bigram model (p(c | previous character), from a
    start mark to an end mark, add-one smoothed over the characters seen, fit on `train_words`):
    Σ over words of −ln p(c₁ | start) p(c₂ | c₁) … p(end | c_n). The price this chapter charges the
    AWD-LSTM for each word it reads as <unk>, so that both models pay for every word of the text (the
    usual open-vocabulary correction; e.g. Mielke & Eisner 2019). Fit it on the training words the
    LM reads as <unk>: having paid for p(<unk>), the LM owes p(spelling | a rare word)."""
    from collections import Counter

    START, END = "\x02", "\x03"
    pairs = Counter(p for w in train_words for p in zip(START + w, w + END))
    before = Counter(a for a, _ in pairs.elements())
    alphabet = {c for w in list(train_words) + list(words) for c in w} | {END}
    return float(sum(-np.log((pairs[(a, b)] + 1) / (before[a] + len(alphabet)))
                     for w in words for a, b in zip(START + w, w + END)))


def score_awd_lstm(path, docs, train_words: int = 1_000_000) -> dict:
    """Nats of the AWD-LSTM on `docs` (each token's, its hidden state carried through the text), and
    the spelling cost of the words it reads as <unk> (`spelling_nats`)."""
    from minilib.eval.perplexity import token_nats
    from minilib.models.pretrained import load_pretrained

    model, vocab, meta = load_pretrained(path, "awd-lstm")
    ids, line_of = word_stream(docs, vocab)
    nats = token_nats(model, ids, batch_size=10, bptt=70)
    unk = vocab.stoi[vocab.unk] if vocab.unk else -1
    words = [t for d in docs for line in d.text.split("\n") for t in data.tokenize(line)]
    unknown = [t for t in words[1:] if t not in vocab.stoi]          # the scored ones (the first is context)
    train = [t for d in data.pretraining_corpus("train", max_words=train_words) for t in data.tokenize(d.text)]
    # the shipped checkpoint's provenance (recipes/awd_lstm.py): train stream tokens × epochs, seconds, tokens/s
    seen = meta.get("train_tokens_seen") or meta.get("data", {}).get("train_tokens", 0) * meta.get("sizes", {}).get("epochs", 1)
    return {"nats": float(nats.sum()), "tokens": len(nats), "unk_rate": float(np.mean(ids == unk)),
            "unk_spelling_nats": spelling_nats(unknown, [t for t in train if t not in vocab.stoi]),
            "unk_words": len(unknown), "vocab_size": len(vocab), "train_tokens_seen": seen or None,
            "seconds_pretraining": meta.get("train_seconds"), "tokens_per_s_pretraining": meta.get("tokens_per_s"),
            "_token_nats": nats, "_line_of": line_of[1:], "_unk_lines": np.unique(line_of[ids == unk])}


def score_gpt(path, docs) -> dict:
    """Nats of GPT on `docs` (each token's; windows of its context advancing by half)."""
    from minilib.eval.perplexity import windowed_token_nats
    from minilib.models.pretrained import load_pretrained

    model, tok, meta = load_pretrained(path, "gpt")
    ids, line_of = bpe_stream(tok, docs)
    nats = windowed_token_nats(model, ids, model.cfg.block_size)
    n_bytes = len(tok.decode(ids[1:]).encode("utf-8"))
    metrics = meta.get("metrics", {})
    return {"nats": float(nats.sum()), "tokens": len(nats), "bytes": n_bytes,
            "bits_per_byte": float(nats.sum()) / math.log(2) / n_bytes,
            "vocab_size": tok.vocab_size, "train_tokens_seen": metrics.get("train_tokens_seen"),
            "seconds_pretraining": metrics.get("seconds"), "tokens_per_s_pretraining": metrics.get("tokens_per_s"),
            "_token_nats": nats, "_line_of": line_of[1:]}


def matched_lines(awd: dict, gpt: dict) -> dict:
    """Both models' perplexity per word on the lines where the AWD-LSTM reads no <unk> (the first line,
    which each model starts inside, left out): the same words, every one of them paid for by both."""
    lines = np.setdiff1d(np.union1d(awd["_line_of"], gpt["_line_of"]), np.append(awd["_unk_lines"], 0))
    keep = {name: np.isin(m["_line_of"], lines) for name, m in (("awd", awd), ("gpt", gpt))}
    words = int(keep["awd"].sum())
    if not words:
        raise ValueError("every line has an <unk>: score more text (valid_words) to compare on matched lines")
    return {"lines": len(lines), "words": words, "share_of_words": words / awd["tokens"],
            "awd_ppl_per_word": math.exp(awd["_token_nats"][keep["awd"]].sum() / words),
            "gpt_ppl_per_word": math.exp(gpt["_token_nats"][keep["gpt"]].sum() / words)}


def compare(profile: str | None = None, awd_path: str | Path | None = None, gpt_path: str | Path | None = None,
            valid_words: int | None = None, write: bool = True) -> dict:
    """Both shipped models on the first `valid_words` words of the valid split; perplexity per word."""
    prof = profile or runtime.profile()
    ckpt = provenance.REPO_ROOT / "checkpoints"
    awd_path = Path(awd_path or ckpt / f"awd-lstm-{prof}.pt")
    gpt_path = Path(gpt_path or shipped.checkpoint("gpt", prof))       # the recipe run, or its shipped branch
    docs = data.pretraining_corpus("valid", max_words=valid_words or runtime.pick(VALID_WORDS, prof))
    t0 = time.time()
    awd, gpt = score_awd_lstm(awd_path, docs), score_gpt(gpt_path, docs)
    words = awd["tokens"]
    for model in (awd, gpt):
        model["nats_per_token"] = model["nats"] / model["tokens"]
        model["ppl_per_word"] = math.exp(model["nats"] / words)
    awd["ppl_per_word_open"] = math.exp((awd["nats"] + awd["unk_spelling_nats"]) / words)   # <unk>s spelled out
    matched = matched_lines(awd, gpt)
    for model in (awd, gpt):
        for key in [k for k in model if k.startswith("_")]:
            del model[key]
    result = {"experiment": "lm-quality", "profile": prof, "words": words, "awd-lstm": awd, "gpt": gpt,
              "matched": matched,
              "checkpoints": {"awd-lstm": awd_path.name, "gpt": gpt_path.name},
              "data": documents_fingerprint(docs), "seconds": round(time.time() - t0, 1),
              "provenance": provenance.stamp(seed=None)}
    if write:
        result = store.save(RESULT, prof, result)
    return result


def summary_line(result: dict) -> str:
    a, g = result["awd-lstm"], result["gpt"]
    m = result["matched"]
    return (f"lm-quality: words={result['words']} awd_ppl_per_word={a['ppl_per_word']:.1f} "
            f"awd_ppl_per_word_open={a['ppl_per_word_open']:.1f} gpt_ppl_per_word={g['ppl_per_word']:.1f} "
            f"matched_words={m['words']} matched_awd_ppl={m['awd_ppl_per_word']:.1f} "
            f"matched_gpt_ppl={m['gpt_ppl_per_word']:.1f} "
            f"gpt_bits_per_byte={g['bits_per_byte']:.3f} awd_unk_rate={a['unk_rate']:.3f}")


def cli_run(args, name: str) -> int:
    result = compare(args.profile, args.awd_lstm, args.gpt, args.valid_words)
    a, g = result["awd-lstm"], result["gpt"]
    for label, m in (("AWD-LSTM", a), ("GPT", g)):
        print(f"{label:9s} {m['tokens']:>8,} tokens  {m['nats_per_token']:.3f} nats/token  "
              f"perplexity per word {m['ppl_per_word']:8.1f}")
    m = result["matched"]
    print(f"on the {m['share_of_words']:.0%} of words in lines without <unk>: AWD-LSTM {m['awd_ppl_per_word']:.1f}, "
          f"GPT {m['gpt_ppl_per_word']:.1f} per word")
    print(f"GPT: {g['bits_per_byte']:.3f} bits per byte; AWD-LSTM: {a['unk_rate']:.1%} of its tokens are <unk>; "
          f"with each spelled out by a character bigram model, its perplexity per word is {a['ppl_per_word_open']:.1f}")
    print(summary_line(result))
    return 0
