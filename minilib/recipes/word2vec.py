"""Training word2vec's skip-gram with negative sampling (Mikolov et al. 2013): two loops on one
model, the shared Learner (progress, history, schedules) and a Hogwild loop (lock-free worker
threads, as the original C code and gensim train). The model is minilib/models/word2vec.py."""
from __future__ import annotations

import functools
import time
from dataclasses import dataclass
from typing import Sequence

import torch

from minilib.data.skipgram import Word2VecBatches, prepare_corpus
from minilib.data.vectors import WordVectors
from minilib.models.word2vec import ENGINES, Word2Vec, Word2VecConfig
from minilib.runtime import one_thread_per_op


# -- training -----------------------------------------------------------------
@dataclass
class Word2VecResult:
    vectors: WordVectors           # the trained word vectors (input vectors), most frequent word first
    model: Word2Vec                # both embedding tables, to continue training or inspect
    history: object                # minilib.train.History: loss and lr per step, one row per epoch
    train_seconds: float           # wall time of the training epochs (batches drawn + steps)
    raw_words: int                 # corpus words per epoch, out-of-vocabulary ones included
    epochs: int

    @property
    def words_per_second(self) -> float:
        """Corpus words processed per second of training (raw words, as gensim counts them)."""
        return self.raw_words * self.epochs / max(self.train_seconds, 1e-9)


def train_word2vec(token_ids: Sequence, counts=None, config: Word2VecConfig | None = None, *,
                   words: Sequence[str] | None = None, device=None, progress: bool | str = True,
                   engine: str = "auto", threads: int | None = None) -> Word2VecResult:
    """Train word2vec on sentences of token ids; return the vectors, the model and the history.

    token_ids: list of int arrays (one per sentence or document); counts/words describe the ids
    (see `prepare_corpus`). The learning rate starts at config.start_lr and decays linearly to
    1e-4 of it over all steps (word2vec.c), with plain SGD on the sparse rows a batch touches.

    engine: 'learner' trains through minilib.train.Learner (autograd, sparse gradients, torch SGD);
    'hogwild' runs `Word2Vec.sgd_step` in `threads` worker threads that share the tables without
    locks, as word2vec.c's threads do (Recht et al. 2011, "Hogwild!"), with the same progress
    display, schedule and History; 'compiled' runs word2vec.c's pair-by-pair step
    (models/word2vec_compiled.py) in those workers, skip-gram on a CPU only. 'auto' = compiled
    where it can run, else hogwild: the fastest (see bench/word2vec.py).
    """
    from minilib import runtime
    from minilib.models import word2vec_compiled

    if engine not in ENGINES:
        raise ValueError(f"engine={engine!r}: use one of {', '.join(ENGINES)}")
    config = config or Word2VecConfig()
    dev = runtime.device(str(device) if device is not None else None)
    compiled_fits = dev.type == "cpu" and not config.cbow and word2vec_compiled.available()
    if engine == "auto":
        engine = "compiled" if compiled_fits else "hogwild"
    if engine == "compiled" and not compiled_fits:
        raise ValueError("engine='compiled' trains skip-gram on a CPU with numba installed: use engine='hogwild'")
    if engine == "compiled":
        word2vec_compiled.warm_up()   # compiling (or loading numba's cache) is not training time
    corpus = prepare_corpus(token_ids, counts, words, config.min_count)
    batches = Word2VecBatches(corpus, config, device=dev)
    model = Word2Vec(len(corpus.words), config.dim, cbow=config.cbow, pairs_per_step=batches.batch_size,
                     seed=config.seed).to(dev)
    if engine == "learner":
        history = fit_with_learner(model, batches, config, progress=progress)
    else:
        history = fit_hogwild(model, batches, config, progress=progress, threads=threads,
                              compiled=engine == "compiled")
    seconds = sum(row["time"] for row in history.epochs)  # the epochs only, as both engines time them
    return Word2VecResult(vectors=model.word_vectors(corpus.words, corpus.counts), model=model, history=history,
                          train_seconds=seconds, raw_words=corpus.raw_words, epochs=config.epochs)


def fit_with_learner(model: Word2Vec, batches: Word2VecBatches, config: Word2VecConfig, progress=True):
    """Train through minilib's Learner: `model(**batch)` -> loss, autograd, torch SGD on sparse gradients.

    One process thread, so on CPU it is slower than fit_hogwild (autograd builds sparse
    gradient tensors, and one worker instead of one per core: measured ~2-4x), but it is
    the same loss, schedule and update (tests/test_word2vec.py checks sgd_step against it).
    """
    from minilib.train import Learner

    learner = Learner(model, batches, loss_fn=None, opt=lambda groups: PairSGD(groups, model.pairs_per_step),
                      weight_decay=0.0, clip=None, device=batches.device, progress=progress)
    with one_thread_per_op(batches.device):   # "linear": down to 1e-4 of lr, as word2vec.c
        return learner.fit(config.epochs, lr=config.start_lr, schedule="linear")


class PairSGD(torch.optim.Optimizer):
    """Plain SGD (sparse gradients welcome) whose lr is a step per positive pair, as in word2vec.c.

    Word2Vec's loss is the pairs' sum divided by pairs_per_step (a readable per-pair mean),
    so this steps lr * pairs_per_step along its gradient: lr along each pair's own gradient.
    """

    def __init__(self, params, pairs_per_step: int, lr: float = 0.025):
        super().__init__(params, {"lr": lr})
        self.pairs_per_step = pairs_per_step

    @torch.no_grad()
    def step(self, closure=None):
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is not None:
                    p.add_(p.grad, alpha=-group["lr"] * self.pairs_per_step)


def fit_hogwild(model: Word2Vec, batches: Word2VecBatches, config: Word2VecConfig, progress=True,
                threads: int | None = None, compiled: bool = False):
    """Train with `Word2Vec.sgd_step` in worker threads sharing the tables (Hogwild), like word2vec.c;
    `compiled`: with word2vec.c's pair-by-pair step instead (models/word2vec_compiled.py).

    Each worker takes the next batch, the learning rate for its step number, and updates the
    tables in place; torch ops release the GIL, so threads overlap. Each torch op runs on one
    core (see one_thread_per_op): independent workers, like gensim's, slow down in proportion
    when another job takes a core, where 2-thread ops stall. On CUDA one worker feeds the GPU.
    Returns a minilib History (loss and lr per step, one row per epoch) shown with the
    same progress display as the Learner.
    """
    import threading

    from minilib.models import word2vec_compiled
    from minilib.train.history import History
    from minilib.train.progress import make_progress
    from minilib.train.schedules import linear_decay

    step = functools.partial(word2vec_compiled.sgd_step, model) if compiled else model.sgd_step
    cuda = batches.device.type != "cpu"
    n_workers = 1 if cuda else (threads or torch.get_num_threads())
    history, bar = History(), make_progress(progress)
    n, epochs = len(batches), config.epochs
    total, lr0 = n * epochs, config.start_lr
    lock, stop = threading.Lock(), threading.Event()
    errors: list[BaseException] = []
    scratches = [{} for _ in range(n_workers)]   # each worker's buffers, kept across epochs
    bar.start(epochs, n, 0, 0)
    with one_thread_per_op(batches.device):
        for epoch in range(epochs):
            bar.begin_epoch(epoch, 0)
            t0, rows = time.perf_counter(), []
            stream = enumerate(iter(batches))

            def worker(scratch: dict):
                try:
                    while not stop.is_set():
                        with lock:  # one thread at a time draws the next batch
                            i, batch = next(stream, (None, None))
                        if batch is None:
                            return
                        lr = lr0 * linear_decay(epoch * n + i, total, floor=config.min_lr_ratio)
                        loss = float(step(batch, lr, scratch))
                        pairs = model.positives(batch)
                        rows.append({"step": epoch * n + i + 1, "epoch": epoch, "loss": loss / max(pairs, 1),
                                     "lr": [lr], "pairs": pairs})   # list.append is atomic
                except BaseException as exc:  # noqa: BLE001 - handed to the main thread
                    errors.append(exc)
                    stop.set()

            workers = [threading.Thread(target=worker, args=(scratch,), daemon=True) for scratch in scratches]
            for w in workers:
                w.start()
            shown = [0]

            def show_new_rows():  # progress is drawn from this (the main) thread only
                while shown[0] < len(rows):
                    row = rows[shown[0]]
                    shown[0] += 1
                    bar.step(epoch, shown[0], row["loss"], row["lr"], row.pop("pairs"), "pairs")

            try:
                while any(w.is_alive() for w in workers):
                    for w in workers:
                        w.join(0.2 / n_workers)   # short waits: Ctrl-C and progress stay responsive
                    show_new_rows()
                show_new_rows()
            except KeyboardInterrupt:
                stop.set()
                for w in workers:
                    w.join()
                raise
            if errors:
                raise errors[0]
            for row in rows:
                row.pop("pairs", None)
            rows.sort(key=lambda r: r["step"])
            history.steps.extend(rows)
            pairs_loss = [r["loss"] for r in rows]
            row = {"epoch": epoch, "step": (epoch + 1) * n, "train_loss": sum(pairs_loss) / max(len(pairs_loss), 1),
                   "time": time.perf_counter() - t0}
            history.epochs.append(row)
            bar.end_epoch(epoch, row)
        bar.end(False)
    return history
