"""GPT pretraining on sentence-start windows (`pretrain gpt --sentence-window T`): the offsets recipes.gpt.sentence_starts
finds begin sentences of real text, and RandomWindows draws windows only there."""
import numpy as np

from minilib import data
from minilib.data.batching import RandomWindows
from minilib.data.tokenizer import pretrained_tokenizer
from minilib.recipes.gpt import encode_documents, sentence_starts


def test_windows_begin_at_sentence_starts():
    tok = pretrained_tokenizer("bpe", "laptop")
    docs = data.pretraining_corpus("valid", max_words=3_000)
    stream, starts = sentence_starts(tok, docs)
    assert np.array_equal(stream, encode_documents(tok, docs)), "the stream is encode_documents' own"
    assert len(starts) > len(docs) and np.all(np.diff(starts) > 0)
    eos = set(np.flatnonzero(stream == tok.eos_id) + 1) | {0}
    inside = [s for s in starts if s not in eos]
    ends = [tok.decode(stream[s - 2:s].tolist()).rstrip() for s in inside]
    assert sum(e[-1:] in ".!?\"')]" for e in ends) == len(ends), "each start follows the end of a sentence"
    batches = RandomWindows(stream, 8, 32, steps=5, seed=0, starts=starts)
    firsts = {int(x) for xb, _ in batches for x in xb[:, 0]}
    assert firsts <= {int(stream[s]) for s in starts}
    plain = {int(x) for xb, _ in RandomWindows(stream, 8, 32, steps=5, seed=0) for x in xb[:, 0]}
    assert not plain <= {int(stream[s]) for s in starts}, "random offsets land mid-sentence"
