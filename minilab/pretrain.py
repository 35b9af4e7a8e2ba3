"""`python -m minilib pretrain NAME ...`: pretrain a model, write a small checkpoint with provenance.

    python -m minilib pretrain awd-lstm                       # sizes from MINILIB_PROFILE
    python -m minilib pretrain awd-lstm --words 200000 --epochs 1 --out /tmp/awd.pt
    python -m minilib pretrain gpt --corpus my-texts/         # your own text: files, a folder, or - (stdin)

With `--corpus` a model reads the user's text instead of the built-in corpus (`CorpusRun`): one document
per blank-line block (or file, or line: --documents), a held-out split carved from it (data.corpora.hold_out),
a tokenizer trained on its training part unless --tokenizer names one, and the checkpoint written to the
user's data cache (<data cache>/checkpoints/<model>-<corpus name>-<profile>.pt, resumable from
<data cache>/pretrain/), never into the repository; its provenance names the corpus by sha256 and size.

Each pretrainer is a `*_command(args) -> int` here that reads its parsed options and calls the model's recipe
(minilib/recipes/); its options and help line are in minilab/cli/pretrain.py (PRETRAINERS). Checkpoints are
written in the one pretrained format (minilib/models/pretrained.py).
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path

import torch

from minilib import runtime
from minilab import provenance


# ----------------------------------------------------------------------------- shared pieces

@dataclass(frozen=True)
class CorpusRun:
    """A run on a user's text (--corpus): the training and held-out documents, where the checkpoint and
    its resumable state go, and what the provenance says about the corpus."""
    train: list
    valid: list
    out: Path
    checkpoint_dir: Path
    meta: dict


def user_cache() -> Path:
    """Where a run on a user's text writes: the data cache ($MINILIB_DATA, else ~/.cache/minilib), not the repository."""
    from minilib.data.sources import cache_dir

    return cache_dir()


def corpus_run(args, name: str, profile: str, words: int | None,
               suffix: str = "") -> CorpusRun | None:
    """The user's corpus of `args.corpus` read and split (None without --corpus): its training part capped at
    `words` (the profile's, or --words), the checkpoint <data cache>/checkpoints/<name>-<corpus name>-<profile>
    <suffix>.pt unless --out, resumable from <data cache>/pretrain/<its name> unless --checkpoint-dir."""
    if not args.corpus:
        return None
    from minilib.data.corpora import documents_fingerprint, hold_out, read_user_corpus, take_words

    corpus = read_user_corpus(args.corpus, args.documents, args.encoding)
    train, valid = hold_out(corpus.documents, args.valid_fraction, args.seed)
    train = take_words(train, words)
    out = Path(args.out) if args.out else user_cache() / "checkpoints" / f"{name}-{corpus.name}-{profile}{suffix}.pt"
    ckpt_dir = Path(args.checkpoint_dir) if args.checkpoint_dir else user_cache() / "pretrain" / out.stem
    meta = {"corpus": {**corpus.describe(), "valid_fraction": args.valid_fraction,
                       "train": documents_fingerprint(train), "held_out": documents_fingerprint(valid)}}
    print(f"corpus {corpus.name}: {corpus.bytes:,} bytes, {len(corpus.documents):,} documents ({args.documents}), "
          f"{corpus.words:,} words; training on {meta['corpus']['train']['words']:,}, held out "
          f"{meta['corpus']['held_out']['words']:,} in {len(valid):,} documents"
          + (f"; {corpus.removed_sentences} sentences matching a test item cut" if corpus.removed_sentences else ""))
    return CorpusRun(train, valid, out, ckpt_dir, meta)


def subword_tokenizer(args, kind: str, profile: str, run: CorpusRun | None):
    """The `kind` tokenizer ("bpe" for GPT, "wordpiece" for BERT) a run reads: --tokenizer's (a tokenizer file,
    or a checkpoint's own), else one trained on the user's training text at the profile's vocabulary size,
    else the shipped one."""
    from minilib.data.tokenizer import TOKENIZER_SIZES, TRAINERS, load_tokenizer, pretrained_tokenizer

    path = getattr(args, "tokenizer", None)
    if path is not None:
        path = Path(path)
        if path.suffix == ".pt":
            from minilib.models.pretrained import load_pretrained

            tok = load_pretrained(path).vocab
        else:
            try:
                tok = load_tokenizer(path)
            except (FileNotFoundError, ValueError, OSError) as exc:
                raise runtime.UsageError(f"--tokenizer {path}: {exc}") from None
        if getattr(tok, "kind", None) != kind:
            raise runtime.UsageError(f"--tokenizer {path} is a {getattr(tok, 'kind', 'word')} tokenizer; this model "
                                     f"reads {kind}: give a {kind} tokenizer or leave --tokenizer out")
        return tok
    if run is not None:   # kept beside the training state, so a resumed run reads the very same ids
        saved = run.checkpoint_dir / f"{kind}.tokenizer.json"
        if saved.is_file() and not args.no_resume:
            return load_tokenizer(saved)
        vocab_size = runtime.pick(TOKENIZER_SIZES, profile)[kind]
        tok = TRAINERS[kind]([d.text for d in run.train], vocab_size)
        saved.parent.mkdir(parents=True, exist_ok=True)
        tok.save(saved)
        print(f"trained a {kind} tokenizer on the corpus's training part: {tok.vocab_size:,} ids ({saved})")
        return tok
    return pretrained_tokenizer(kind, profile)


def _command_line(args) -> str:
    """The command that repeats this run, rebuilt from the parsed options (whoever called main); a file option
    names its file as a result does (provenance.shown_path: checkpoints/x.pt, never a machine's absolute path)."""
    parts = ["python -m minilib pretrain", args.model]
    for key, value in vars(args).items():
        if key in ("command", "model") or value is None or value is False:
            continue
        shown = provenance.shown_path(value) if isinstance(value, Path) else value
        parts.append(f"--{key.replace('_', '-')}" + ("" if value is True else f" {shown}"))
    return " ".join(parts)


# ----------------------------------------------------------------------------- awd-lstm

def awd_lstm_command(args) -> int:
    from minilib.recipes.awd_lstm import pretrain_awd_lstm

    from minilib.recipes.awd_lstm import AWD_SIZES

    if args.threads:
        torch.set_num_threads(args.threads)
    prof = args.profile or runtime.profile()
    words = runtime.pick(AWD_SIZES, prof)["words"] if args.words is None else (args.words or None)
    run = corpus_run(args, "awd-lstm", prof, words)
    documents = {} if run is None else dict(train_docs=run.train, valid_docs=run.valid, extra_meta=run.meta)
    meta = pretrain_awd_lstm(prof, out=run.out if run else args.out, seed=args.seed,
                             checkpoint_dir=run.checkpoint_dir if run else args.checkpoint_dir,
                             resume=not args.no_resume, progress=False if args.progress == "off" else "console",
                             max_steps=args.max_steps, valid_words=args.valid_words, command=_command_line(args),
                             emb_size=args.emb_size, hidden_size=args.hidden_size, words=args.words,
                             vocab_size=args.vocab_size, epochs=args.epochs, batch_size=args.batch_size,
                             bptt=args.bptt, lr=args.lr, **documents)
    out = run.out if run else (provenance.REPO_ROOT / "checkpoints" / f"awd-lstm-{meta['profile']}.pt"
                               if args.out is None else args.out)
    size_mb = Path(out).stat().st_size / 1e6
    print(f"trained {meta['train_tokens_seen']:,} tokens at {meta['tokens_per_s']:,.0f} tokens/s ({meta['threads']} threads)")
    print(f"wrote {out} ({size_mb:.1f} MB) and {Path(out).with_suffix('.json').name}: "
          f"valid perplexity {meta['valid_perplexity']:.1f} (fp32 {meta['valid_perplexity_fp32']:.1f})")
    if size_mb > 15:
        print(f"warning: {size_mb:.1f} MB is over the 15 MB budget for shipped checkpoints: "
              f"lower --vocab-size or the model size")
    return 0


# ----------------------------------------------------------------------------- elmo

ELMO_WORDS = {"smoke": (60_000, 10_000), "laptop": (3_000_000, 150_000), "full": (None, None)}  # (train, valid) words; None = all


def pretrain_elmo_command(args) -> int:
    """ELMo's biLM (Peters et al. 2018) on pretraining_corpus('train'), perplexity on 'valid'."""
    from minilib import data
    from minilib.models.elmo import ELMoConfig
    from minilib.recipes.elmo import pretrain_elmo

    prof = args.profile or runtime.profile()
    words, valid_words = runtime.pick(ELMO_WORDS, prof)
    words = words if args.words is None else (args.words or None)
    valid_words = valid_words if args.valid_words is None else (args.valid_words or None)
    if args.threads:
        torch.set_num_threads(args.threads)
    cfg = ELMoConfig.for_profile(prof, seed=args.seed, **({"epochs": args.epochs} if args.epochs else {}))
    run = corpus_run(args, "elmo", prof, words)
    if run is not None:
        from minilib.data.corpora import take_words

        out, ckpt_dir = run.out, run.checkpoint_dir
        train_docs, valid_docs = run.train, take_words(run.valid, valid_words)
    else:
        out = args.out or provenance.REPO_ROOT / "checkpoints" / f"elmo-{prof}.pt"
        ckpt_dir = args.checkpoint_dir or provenance.REPO_ROOT / ".cache" / "pretrain" / Path(out).stem
        train_docs = data.pretraining_corpus("train", max_words=words)
        valid_docs = data.pretraining_corpus("valid", max_words=valid_words)
    try:
        metrics = pretrain_elmo(cfg, train_docs, valid_docs, out,
                                progress=False if args.progress == "off" else "console", checkpoint_dir=ckpt_dir,
                                resume=not args.no_resume, max_steps=args.max_steps,
                                extra_meta=dict(command=_command_line(args), profile=prof,
                                                threads=torch.get_num_threads(), **(run.meta if run else {})))
    except ValueError as exc:   # a user's text too short for one batch of windows (data.batching.ELMoBatches)
        if run is None or "windows" not in str(exc):
            raise
        raise runtime.UsageError(f"--corpus: {exc}; or hold out more with --valid-fraction") from None
    size_mb = Path(out).stat().st_size / 1e6
    print(f"trained {metrics['train_tokens']:,} tokens in {metrics['seconds']:.0f} s ({torch.get_num_threads()} threads)")
    print(f"wrote {out} ({size_mb:.1f} MB) and {Path(out).with_suffix('.json').name}: valid perplexity "
          f"forward {metrics['valid_fwd_ppl']:.1f}, backward {metrics['valid_bwd_ppl']:.1f}")
    return 0


# ----------------------------------------------------------------------------- gpt

GPT_WORDS = {"smoke": 60_000, "laptop": None, "full": None}  # train words; None = the whole train split


def budget_suffix(budget: float | None) -> str:
    """'' for the profile's own run, '-4x' for --budget 4 (checkpoint and cache names)."""
    return "" if budget is None else f"-{budget:g}x"



def pretrain_gpt_command(args) -> int:
    """GPT-1 (Radford et al. 2018) on pretraining_corpus('train') in byte-level BPE, held-out loss on 'valid'."""
    from minilib import data
    from minilib.eval import perplexity
    from minilib.models.gpt import GPT_SIZES
    from minilib.recipes.gpt import GPTPretrainConfig, encode_documents, pretrain_gpt

    prof = args.profile or runtime.profile()
    words = runtime.pick(GPT_WORDS, prof) if args.words is None else (args.words or None)
    if args.threads:
        torch.set_num_threads(args.threads)
    overrides = {k: v for k, v in (("steps", args.steps), ("lr", args.lr)) if v is not None}
    cfg = GPTPretrainConfig.for_profile(prof, seed=args.seed, **overrides)
    if args.budget is not None:
        cfg = cfg.at_budget(args.budget)
    suffix = budget_suffix(args.budget)
    block = GPT_SIZES[prof]["block_size"]
    if args.sentence_window is not None:
        if not 8 <= args.sentence_window <= block or (cfg.batch_size * block) % args.sentence_window:
            raise runtime.UsageError(f"--sentence-window {args.sentence_window}: give a length from 8 to the "
                                     f"model's context ({block}) that divides {cfg.batch_size * block} tokens a step")
        cfg = dataclasses.replace(cfg, sentence_window=args.sentence_window,
                                  batch_size=cfg.batch_size * block // args.sentence_window)
        suffix += f"-sent{args.sentence_window}"
    run = corpus_run(args, "gpt", prof, words, suffix)
    tokenizer = subword_tokenizer(args, "bpe", prof, run)
    extra = dict(command=_command_line(args), profile=prof, threads=torch.get_num_threads())
    if run is not None:
        out, ckpt_dir, train_docs, valid_docs = run.out, run.checkpoint_dir, run.train, run.valid
        extra.update(run.meta, unigram_nats_per_token=perplexity.unigram_nats(
            encode_documents(tokenizer, train_docs), encode_documents(tokenizer, valid_docs, cfg.valid_tokens),
            tokenizer.vocab_size))
    else:
        out = args.out or provenance.REPO_ROOT / "checkpoints" / f"gpt-{prof}{suffix}.pt"
        ckpt_dir = args.checkpoint_dir or provenance.REPO_ROOT / ".cache" / "pretrain" / Path(out).stem
        train_docs, valid_docs = data.pretraining_corpus("train", max_words=words), data.pretraining_corpus("valid")
    print(f"{cfg.steps:,} steps, {cfg.steps * cfg.batch_size * (cfg.sentence_window or block):,} tokens "
          f"({cfg.schedule} schedule); resumable from {ckpt_dir}: run the same command again to continue")
    m = pretrain_gpt(cfg, train_docs, valid_docs, out, tokenizer,
                     progress=False if args.progress == "off" else "console",
                     checkpoint_dir=ckpt_dir, resume=not args.no_resume, max_steps=args.max_steps, extra_meta=extra,
                     warm_start_from=args.warm_start)
    size_mb = Path(out).stat().st_size / 1e6
    print(f"trained {m['train_tokens_seen']:,} tokens at {m['tokens_per_s']:,.0f} tokens/s ({torch.get_num_threads()} "
          f"threads) in {m['seconds']:,.0f} s")
    unigram = f" (unigram {extra['unigram_nats_per_token']:.3f})" if "unigram_nats_per_token" in extra else ""
    print(f"wrote {out} ({size_mb:.1f} MB) and {Path(out).with_suffix('.json').name}: held-out "
          f"{m['valid_nats_per_token']:.3f} nats/token{unigram}, {m['valid_bits_per_byte']:.3f} bits/byte")
    return 0


# ----------------------------------------------------------------------------- bert

def pretrain_bert_command(args) -> int:
    """BERT's command (recipes/bert.py), given the user's corpus and tokenizer when --corpus names one."""
    from minilib.recipes.bert import BERT_WORDS, parse_shape, pretrain_bert_command as run_bert

    prof = args.profile or runtime.profile()
    words = runtime.pick(BERT_WORDS, prof) if args.words is None else (args.words or None)
    name = "bert" if args.objective == "mlm+nsp" else f"bert-{args.objective}"
    suffix = (f"-{'x'.join(map(str, parse_shape(args.shape)))}" if args.shape else "") + budget_suffix(args.budget)
    run = corpus_run(args, name, prof, words, suffix)
    tokenizer = subword_tokenizer(args, "wordpiece", prof, run) if run or args.tokenizer else None
    return run_bert(args, command=_command_line(args), corpus=run, tokenizer=tokenizer)
