"""Chapter 08's compute accounting: what pretraining cost against what fine-tuning costs, for each shipped
model, in training FLOPs counted by code, beside the budgets of two papers.

Every count is Kaplan et al. 2020's C ≈ 6·N·D (§2.1: 2N FLOPs a token forward, 4N backward), with N the
non-embedding parameters (every weight but the rows of the vocabulary, in or out, and the positions) and D
the tokens the model trained on: for pretraining, as its provenance JSON records them; for fine-tuning, the
examples a grid point sees (its recipe's epochs, small samples repeated to `min_steps_per_epoch` steps, as
the runner does) times their mean length in the model's own tokens, markers included.
    python -m minilib experiment compute        # results/compute-<profile>.json
"""
from __future__ import annotations

import json
from dataclasses import dataclass

from torch import nn

from minilib import runtime
from minilab import provenance
from minilab.experiments import store
from minilab import shipped

RESULT = store.register("compute", "profile")        # results/compute-<profile>.json: read from the checkpoints
CHECKPOINTS = provenance.REPO_ROOT / "checkpoints"
SHIPPED = ("awd-lstm", "elmo", "gpt", "bert")        # checkpoints/<name>-laptop[-5x].pt (minilab/shipped.py)
FINE_TUNE_TASKS = ("trec", "rt")
FINE_TUNE_LABELS = (100, 1000, "all")


@dataclass(frozen=True)
class PaperBudget:
    """A paper's pretraining as it states it: N from its shape (Kaplan's N ≈ 12·n_layer·d_model²), D its tokens."""
    name: str
    n_layer: int
    d_model: int
    tokens: float
    source: str                         # where the paper states the shape and the tokens
    reported_flops: float | None = None  # the paper's own count, where it gives one

    @property
    def params(self) -> int:
        return 12 * self.n_layer * self.d_model ** 2

    @property
    def flops(self) -> float:
        return 6 * self.params * self.tokens


# The book's one ledger of the papers' pretraining scale: every "N× our compute" is read from it (`paper`).
PAPERS = (
    # §4.1: 12 layers, d 768, "100 epochs on minibatches of 64 ... sequences of 512 tokens" over BooksCorpus,
    # 984M words (Zhu et al. 2015, Table 1). The paper gives no token count: one token a word, a lower bound.
    PaperBudget("GPT-1 (estimate)", 12, 768, 100 * 984e6, "Radford et al. 2018 §4.1; Zhu et al. 2015 Table 1"),
    # §3: L=12, H=768; §A.2: 1,000,000 steps of 256 sequences, "sequence length of 128 for 90% of the steps", then 512
    # for the rest: 256 × (0.9 · 128 + 0.1 · 512) = 42,598 tokens a step on average (128,000 is the 512-token batch)
    PaperBudget("BERT-base", 12, 768, 1_000_000 * 256 * (0.9 * 128 + 0.1 * 512), "Devlin et al. 2018, §3 and §A.2"),
    # Table 2.1: 96 layers, d_model 12,288; §2.2: every model trained on 300 billion tokens; Table D.1: 3.14e23 FLOPs
    PaperBudget("GPT-3 175B", 96, 12_288, 300e9, "Brown et al. 2020, Table 2.1, §2.2, Table D.1", 3.14e23),
)


def paper(name: str) -> PaperBudget:
    """The ledger's entry for `name` ("GPT-1 (estimate)", "BERT-base", "GPT-3 175B")."""
    return next(p for p in PAPERS if p.name == name)


def non_embedding_params(model: nn.Module, vocab_size: int) -> int:
    """N of C ≈ 6·N·D: every distinct parameter except embedding tables (tokens, positions, segments, characters)
    and the output layer's rows over the vocabulary (a weight or bias whose first dimension is vocab_size)."""
    embedded = {id(p) for m in model.modules() if isinstance(m, nn.Embedding) for p in m.parameters()}
    return sum(p.numel() for p in model.parameters()
               if id(p) not in embedded and not (p.dim() >= 1 and p.shape[0] == vocab_size))


def pretraining_tokens(meta: dict) -> int:
    """Tokens a shipped model trained on, from its provenance JSON (each kind records them its own way)."""
    metrics = meta.get("metrics", {})
    if "train_tokens_seen" in metrics:                   # gpt, bert
        return int(metrics["train_tokens_seen"])
    if "train_tokens" in metrics:                        # elmo: one epoch (config.epochs) over its stream
        return int(metrics["train_tokens"]) * int(meta.get("config", {}).get("epochs", 1))
    if "train_tokens" in meta.get("data", {}):           # awd-lstm
        return int(meta["data"]["train_tokens"]) * int(meta.get("sizes", {}).get("epochs", 1))
    raise ValueError(f"{meta.get('checkpoint', 'this checkpoint')}: its JSON records no training tokens")


def examples_seen(n: int, epochs: int, batch_size: int, min_steps_per_epoch: int) -> int:
    """Examples a fine-tuning run reads: each epoch repeats a small sample so it takes ≥ min_steps_per_epoch
    steps, as the grid runner does."""
    from minilab.experiments.grid import repeats_per_epoch

    return epochs * repeats_per_epoch(n, batch_size, min_steps_per_epoch) * n


def shipped_models(profile: str = "laptop") -> dict[str, dict]:
    """{name: {params, tokens, flops, vocab_size}} for each shipped checkpoint of the profile that exists."""
    from minilib.models.pretrained import load_pretrained

    out = {}
    for name in SHIPPED:
        path = CHECKPOINTS / shipped.checkpoint(name, profile).name      # the recipe run, or its shipped branch
        if not path.is_file():
            continue
        model, vocab, _ = load_pretrained(path)
        meta = json.loads(path.with_suffix(".json").read_text())
        vocab_size = vocab.vocab_size if hasattr(vocab, "vocab_size") else len(vocab)
        n, d = non_embedding_params(model, vocab_size), pretraining_tokens(meta)
        out[name] = {"params": n, "tokens": d, "flops": 6 * n * d, "seconds": _seconds(meta)}
    return out


def _seconds(meta: dict) -> float | None:
    return meta.get("metrics", {}).get("seconds") or meta.get("train_seconds")


# each fine-tuned family: its method, its config, its tokenizer, and the markers its input adds to a text
FINE_TUNED = {"gpt": ("minilab.experiments.gpt_finetune", "gpt", "bpe", 2),          # start · text · extract
              "bert": ("minilab.experiments.bert_finetune", "bert", "wordpiece", 2)}  # [CLS] text [SEP]


def fine_tuning(model: str, profile: str, tasks_=FINE_TUNE_TASKS, labels=FINE_TUNE_LABELS) -> list[dict]:
    """Examples and tokens of one grid point of `model`'s fine-tuning method (gpt, bert) per task and label
    count, with the recipe the grid runs (its FINE_TUNING), each text cut to the context as the classifier cuts it."""
    import importlib

    from minilib import tasks
    from minilib.data.tokenizer import pretrained_tokenizer
    from minilab.experiments import grid

    module, method, tokenizer, markers = FINE_TUNED[model]
    config = importlib.import_module(module).method_config(method, profile)
    tok = pretrained_tokenizer(tokenizer, "laptop" if profile == "smoke" else profile)
    rows = []
    for name in tasks_:
        task = tasks.get(name)
        lengths = [min(len(tok.encode(t)) + markers, 128) for t in task.train.texts]
        mean_len = sum(lengths) / len(lengths)
        for n in labels:
            n_labels = grid.label_count(n, len(task.train))
            seen = examples_seen(n_labels, config.epochs, config.batch_size, config.min_steps_per_epoch)
            rows.append({"task": name, "labels": n, "n_labels": n_labels, "examples": seen,
                         "tokens": round(seen * mean_len), "epochs": config.epochs})
    return rows


def run(profile: str | None = None, write: bool = True, log=print) -> dict:
    prof = profile or runtime.profile()
    shipped = shipped_models("laptop" if prof == "smoke" else prof)
    result = {"experiment": "compute", "profile": prof, "formula": "C = 6·N·D (Kaplan et al. 2020 §2.1)",
              "pretraining": shipped,
              "fine_tuning": {}, "papers": [{"name": p.name, "params": p.params, "tokens": p.tokens, "flops": p.flops,
                                             "reported_flops": p.reported_flops, "source": p.source} for p in PAPERS]}
    for model in FINE_TUNED:
        if model not in shipped:
            continue
        n = shipped[model]["params"]   # the classifier's linear head adds n_embd·classes: < 0.1 % of N
        rows = fine_tuning(model, prof)
        for r in rows:
            r["flops"] = 6 * n * r["tokens"]
            r["pretraining_multiple"] = shipped[model]["flops"] / r["flops"]
        result["fine_tuning"][model] = rows
    if log:
        for name, r in result["pretraining"].items():
            log(f"{name}: N={r['params']:,} non-embedding parameters, D={r['tokens']:,} tokens, C={r['flops']:.2e} FLOPs")
        for model, rows in result["fine_tuning"].items():
            for r in rows:
                log(f"{model} fine-tuned on {r['task']} with {r['labels']} labels: {r['examples']:,} examples, "
                    f"{r['tokens']:,} tokens, C={r['flops']:.2e} FLOPs = pretraining / {r['pretraining_multiple']:,.0f}")
        for p in result["papers"]:
            log(f"{p['name']}: N={p['params']:.3g}, D={p['tokens']:.3g}, C={p['flops']:.2e} FLOPs ({p['source']})")
    result["provenance"] = provenance.stamp()
    if write:   # the same numbers again (all of them are read from checkpoints and cached points): left as it is
        result = store.save(RESULT, prof, result)
    return result


def cached_result(profile: str | None = None) -> dict | None:
    """results/compute-<profile>.json, or None before `experiment compute` has run."""
    return store.load(RESULT, profile)


def summary_line(result: dict) -> str:
    parts = [f"{name}_pretrain_flops={r['flops']:.3g}" for name, r in result["pretraining"].items()]
    for model, rows in result["fine_tuning"].items():
        parts += [f"{model}_{r['task']}_n100_flops={r['flops']:.3g}" for r in rows if r["labels"] == 100]
    gpt = result["pretraining"].get("gpt")
    if gpt:
        parts += [f"{p['name'].split()[0].lower()}_over_gpt={p['flops'] / gpt['flops']:.3g}" for p in result["papers"]]
    return "compute: " + " ".join(parts)


def cli_run(args, name: str) -> int:
    print(summary_line(run(args.profile)))
    return 0
