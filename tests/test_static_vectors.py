"""Chapter 01's experiment: sense mixing on the real GloVe vectors, and the results table."""
import numpy as np
import pytest

from minilib import data
from minilib.data.vectors import WordVectors
from minilab.experiments import static_vectors as sv


@pytest.fixture(scope="module")
def glove():
    words, matrix = data.glove50()
    return WordVectors(words, matrix)


@pytest.mark.data
def test_one_vector_mixes_senses_or_loses_one(glove):
    # "java": the island and the programming language both appear among its neighbours
    java = sv.sense_mixing(glove, "java")
    assert {"java.n.01", "java.n.03"} <= {sense for _, _, sense in java["neighbours"]}
    # "bank": the financial sense swallows the river bank: every neighbour is nearest the money sense
    bank = sv.sense_mixing(glove, "bank")
    assert {sense for _, _, sense in bank["neighbours"]} == {"depository_financial_institution.n.01"}


@pytest.mark.data
def test_sense_vectors_need_known_gloss_words(glove):
    with pytest.raises(ValueError, match="no WordNet noun senses"):
        sv.sense_mixing(glove, "qwertyuiop")


def test_markdown_table_formats_missing_values():
    row = {"model": "m", "corpus_words": 10, "wordsim": 0.5, "wordsim_coverage": 1.0, "simlex": float("nan"),
           "simlex_coverage": 0.0, "analogy": 0.25, "analogy_semantic": 0.5, "analogy_syntactic": 0.0,
           "analogy_coverage": 0.5}
    table = sv.markdown_table([row])
    assert "| m | 10 | 0.500 (100%) | – (0%) | 0.250 / 0.500 / 0.000 (50%) |" in table


def test_sizes_cover_every_profile():
    from minilib import runtime
    assert set(sv.SIZES) == set(runtime.PROFILES)


@pytest.mark.data
@pytest.mark.slow            # an end-to-end run of real training: make test, not test-fast
def test_gensim_reference_repeats_across_processes():
    # two fresh interpreters (each its own PYTHONHASHSEED) train gensim's SGNS on the same real sentences:
    # the same vectors, so re-running chapter 01 leaves results/static-vectors-<profile>.json as it was
    import subprocess
    import sys

    code = ("import hashlib; from minilab.experiments import static_vectors as sv;"
            "c = sv.StaticVectorsConfig(words=20_000, epochs=1, dim=16, min_count=2);"
            "v, _, _ = sv.train_gensim(sv.corpus_sentences(c.words), c);"
            "print(hashlib.sha256(v.vectors.tobytes()).hexdigest())")
    digests = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                              env={**__import__("os").environ, "PYTHONHASHSEED": str(seed)}).stdout.strip()
               for seed in (1, 2)}
    assert len(digests) == 1, "gensim's SGNS should give the same vectors in every process"
