"""WordVectors queries, word-similarity Spearman with coverage, and 3CosAdd analogies."""
import numpy as np
import pytest

from minilib.data.vectors import WordVectors
from minilib.eval.similarity import analogy, neighbours, similarity_spearman, wordsim


def basis(*coords, dim=6):
    v = np.zeros(dim, dtype=np.float32)
    for i, x in coords:
        v[i] = x
    return v


@pytest.fixture
def royal():
    """man/woman on axes 0/1, royalty on axis 2; queen is pulled off along axis 3 so that, without
    excluding the question words, "woman" (cos 0.79) would beat "queen" (cos 0.66) for king - man + woman."""
    words = ["man", "woman", "king", "queen", "apple", "pear"]
    vectors = [basis((0, 1)), basis((1, 1)), basis((0, 1), (2, 1)), basis((1, 1), (2, 1), (3, 1.5)),
               basis((4, 1)), basis((4, 1), (5, 0.2))]
    return WordVectors(words, np.stack(vectors))


def test_lookups_and_cosine(royal):
    assert "king" in royal and "prince" not in royal and len(royal) == 6
    np.testing.assert_array_equal(royal.vector("king"), royal["king"])
    assert royal.similarity("man", "king") == pytest.approx(1 / np.sqrt(2))
    assert royal.similarity("man", "apple") == pytest.approx(0.0)
    np.testing.assert_allclose(np.linalg.norm(royal.normed, axis=1), 1.0, rtol=1e-6)
    assert royal.normed is royal.normed                       # computed once
    with pytest.raises(KeyError, match="prince"):
        royal.vector("prince")


def test_most_similar_leaves_out_the_word_and_sorts(royal):
    top = royal.most_similar("apple", topn=2)
    assert top[0][0] == "pear" and top[0][1] == pytest.approx(1 / np.sqrt(1.04), rel=1e-5)
    assert all(w != "apple" for w, _ in top) and top[0][1] >= top[1][1]
    assert neighbours(royal, "apple", 1) == top[:1]
    by_vector = royal.most_similar(royal.vector("king") - royal.vector("man") + royal.vector("woman"), topn=1)
    assert by_vector[0][0] == "woman"                          # a raw vector query excludes nothing


def test_save_and_load_roundtrip(royal, tmp_path):
    royal.save(tmp_path / "v.npz")
    back = WordVectors.load(tmp_path / "v.npz")
    assert back.words == royal.words
    np.testing.assert_array_equal(back.vectors, royal.vectors)


# -- similarity ---------------------------------------------------------------------------------
def test_spearman_coverage_and_lowercasing():
    words = ["a", "b", "c", "d"]
    angles = np.array([0.0, 0.3, 0.9, 1.4])                   # cos(a, x) falls as the angle grows
    v = WordVectors(words, np.stack([np.cos(angles), np.sin(angles)], 1))
    pairs = [("a", "b", 9.0), ("A", "C", 5.0), ("a", "d", 1.0), ("a", "zebra", 7.0)]
    rho, coverage, n_used = similarity_spearman(v, pairs)
    assert rho == pytest.approx(1.0) and n_used == 3 and coverage == pytest.approx(0.75)
    reversed_scores = [(w1, w2, -s) for w1, w2, s in pairs]
    assert wordsim(v, reversed_scores).rho == pytest.approx(-1.0)
    # one swap in the human ranking: rho = 1 - 6·Σd² / (n(n²-1)) = 1 - 6·2/24 = 0.5
    swapped = [("a", "b", 5.0), ("a", "c", 9.0), ("a", "d", 1.0)]
    assert similarity_spearman(v, swapped).rho == pytest.approx(0.5)


def test_spearman_with_nothing_known():
    v = WordVectors(["a", "b"], np.eye(2))
    result = similarity_spearman(v, [("x", "y", 1.0), ("a", "z", 2.0)])
    assert result.n_used == 0 and result.coverage == 0 and np.isnan(result.rho)


# -- analogies ----------------------------------------------------------------------------------
def test_3cosadd_finds_the_answer_and_excludes_question_words(royal):
    questions = [(": family", "man", "king", "woman", "queen"),
                 (": family", "woman", "queen", "man", "king")]
    result = analogy(royal, questions)
    assert result.accuracy == 1.0 and result.n_used == 2 and result.coverage == 1.0
    # the same target without excluding a, b, c would pick "woman": check the trap is real
    target = royal.normed[2] - royal.normed[0] + royal.normed[1]
    scores = royal.normed @ target
    assert royal.words[int(np.argmax(scores))] in ("woman", "king")
    assert scores[1] > scores[3]


def test_semantic_and_syntactic_split(royal):
    questions = [(": capital-common-countries", "man", "king", "woman", "queen"),   # right
                 (": gram1-adjective-to-adverb", "man", "king", "woman", "pear"),   # wrong
                 ("gram2-opposite", "man", "woman", "apple", "queen")]              # wrong: pear is nearest
    result = analogy(royal, questions)
    assert result.semantic == 1.0
    assert result.n_used == 3 and result.syntactic == pytest.approx(np.mean([0.0, 0.0]))
    assert set(result.sections) == {": capital-common-countries", ": gram1-adjective-to-adverb", "gram2-opposite"}


def test_questions_as_objects_with_a_semantic_flag(royal):
    from collections import namedtuple

    Analogy = namedtuple("Analogy", "section a b c d semantic")
    result = analogy(royal, [Analogy("anything", "man", "king", "woman", "queen", False)])
    assert result.syntactic == 1.0 and np.isnan(result.semantic)


def test_top_k_restricts_questions_and_answers():
    # "decoy" is the exact answer of the first question but is rarer than the top 3 + "answer".
    words = ["a", "b", "c", "answer", "decoy"]
    vectors = np.stack([basis((0, 1)), basis((0, 1), (1, 1)), basis((2, 1)),
                        basis((1, 0.8), (2, 1), (3, 0.7)), basis((1, 1), (2, 1))])
    v = WordVectors(words, vectors)
    q = [("s", "a", "b", "c", "answer"), ("s", "a", "b", "c", "decoy")]
    full = analogy(v, q, top_k=5)
    assert full.n_used == 2 and full.accuracy == 0.5          # decoy wins over all 5 words
    top4 = analogy(v, q, top_k=4)
    assert top4.n_used == 1 and top4.coverage == 0.5          # the decoy question is skipped ...
    assert top4.accuracy == 1.0                               # ... and decoy is no longer a candidate


def test_from_gensim_keyed_vectors():
    import gensim.models as gensim_models   # a dev dependency: missing is a failure
    kv = gensim_models.KeyedVectors(3)
    kv.add_vectors(["x", "y"], np.array([[1, 0, 0], [0, 1, 0]], dtype=np.float32))
    v = WordVectors.from_gensim(kv)
    assert v.words == ["x", "y"] and v.similarity("x", "y") == pytest.approx(0.0)
