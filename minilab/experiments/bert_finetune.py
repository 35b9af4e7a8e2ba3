"""Chapter 07's fine-tuning experiments: BERT (Devlin et al. 2018, §4) and its Table 5 ablations on the shared
tasks, through the one grid runner. Each ablation was pretrained with the same compute (recipes/bert.py).

    bert          checkpoints/bert-<profile>.pt: masked LM + next sentence prediction; BERTClassifier reads the
                  pooled [CLS], BERTTagger each word's first piece
    bert-mlm      the "No NSP" twin (bert-mlm-<profile>.pt): the masked LM alone
    bert-ltr      the "LTR & No NSP" twin (bert-ltr-<profile>.pt): a left-to-right LM, causal when fine-tuned
                  too (§5.1), so it reads the last [SEP] / each word's last piece
    bert-scratch  BERT's network from random weights (no pretraining), its own recipe

    from minilab.experiments import grid
    rows = grid.run_grid("pos", ["bert-ltr", "bert-mlm", "bert"], [100, 1000], seeds=[0, 1, 2])

Fine-tuning settings are the paper's search space (§A.3: LR {5e-5, 3e-5, 2e-5}, epochs {2, 3, 4}, batch
{16, 32}) plus what a model this small may want, searched on validation tasks carved from the training labels
(`experiment bert-recipe`), never the test split; the ablations take BERT's recipe, as Table 5's do.
Small samples are repeated within an epoch so each epoch takes at least `min_steps_per_epoch` steps.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from minilib import runtime, tasks
from minilab import provenance
from minilab.experiments import grid, store
from minilab.experiments.gpt_finetune import fine_tune_point


@dataclass(frozen=True)
class BERTFineTuneConfig:
    lr: float = 5e-5                  # §A.3: {5e-5, 3e-5, 2e-5}
    epochs: int = 3                   # §A.3: {2, 3, 4}
    batch_size: int = 32              # §A.3: {16, 32}
    warmup: float = 0.1               # the released run_classifier.py: warm-up over 10 %, then linear decay
    pretrained: bool = True           # False: the same network from random init (bert-scratch)
    min_steps_per_epoch: int = 20     # small samples are repeated so an epoch takes at least this many steps
    max_test: int | None = None       # score a fixed stratified subset of the test split (smoke)


SIZES = {"smoke": BERTFineTuneConfig(epochs=1, batch_size=16, min_steps_per_epoch=4, max_test=200),
         "laptop": BERTFineTuneConfig(),
         "full": BERTFineTuneConfig()}
# The encoders the chapter fine-tunes, per profile: None is the profile's own shape (checkpoints/bert-<profile>.pt);
# (layers, width) those `pretrain bert --shape LxW` made with the same compute (bert-<profile>-LxW.pt).
SHAPE: dict[str, tuple[int, int] | None] = {"laptop": None, "full": None}
OBJECTIVE = {"bert": "mlm+nsp", "bert-mlm": "mlm", "bert-ltr": "ltr", "bert-scratch": "mlm+nsp", "bert-tapt": "mlm+nsp"}
METHODS = {"bert": {}, "bert-mlm": {}, "bert-ltr": {}, "bert-scratch": {"pretrained": False}, "bert-tapt": {}}
LABELS = {"bert": "BERT (MLM + NSP)", "bert-mlm": "BERT without NSP", "bert-ltr": "left-to-right twin",
          "bert-scratch": "BERT from scratch", "bert-tapt": "BERT + in-domain MLM stage"}
TAPT_METHODS = ("bert-tapt",)   # bert after the in-domain stage (experiments/tapt.py): its settings join the key
ABLATIONS = ("bert", "bert-mlm", "bert-ltr")           # Table 5's rows, in its order
ABLATION_TASKS = ("pos", "trec", "rt")
ABLATION_LABELS = {"smoke": (20,), "laptop": (100, 1000), "full": (100, 1000)}

# §A.3's grid, then what a 4-layer model fine-tuned on 100 labels may want (chapter 06 found GPT's paper LR too
# small for it): every method trains under each on the task's validation task; the real test split is never read.
CANDIDATES: dict[str, dict[str, Any]] = {
    f"LR {lr}, {epochs} epochs, batch {batch}": {"lr": float(lr), "epochs": epochs, "batch_size": batch}
    for lr in ("5e-5", "3e-5", "2e-5") for epochs in (2, 3, 4) for batch in (16, 32)}
CANDIDATES.update({"LR 1e-4, 4 epochs, batch 16": {"lr": 1e-4, "epochs": 4, "batch_size": 16},
                   "LR 2.5e-4, 10 epochs, batch 32": {"lr": 2.5e-4, "epochs": 10, "batch_size": 32},   # GPT's choice
                   "LR 1e-3, 10 epochs, batch 32": {"lr": 1e-3, "epochs": 10, "batch_size": 32}})     # for scratch
# What `experiment bert-recipe` chose (chosen_recipe) on trec's and rt's validation tasks at 100 labels
# (results/bert-recipe/): for bert, on trec every §A.3 candidate stayed near the majority guess and the largest LR
# won on both; bert-scratch was searched over the paper's default and the three larger-LR candidates only
# (`--candidates`): at LR 5e-5 it stays at the majority class, 1e-3 wins averaged over both tasks. The
# ablations take bert's, as Table 5's do. Smoke keeps the paper's: it checks plumbing.
FINE_TUNING: dict[str, str | None] = {"bert": "LR 1e-3, 10 epochs, batch 32", "bert-scratch": "LR 1e-3, 10 epochs, batch 32"}
FINE_TUNING["bert-mlm"] = FINE_TUNING["bert-ltr"] = FINE_TUNING["bert-tapt"] = FINE_TUNING["bert"]
RECIPE_METHODS = ("bert-scratch", "bert")
RECIPE_TASKS = ("trec", "rt")
SEARCH_LABELS = {"smoke": (20,), "laptop": (100, 1000), "full": (100, grid.ALL)}
SEARCH_FOLDER = store.folder("bert-recipe")


def paper_config(method: str, profile: str) -> BERTFineTuneConfig:
    """The method under the paper's default fine-tuning settings (the profile's sizes)."""
    return replace(SIZES[profile], **METHODS[method])


def method_config(method: str, profile: str) -> BERTFineTuneConfig:
    """The method as the grid runs it: the paper's settings with the candidate chosen for it."""
    config, chosen = paper_config(method, profile), FINE_TUNING[method]
    return config if profile == "smoke" or chosen is None else replace(config, **CANDIDATES[chosen])


def default_checkpoint(method: str, profile: str | None = None, shape: tuple[int, int] | None = None) -> Path:
    """The method's pretrained checkpoint of `shape` (default: the chapter's SHAPE, where the model's shipped
    branch replaces its recipe run once it has moved, minilab/shipped.py; bert-scratch: BERT's recipe run, for its
    tokenizer and shape); smoke fine-tunes the laptop ones."""
    from minilab import shipped
    from minilib.recipes.bert import default_out

    profile = profile or runtime.profile()
    pretrained = "laptop" if profile == "smoke" else profile
    path = default_out(pretrained, OBJECTIVE[method], shape or SHAPE[pretrained])
    if (shape or SHAPE[pretrained]) is None and METHODS[method].get("pretrained", True):
        return shipped.checkpoint(path.stem.removesuffix(f"-{pretrained}"), pretrained)
    return path


def word_pieces(tok, words: list[str]) -> list[list[int]]:
    """Each word's WordPiece ids ([UNK] for a word the normaliser empties, so every tag keeps its word)."""
    return [tok.encode(w) or [tok.unk_id] for w in words]


def train_bert_classifier(task: tasks.Task, idx, seed: int, settings: dict, checkpoint, *, progress=False,
                          callbacks=(), valid_curve: bool = False, **_) -> dict[str, Any]:
    """One point: BERTClassifier (BERTTagger for a token task) on task.train[idx], scored once on task.test.
    The checkpoint gives the tokenizer and the architecture (and, when pretrained, the weights)."""
    from minilib.models.bert import BERT, BERTClassifier, BERTTagger
    from minilib.models.pretrained import load_pretrained
    from minilib.recipes.bert import fine_tune_bert

    from minilab.experiments.tapt import apply_stage

    checkpoint, settings = apply_stage(task, checkpoint, settings)   # bert-tapt: the in-domain stage first
    config = BERTFineTuneConfig(**settings)
    pre = load_pretrained(checkpoint, "bert")
    tok = pre.vocab
    runtime.seed_everything(seed)
    bert = pre.model if config.pretrained else BERT(pre.model.cfg)
    model = (BERTTagger if task.kind == "token" else BERTClassifier)(bert.train(), task.n_classes, tok.cls_id,
                                                                      tok.sep_id)
    fit = lambda train, valid, score: fine_tune_bert(model, train, config.epochs, config.lr, config.warmup,
                                                     valid=valid, score=score, callbacks=callbacks, progress=progress)
    result = fine_tune_point(task, idx, seed, config, model, tok, lambda words: word_pieces(tok, words), fit,
                             valid_curve)
    return {**result, "pretrained": provenance.shown_path(checkpoint) if config.pretrained else None,
            "objective": pre.model.cfg.objective}


def method_settings(method: str, profile: str) -> dict[str, Any]:
    """What defines the method in the grid's key: its fine-tuning config, and for bert-tapt the in-domain stage's."""
    from minilab.experiments.tapt import with_stage

    settings = asdict(method_config(method, profile))
    return with_stage(settings, profile) if method in TAPT_METHODS else settings


for _name in METHODS:
    grid.register(grid.Method(_name, "bert", train_bert_classifier,
                              lambda prof, _name=_name: method_settings(_name, prof),
                              checkpoint=lambda prof, _name=_name: default_checkpoint(_name, prof),
                              kinds=("sentence", "pair", "token"), label=LABELS[_name]))


# ----------------------------------------------------------------------------- choosing the recipe

def search(task: str, methods=RECIPE_METHODS, seed: int = 0, label_counts=None, cached_only: bool = False,
           profile: str | None = None, log=print, candidates: dict[str, dict[str, Any]] | None = None, *,
           checkpoint: str | Path | None = None, results_dir: str | Path | None = None) -> list[dict[str, Any]]:
    """Every (label count, method, candidate) point on `task`'s validation task (grid.search_recipes);
    `candidates`: some of CANDIDATES (default: all); `checkpoint`, `results_dir`: another encoder, searched in
    another folder than SEARCH_FOLDER."""
    prof = profile or runtime.profile()
    return grid.search_recipes(task, methods, candidates or CANDIDATES, lambda m, p: asdict(paper_config(m, p)),
                               results_dir or SEARCH_FOLDER, label_counts or SEARCH_LABELS[prof], seed, cached_only,
                               prof, log, checkpoint=checkpoint)


def chosen_recipe(profile: str | None = None, **where) -> dict[str, str]:
    """grid.best_recipe over the cached search of every task in RECIPE_TASKS (what FINE_TUNING should say);
    `where`: search()'s checkpoint and results_dir."""
    return grid.best_recipe([r for t in RECIPE_TASKS for r in search(t, cached_only=True, profile=profile, **where)])


# ----------------------------------------------------------------------------- the ablations (Table 5)

def ablation_table(rows) -> list[dict[str, Any]]:
    """grid.summarize's rows of the ablation methods, as accuracies: [{"task", "method", "n_labels",
    "accuracy", "accuracy_std", "seeds"}] (the sample std over seeds, ddof 1: eval/stats.py)."""
    return [{"task": r["task"], "method": r["method"], "n_labels": r["n_labels"], "accuracy": 1 - r["error"],
             "accuracy_std": r["error_std"], "seeds": r["seeds"]}
            for r in grid.summarize(rows, ddof=1) if r["method"] in ABLATIONS]


def ablation_rows(task, label_counts, seeds, shape: tuple[int, int] | None = None, *, methods=ABLATIONS,
                  checkpoint: str | Path | None = None, cached_only: bool = False, profile: str | None = None,
                  results_dir: str | Path | None = None, log=print) -> list[dict]:
    """Table 5's points on `task`, each ablation fine-tuned from its encoder of `shape` (None: the chapter's;
    `checkpoint` replaces it, e.g. an encoder pretrained with another --mask-prob). Another shape's points are
    cached apart, in results/bert-<L>x<W>/ (`results_dir` replaces either folder). With cached_only, only what
    is cached; nothing trains."""
    prof = profile or runtime.profile()
    folder = results_dir or (store.folder(f"bert-{shape[0]}x{shape[1]}") if shape else None)
    rows = []
    for m in methods:
        where = dict(checkpoint=checkpoint or default_checkpoint(m, prof, shape), results_dir=folder)
        rows += (grid.cached_rows(task, [m], label_counts, seeds, prof, **where) if cached_only
                 else grid.run_grid(task, [m], label_counts, seeds, log=log, **where))
    return rows


def ablation_line(table) -> str:
    """`pos_mlm_nsp=… pos_mlm=… pos_ltr=… trec_… rt_…`: mean accuracies of a table at one label count."""
    key = {"bert": "mlm_nsp", "bert-mlm": "mlm", "bert-ltr": "ltr"}
    at = {(r["task"], r["method"]): r["accuracy"] for r in table}
    return " ".join(f"{t}_{key[m]}={at[t, m]:.3f}" for t in ABLATION_TASKS for m in ABLATIONS if (t, m) in at)


# ----------------------------------------------------------------------------- the command line

def cli_run(args, name: str) -> int:
    prof = runtime.profile()
    if name == "bert-recipe":
        task = tasks.from_args(args)
        rows = search(task, [m.strip() for m in args.methods.split(",")],
                      label_counts=grid.parse_labels(args.labels) if args.labels else None,
                      candidates=grid.some_candidates(CANDIDATES, args.candidates) if args.candidates else None,
                      **grid.search_place(args))
        print(f"{name}: {task.name} " + " ".join(f"{m}={grid.slug(c)}" for m, c in grid.best_recipe(rows).items()))
        return 0
    if args.seeds < 1:
        raise runtime.UsageError(f"--seeds {args.seeds}: use 1 or more")
    from minilib.recipes.bert import parse_shape

    labels = grid.parse_labels(args.labels) if args.labels else list(ABLATION_LABELS[prof])
    shape = parse_shape(args.shape) if args.shape else None
    methods = [m.strip() for m in args.methods.split(",")]
    if unknown := [m for m in methods if m not in ABLATIONS]:
        raise runtime.UsageError(f"--methods {','.join(unknown)}: use some of {','.join(ABLATIONS)}")
    if args.checkpoint and len(methods) != 1:
        raise runtime.UsageError("--checkpoint replaces one method's encoder: give one of --methods with it")
    if args.checkpoint and args.results_dir is None:
        raise runtime.UsageError("--checkpoint: give --results-dir too, so its points are cached apart from the grid's")
    for m in methods if shape and not args.checkpoint else ():
        if not default_checkpoint(m, prof, shape).is_file():
            raise runtime.UsageError(f"no {default_checkpoint(m, prof, shape).name}: pretrain it first (python -m "
                                     f"minilib pretrain bert --objective {OBJECTIVE[m]} --shape {args.shape})")
    rows = [row for t in args.tasks.split(",")
            for row in ablation_rows(t.strip(), labels, list(range(args.seeds)), shape, methods=methods,
                                     checkpoint=args.checkpoint, results_dir=args.results_dir)]
    first = [r for r in rows if r["labels"] == labels[0]]                     # the line: the first label count
    print(f"{name}: labels={labels[0]} " + ablation_line(ablation_table(first)))
    return 0
