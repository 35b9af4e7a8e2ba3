"""Two language models that read different tokens, scored on the same held-out text in one unit.

The AWD-LSTM (chapter 04) reads lowercased words from a 15k vocabulary, every rarer word as <unk>;
GPT (chapter 06) reads byte-level BPE and must spell every word out, case included. Per-token
perplexities of the two do not compare. Here both score the same documents of the valid split
and their total negative log-likelihood (nats) is divided by one count: the AWD-LSTM's word-level
tokens of that text (words, punctuation marks and line ends). exp(nats / words) is each model's
**perplexity per word**. The comparison leans towards the AWD-LSTM, and the result says by how much:
its <unk> is one easy prediction standing for every rare word (the `unk_rate`), and its text is
lowercased. `ppl_per_word_open` charges it for spelling each <unk> word out (`spelling_nats`), so
that both models pay for every word. GPT's bits per byte (nats / ln 2 / UTF-8 bytes) needs no
tokenizer at all.

    from minilib.experiments import lm_quality
    res = lm_quality.compare()                  # results/lm-quality-<profile>.json, stamped
    res["awd-lstm"]["ppl_per_word"], res["gpt"]["ppl_per_word"], res["gpt"]["bits_per_byte"]
"""
from __future__ import annotations

import math
import time
from pathlib import Path

import numpy as np

from minilib import data, provenance, runtime
from minilib.data.corpora import documents_fingerprint

RESULTS_DIR = provenance.REPO_ROOT / "results"
VALID_WORDS = {"smoke": 5_000, "laptop": 100_000, "full": 400_000}   # the first words of the valid split


def word_stream(docs, vocab) -> np.ndarray:
    """The AWD-LSTM's view of `docs` (as it was pretrained): each line's words, then <eos>."""
    from minilib.data.batching import EOS

    eos = [vocab.stoi[EOS]] if EOS in vocab else []
    out: list[int] = []
    for doc in docs:
        for line in doc.text.split("\n"):
            tokens = data.tokenize(line)
            if tokens:
                out += vocab.encode(tokens) + eos
    return np.asarray(out, dtype=np.int64)


def spelling_nats(words, train_words) -> float:
    """What spelling `words` out costs a character unigram model (letters and an end-of-word mark,
    add-one smoothed, fit on `train_words`): Σ over words of −ln p(c₁)…p(c_n)p(end). The price this
    chapter charges the AWD-LSTM for each word it reads as <unk>, so that both models pay for every
    word of the text (the usual open-vocabulary correction; e.g. Mielke & Eisner 2019). A unigram speller
    is a poor one: the charge is generous to GPT, and the result says so."""
    from collections import Counter

    END = "\n"
    counts = Counter(c for w in train_words for c in w + END)
    counts.update(c for w in words for c in w if c not in counts)      # unseen characters: count 0 + 1
    total, size = sum(counts.values()), len(counts)
    return float(sum(-np.log((counts[c] + 1) / (total + size)) for w in words for c in w + END))


def score_awd_lstm(path, docs, train_words: int = 1_000_000) -> dict:
    """Nats of the AWD-LSTM on `docs`, its hidden state carried through the text (evaluate_lm), and
    the spelling cost of the words it reads as <unk> (`spelling_nats`)."""
    from minilib.eval.perplexity import evaluate_lm
    from minilib.models.pretrained import load_pretrained

    model, vocab, meta = load_pretrained(path, "awd-lstm")
    ids = word_stream(docs, vocab)
    nats_per_token = evaluate_lm(model, ids, batch_size=10, bptt=70)
    unk = vocab.stoi[vocab.unk] if vocab.unk else -1
    words = [t for d in docs for line in d.text.split("\n") for t in data.tokenize(line)]
    unknown = [t for t in words[1:] if t not in vocab.stoi]          # the scored ones (the first is context)
    train = [t for d in data.pretraining_corpus("train", max_words=train_words) for t in data.tokenize(d.text)]
    # the shipped checkpoint's provenance (recipes/awd_lstm.py): train stream tokens × epochs, seconds, tokens/s
    seen = meta.get("train_tokens_seen") or meta.get("data", {}).get("train_tokens", 0) * meta.get("sizes", {}).get("epochs", 1)
    return {"nats": nats_per_token * (len(ids) - 1), "tokens": len(ids) - 1, "unk_rate": float(np.mean(ids == unk)),
            "unk_spelling_nats": spelling_nats(unknown, train), "unk_words": len(unknown),
            "vocab_size": len(vocab), "train_tokens_seen": seen or None,
            "seconds_pretraining": meta.get("train_seconds"), "tokens_per_s_pretraining": meta.get("tokens_per_s")}


def score_gpt(path, docs) -> dict:
    """Nats of GPT on `docs` (documents joined by <|endoftext|>), windows of its context advancing by half."""
    from minilib.eval.perplexity import windowed_nats
    from minilib.models.pretrained import load_pretrained
    from minilib.recipes.gpt import encode_documents

    model, tok, meta = load_pretrained(path, "gpt")
    ids = encode_documents(tok, docs)
    nats, n = windowed_nats(model, ids, model.cfg.block_size)
    n_bytes = len(tok.decode(ids[1:]).encode("utf-8"))
    metrics = meta.get("metrics", {})
    return {"nats": nats, "tokens": n, "bytes": n_bytes, "bits_per_byte": nats / math.log(2) / n_bytes,
            "vocab_size": tok.vocab_size, "train_tokens_seen": metrics.get("train_tokens_seen"),
            "seconds_pretraining": metrics.get("seconds"), "tokens_per_s_pretraining": metrics.get("tokens_per_s")}


def compare(profile: str | None = None, awd_path: str | Path | None = None, gpt_path: str | Path | None = None,
            valid_words: int | None = None, write: bool = True) -> dict:
    """Both shipped models on the first `valid_words` words of the valid split; perplexity per word."""
    prof = profile or runtime.profile()
    ckpt = provenance.REPO_ROOT / "checkpoints"
    awd_path = Path(awd_path or ckpt / f"awd-lstm-{prof}.pt")
    gpt_path = Path(gpt_path or ckpt / f"gpt-{prof}.pt")
    docs = data.pretraining_corpus("valid", max_words=valid_words or runtime.pick(VALID_WORDS, prof))
    t0 = time.time()
    awd, gpt = score_awd_lstm(awd_path, docs), score_gpt(gpt_path, docs)
    words = awd["tokens"]
    for model in (awd, gpt):
        model["nats_per_token"] = model["nats"] / model["tokens"]
        model["ppl_per_word"] = math.exp(model["nats"] / words)
    awd["ppl_per_word_open"] = math.exp((awd["nats"] + awd["unk_spelling_nats"]) / words)   # <unk>s spelled out
    result = {"experiment": "lm-quality", "profile": prof, "words": words, "awd-lstm": awd, "gpt": gpt,
              "checkpoints": {"awd-lstm": awd_path.name, "gpt": gpt_path.name},
              "data": documents_fingerprint(docs), "seconds": round(time.time() - t0, 1),
              "provenance": provenance.stamp(seed=None)}
    if write:
        provenance.write_json(RESULTS_DIR / f"lm-quality-{prof}.json", result)
    return result


def summary_line(result: dict) -> str:
    a, g = result["awd-lstm"], result["gpt"]
    return (f"lm-quality: words={result['words']} awd_ppl_per_word={a['ppl_per_word']:.1f} "
            f"awd_ppl_per_word_open={a['ppl_per_word_open']:.1f} gpt_ppl_per_word={g['ppl_per_word']:.1f} "
            f"gpt_bits_per_byte={g['bits_per_byte']:.3f} awd_unk_rate={a['unk_rate']:.3f}")


def cli_arguments(parser, name: str) -> None:
    parser.add_argument("--profile", choices=runtime.PROFILES, default=None,
                        help="whose checkpoints (default: $MINILIB_PROFILE or the device's default)")
    parser.add_argument("--awd-lstm", type=Path, default=None, help="AWD-LSTM checkpoint (default: the shipped one)")
    parser.add_argument("--gpt", type=Path, default=None, help="GPT checkpoint (default: the shipped one)")
    parser.add_argument("--valid-words", type=int, default=None, help="words of the valid split scored (default: per profile)")


def cli_run(args, name: str) -> int:
    result = compare(args.profile, args.awd_lstm, args.gpt, args.valid_words)
    a, g = result["awd-lstm"], result["gpt"]
    for label, m in (("AWD-LSTM", a), ("GPT", g)):
        print(f"{label:9s} {m['tokens']:>8,} tokens  {m['nats_per_token']:.3f} nats/token  "
              f"perplexity per word {m['ppl_per_word']:8.1f}")
    print(f"GPT: {g['bits_per_byte']:.3f} bits per byte; AWD-LSTM: {a['unk_rate']:.1%} of its tokens are <unk>; "
          f"with each spelled out by a character unigram model, its perplexity per word is {a['ppl_per_word_open']:.1f}")
    print(summary_line(result))
    return 0
