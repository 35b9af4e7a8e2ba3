"""Words: the one word tokenizer every lesson uses, and the text normaliser that catches leaks.

`tokenize` is deliberately simple and predictable, close to the Penn Treebank
conventions that GloVe's vocabulary (and most 2013-2018 papers) used:

    >>> tokenize("Don't panic: the U.S. economy grew 3.5% in the 1990s -- really!")
    ['do', "n't", 'panic', ':', 'the', 'u.s.', 'economy', 'grew', '3.5', '%', 'in',
     'the', '1990s', '--', 'really', '!']

- lowercase everything (our corpora are small; case would split the counts);
- split clitics as Penn does: "don't" -> do n't, "it's" -> it 's, "can't" -> ca n't;
- keep hyphenated words ("well-known"), numbers ("3.5", "1,000", "1990s") and
  dotted abbreviations ("u.s.", "e.g.") as one token;
- every other punctuation mark is its own token; curly quotes become straight
  ones, "``" and "''" become '"', dashes become "--" and "…" becomes "...".

Subword tokenizers (BPE, WordPiece) for GPT and BERT are built on top of these words.
"""
from __future__ import annotations

import re
import unicodedata

_REPLACEMENTS = str.maketrans({
    "\u2018": "'", "\u2019": "'", "\u02bc": "'", "\u201b": "'",  # single curly quotes
    "\u201c": '"', "\u201d": '"', "\u201e": '"',                 # double curly quotes
    "\u2014": " -- ", "\u2013": " -- ",                          # em / en dash
    "\u2026": "...",                                             # ellipsis
    "\u00a0": " ",                                               # no-break space
})
_DOUBLE_QUOTES = re.compile(r"``|''")
# A clitic after a letter: "don't" -> "do n't", "we'll" -> "we 'll" (Penn Treebank style).
_CLITIC = re.compile(r"(?<=[^\W\d_])(n't|'s|'re|'ve|'ll|'d|'m)\b")
_TOKEN = re.compile(r"""
      n't | '(?:s|re|ve|ll|d|m)\b          # clitics, split off above
    | (?:[^\W\d_]\.){2,}(?![^\W\d_])        # dotted abbreviations: u.s. e.g. a.m.
    | \d+(?:[.,:]\d+)*[^\W\d_]*             # numbers: 3.5 1,000 10:30 1990s 3rd
    | \w+(?:[-']\w+)*                       # words, with inner hyphens/apostrophes
    | \.\.\. | -- | [^\w\s]                # ellipsis, dash, any other single symbol
""", re.VERBOSE)


_NOT_ALNUM = re.compile(r"[\W_]+")


def tokenize(text: str) -> list[str]:
    """Split `text` into lowercase word and punctuation tokens (see the module docstring)."""
    text = _DOUBLE_QUOTES.sub('"', text.translate(_REPLACEMENTS)).lower()
    text = _CLITIC.sub(r" \1", text)
    return _TOKEN.findall(text)


def normalize(text: str) -> str:
    """A key for "is this the same sentence?": lowercase letters and digits only.

    Accents, punctuation, spacing and tokenization differences vanish, so
    "Sex and Lucía" == "sex and lucia", and "self-absorbed" == "self absorbed".
    Used to keep test sentences out of training text (see `labelled.LeakGuard`).
    """
    # NFKD splits "í" into "i" + a combining accent; [\W_] matches the accent (not alphanumeric).
    return _NOT_ALNUM.sub("", unicodedata.normalize("NFKD", text).lower())
