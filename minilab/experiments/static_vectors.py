"""Chapter 01's experiment: static word vectors from the same text, measured the same way.

    from minilab.experiments import static_vectors as sv
    config = sv.SIZES[runtime.profile()]
    models = sv.train_all(config)                 # PPMI-SVD, SGNS (minilib), SGNS (gensim), GloVe 6B 50d
    table = sv.evaluate_all(models)               # WordSim-353, SimLex-999, Google analogies
    sv.save_results(table, config)                # results/static-vectors-<profile>.json, stamped

Every model sees the same sentences (the first `config.words` words of the
pretraining corpus's train split) and keeps the same vocabulary (words seen
`min_count` times); GloVe is the outside reference, trained by its authors
on 6 billion tokens.
"""
from __future__ import annotations

import time
import zlib
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from minilib import data, runtime
from minilab import provenance
from minilib.data.vectors import WordVectors
from minilib.eval.similarity import analogy, similarity_spearman
from minilab.experiments import store
from minilib.models.ppmi import PPMIConfig, train_ppmi
from minilib.models.word2vec import Word2VecConfig
from minilib.recipes.word2vec import train_word2vec

RESULT = store.register("static-vectors", "config")      # results/static-vectors-<profile>.json


@dataclass(frozen=True)
class StaticVectorsConfig:
    words: int | None    # training words from the pretraining corpus (None: all ~6.3M)
    epochs: int = 5      # word2vec passes (word2vec.c default)
    dim: int = 100       # vector size for every model we train
    window: int = 5      # context distance for SGNS and for PPMI's co-occurrence counts
    negative: int = 5    # SGNS noise words per pair (Mikolov et al. 2013b §2.2)
    sample: float = 1e-3  # SGNS subsampling threshold (word2vec.c default)
    min_count: int = 5   # words seen fewer times are left out of every vocabulary
    gensim: bool = True  # also train gensim's Word2Vec, the reference implementation
    seed: int = 0


SIZES = {
    "smoke": StaticVectorsConfig(words=300_000, epochs=1, dim=50),
    "laptop": StaticVectorsConfig(words=4_000_000, epochs=3),
    "full": StaticVectorsConfig(words=None, epochs=10, dim=300),
}


def corpus_sentences(max_words: int | None) -> list[list[str]]:
    """The first `max_words` words of the pretraining corpus (train split), one token list per line."""
    docs = data.pretraining_corpus("train", max_words=max_words)
    return [tokens for doc in docs for line in doc.text.split("\n") if (tokens := data.tokenize(line))]


def _stable_hash(text: str) -> int:
    """gensim seeds each word's initial vector with hash(word + seed); Python's str hash changes from process to
    process (PYTHONHASHSEED), crc32 does not."""
    return zlib.crc32(text.encode("utf-8"))


def train_gensim(sentences: list[list[str]], config: StaticVectorsConfig, lr: float = 0.025,
                 workers: int = 1) -> tuple[WordVectors, float, float]:
    """gensim's skip-gram with the same settings; returns the vectors and the wall and CPU seconds of training.

    One worker thread and a stable word hash make a run repeatable (gensim's own advice: threads interleave
    their updates in an order the OS picks), so re-running the lesson gives the same scores and leaves
    its results file as it was. The vocabulary is built outside the timer, as minilib's is, so both time only
    the passes.
    """
    try:
        from gensim.models import Word2Vec as GensimWord2Vec
    except ImportError as exc:
        raise ImportError("gensim is the reference implementation, a dev dependency: pip install -e .[dev]") from exc
    model = GensimWord2Vec(sg=1, hs=0, negative=config.negative, window=config.window, vector_size=config.dim,
                           min_count=config.min_count, sample=config.sample, alpha=lr, min_alpha=lr * 1e-4,
                           epochs=config.epochs, workers=workers, seed=config.seed, hashfxn=_stable_hash)
    model.build_vocab(sentences)
    start, cpu_start = time.perf_counter(), time.process_time()
    model.train(sentences, total_examples=len(sentences), epochs=config.epochs)
    return WordVectors.from_gensim(model.wv), time.perf_counter() - start, time.process_time() - cpu_start


def train_all(config: StaticVectorsConfig, progress: bool = True) -> dict[str, dict]:
    """Train every model on the same sentences: name -> {"vectors", "seconds", ...}."""
    sentences = corpus_sentences(config.words)
    vocab = data.Vocab.build(sentences, min_count=1, specials=())
    token_ids = [np.asarray(vocab.encode(s), dtype=np.int64) for s in sentences]
    n_words = sum(len(s) for s in sentences)
    models: dict[str, dict] = {}

    start = time.perf_counter()
    ppmi = train_ppmi(token_ids, vocab.counts, PPMIConfig(dim=config.dim, window=config.window,
                                                          min_count=config.min_count, seed=config.seed),
                      words=vocab.itos)
    models["PPMI-SVD (minilib)"] = {"vectors": ppmi, "seconds": time.perf_counter() - start, "passes": 1}

    w2v = Word2VecConfig(dim=config.dim, window=config.window, negative=config.negative, sample=config.sample,
                         min_count=config.min_count, epochs=config.epochs, seed=config.seed)
    sgns = train_word2vec(token_ids, vocab.counts, w2v, words=vocab.itos, progress=progress)
    models["SGNS (minilib)"] = {"vectors": sgns.vectors, "seconds": sgns.train_seconds, "passes": config.epochs,
                                "history": sgns.history}

    if config.gensim:
        vectors, seconds, _ = train_gensim(sentences, config)
        models["SGNS (gensim)"] = {"vectors": vectors, "seconds": seconds, "passes": config.epochs}

    words, matrix = data.glove50()
    models["GloVe 6B 50d (Stanford)"] = {"vectors": WordVectors(words, matrix), "seconds": None,
                                         "corpus_words": 6_000_000_000}
    for name, entry in models.items():
        entry.setdefault("corpus_words", n_words)
        if entry["seconds"]:
            entry["words_per_s"] = n_words * entry["passes"] / entry["seconds"]
    return models


def evaluate(vectors: WordVectors) -> dict[str, float]:
    """WordSim-353 and SimLex-999 (Spearman, coverage) and Google analogies (3CosAdd, top 30k words)."""
    ws, sl = similarity_spearman(vectors, data.wordsim353()), similarity_spearman(vectors, data.simlex999())
    an = analogy(vectors, data.google_analogies(), top_k=30_000)
    return {"vocab": len(vectors), "wordsim": ws.rho, "wordsim_coverage": ws.coverage,
            "simlex": sl.rho, "simlex_coverage": sl.coverage, "analogy": an.accuracy,
            "analogy_semantic": an.semantic, "analogy_syntactic": an.syntactic, "analogy_coverage": an.coverage}


def evaluate_all(models: dict[str, dict]) -> list[dict]:
    """One row per model: its scores, its training words and seconds."""
    return [{"model": name, **evaluate(entry["vectors"]), "corpus_words": entry["corpus_words"],
             "seconds": entry["seconds"]} for name, entry in models.items()]


def _scores(result: dict) -> dict:
    """A saved table without what a re-run changes by itself: each model's training seconds and the stamp."""
    return {"config": result.get("config"),
            "rows": [{k: v for k, v in row.items() if k != "seconds"} for row in result.get("rows", [])]}


def save_results(rows: list[dict], config: StaticVectorsConfig, path: Path | None = None) -> Path:
    """Write the table with its provenance stamp to results/static-vectors-<profile>.json, unless the file already
    holds the same scores (training seconds aside): re-running the lesson with the same numbers leaves it as it
    was. gensim's threaded SGNS moves its scores run to run, so a run with gensim usually writes."""
    path = path or store.path(RESULT, runtime.profile())
    store.save(RESULT, runtime.profile(), {"experiment": "static-vectors", "config": asdict(config), "rows": rows,
                                           "provenance": provenance.stamp(seed=config.seed)}, at=path, content=_scores)
    return path


def cached_result(profile: str | None = None) -> dict | None:
    """results/static-vectors-<profile>.json as save_results wrote it, or None (reads only)."""
    return store.load(RESULT, profile)


def markdown_table(rows: list[dict]) -> str:
    """The evaluation table as Markdown, numbers rounded for reading."""
    def f(x, digits=3):
        return "–" if x is None or (isinstance(x, float) and np.isnan(x)) else f"{x:.{digits}f}"

    head = ("| model | training words | WordSim-353 ρ (cov.) | SimLex-999 ρ (cov.) "
            "| analogies: all / sem. / syn. (cov.) |\n|---|---:|---:|---:|---:|\n")
    return head + "\n".join(
        f"| {r['model']} | {r['corpus_words']:,} | {f(r['wordsim'])} ({r['wordsim_coverage']:.0%}) "
        f"| {f(r['simlex'])} ({r['simlex_coverage']:.0%}) | {f(r['analogy'])} / {f(r['analogy_semantic'])} / "
        f"{f(r['analogy_syntactic'])} ({r['analogy_coverage']:.0%}) |" for r in rows)


AMBIGUOUS_WORDS = ("apple", "bank", "bass", "plant", "mouse", "java", "spring", "crane")


def sense_vectors(vectors: WordVectors, word: str, max_senses: int = 4, skip_top: int = 150):
    """A vector per WordNet noun sense of `word`: the mean of its gloss and example words.

    The `skip_top` most frequent words (the, of, used, ...) carry no sense and are
    left out, as is the word itself. Returns [(Sense, unit vector)] for senses
    with at least one known word.
    """
    common = set(vectors.words[:skip_top])
    out = []
    for sense in data.wordnet_senses(word, pos="n")[:max_senses]:
        words = [t for t in data.tokenize(" ".join([sense.gloss, *sense.examples]))
                 if t in vectors and t not in common and t != word]
        if words:
            mean = vectors.normed[[vectors.index[t] for t in words]].mean(0)
            out.append((sense, mean / np.linalg.norm(mean)))
    return out


def sense_mixing(vectors: WordVectors, word: str, topn: int = 12, max_senses: int = 4) -> dict:
    """How one vector per word mixes senses: its cosine to each sense, and each neighbour's closest sense."""
    senses = sense_vectors(vectors, word, max_senses)
    if not senses:
        raise ValueError(f"no WordNet noun senses with known gloss words for {word!r}")
    names = [s.name for s, _ in senses]
    S = np.stack([v for _, v in senses])                                      # (senses, dim)
    neighbours = vectors.most_similar(word, topn=topn)
    closest = (vectors.normed[[vectors.index[n] for n, _ in neighbours]] @ S.T).argmax(1)
    return {"word": word,
            "senses": [(s.name, s.gloss, float(vectors.normed[vectors.index[word]] @ v)) for s, v in senses],
            "neighbours": [(n, cos, names[k]) for (n, cos), k in zip(neighbours, closest)]}
