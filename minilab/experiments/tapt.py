"""The in-domain stage for GPT and BERT: `gpt-tapt` and `bert-tapt` in the grid runner (chapters 06-07).

ULMFiT's stage (b) fine-tunes its language model on the task's own text before the classifier (chapter 04);
Gururangan et al. 2020 (§5, "task-adaptive pretraining") show the same step lifts RoBERTa on small tasks. Here
the pretrained GPT (or BERT) continues its own objective on the task's unlabelled text for `steps` batches
(recipes/gpt.adapt_lm, recipes/bert.adapt_lm), and the method then fine-tunes exactly as `gpt` (`bert`) does.
The text is the task's unlabelled in-domain text where it has one (`Task.lm_text`, what ULMFiT's stage (b)
reads: rt's movie sentences), else its training texts; never its test split. The adapted model is built once
per (checkpoint, task, settings), cached in .cache/tapt/, and shared by every seed and label count.
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

from minilib import runtime, tasks
from minilab import provenance

CACHE_DIR = provenance.REPO_ROOT / ".cache" / "tapt"
# steps of 16 x 128 tokens: at laptop 0.8M tokens, a tenth of the pretraining run, ~10 CPU-minutes; the LR a
# quarter of pretraining's peak (1e-3), as Gururangan et al. (Table 13: 1e-4) stay below RoBERTa's 6e-4.
SETTINGS = {"smoke": {"steps": 8, "lr": 2.5e-4}, "laptop": {"steps": 400, "lr": 2.5e-4},
            "full": {"steps": 2_000, "lr": 1e-4}}


def task_text(task: tasks.Task) -> list[str]:
    """The task's unlabelled in-domain text: `lm_text()` where it has one, else its training texts (a token
    task's words joined)."""
    if task.lm_text is not None:
        return list(task.lm_text())
    return [" ".join(t) if isinstance(t, (list, tuple)) else str(t) for t in task.train.texts]


def adapted_checkpoint(task: tasks.Task, checkpoint: str | Path, settings: dict) -> Path:
    """`checkpoint` (a gpt or bert) after the in-domain stage on `task`'s text, written once to .cache/tapt/
    under a key of the checkpoint's sha256, the task's fingerprint and `settings`."""
    from minilib.models.pretrained import file_sha256, kind_of, load_pretrained, save_pretrained

    made_of = {"from_checkpoint_sha256": file_sha256(checkpoint), "task": task.name,
               "task_sha256": task.fingerprint, "tapt": settings}
    key = hashlib.sha256(json.dumps(made_of, sort_keys=True).encode()).hexdigest()[:12]
    out = CACHE_DIR / f"{Path(checkpoint).stem}-{task.name}-tapt-{key}.pt"
    if out.is_file():
        return out
    pre = load_pretrained(checkpoint)
    if kind_of(pre.model) == "gpt":
        from minilib.recipes.gpt import adapt_lm
    else:
        from minilib.recipes.bert import adapt_lm
    runtime.seed_everything(0)
    adapt_lm(pre.model, task_text(task), pre.vocab, settings["steps"], settings["lr"])
    save_pretrained(out, pre.model, pre.vocab, {**made_of, "from_checkpoint": Path(checkpoint).name})
    return out


def with_stage(settings: dict, profile: str) -> dict:
    """A method's grid settings with the in-domain stage's added (they join the key: gpt-tapt, bert-tapt)."""
    return {**settings, "tapt": runtime.pick(SETTINGS, profile)}


def apply_stage(task: tasks.Task, checkpoint, settings: dict) -> tuple[Path, dict]:
    """(the checkpoint a point fine-tunes, its fine-tuning settings): the adapted checkpoint and the settings without
    the stage's where `settings` carry one, else both as given."""
    if "tapt" not in settings:
        return checkpoint, settings
    settings = dict(settings)
    return adapted_checkpoint(task, checkpoint, settings.pop("tapt")), settings
