"""Chapter 08's exercise 4 (experiments/own_text.race): the shipped GPT and a random start read the same steps of
a learner's text, scored on its held-out documents beside a unigram model — here on real text (the Moby Dick
source of the built-in corpus, written out as a learner's file)."""
import pytest

from minilib.data import corpora
from minilab.experiments import own_text


@pytest.mark.slow
@pytest.mark.data
def test_race_on_a_text_file(tmp_path):
    docs, words = [], 0
    for d in corpora.source_documents("moby"):
        docs.append(d.text)
        words += d.num_words
        if words > 20_000:
            break
    path = tmp_path / "my-book.txt"
    path.write_text("\n\n".join(docs) + "\n")
    race = own_text.race([path], profile="smoke", steps=6)
    nats = dict(race["rows"])
    unigram, before, after, random_start = nats.values()
    assert list(nats)[2:] == ["shipped GPT + 6 steps of your text", "random start + 6 steps of your text"]
    assert race["corpus"]["words"] >= 20_000 and race["tokens_per_start"] == 6 * 16 * 128
    assert before < unigram               # the shipped GPT already predicts English prose better than word counts
    assert after < before                 # a few steps on the text's own windows lower its held-out loss
    assert random_start > after           # the same steps from random weights are far from the shipped start
