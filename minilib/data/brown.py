"""The Brown Corpus with its gold part-of-speech tags, and their mapping to 12 universal tags.

    >>> sents = brown_tagged()
    >>> s = sents[0]
    >>> s.words[:4], s.tags[:4], s.utags[:4], s.category
    (('The', 'Fulton', 'County', 'Grand'), ('at', 'np-tl', 'nn-tl', 'jj-tl'),
     ('DET', 'NOUN', 'NOUN', 'ADJ'), 'news')

Each file (ca01 ... cr09) is one text sample; sentences are lines of
`word/tag` pairs. The ELMo lesson probes layers for POS with `utags`.
"""
from __future__ import annotations

from typing import NamedTuple

from minilib.data.sources import cached, source_file, source_files
from minilib.data.splits import check_split, split_of

UNIVERSAL_TAGS = ("NOUN", "VERB", "ADJ", "ADV", "PRON", "DET", "ADP", "NUM", "CONJ", "PRT", ".", "X")


class TaggedSentence(NamedTuple):
    """One Brown sentence: words as printed, Brown tags (lowercase) and universal tags."""

    file_id: str              # "ca01"
    category: str             # genre from cats.txt, e.g. "news", "romance"
    words: tuple[str, ...]
    tags: tuple[str, ...]     # Brown tagset, e.g. "np-tl", "vbd", "ppss+md"
    utags: tuple[str, ...]    # universal tagset (Petrov, Das & McDonald 2012)


# Brown base tag -> universal tag. Written for this project from the Brown Corpus Manual's tag
# descriptions and the universal tag definitions of Petrov, Das & McDonald (2012, "A universal
# part-of-speech tagset"), following their choices for the Penn tags these correspond to.
_BASE_TO_UNIVERSAL = {
    # nouns: common, proper, and adverbial nouns ("home", "today": Brown NR)
    **dict.fromkeys(["nn", "nns", "np", "nps", "nr", "nrs"], "NOUN"),
    # verbs, including the forms of be / do / have and modals
    **dict.fromkeys(["vb", "vbd", "vbg", "vbn", "vbz", "be", "bed", "bedz", "beg", "bem", "ben", "ber", "bez",
                     "do", "dod", "doz", "hv", "hvd", "hvg", "hvn", "hvz", "md"], "VERB"),
    # adjectives; ordinals ("first") and post-determiners ("many", "next", "last", "other") are
    # tagged JJ/JJR/JJS in Penn, which maps to ADJ
    **dict.fromkeys(["jj", "jjr", "jjs", "jjt", "od", "ap"], "ADJ"),
    # adverbs, qualifiers ("very"), wh-adverbs, nominal adverbs ("here") and the negator "not/n't" (*)
    **dict.fromkeys(["rb", "rbr", "rbt", "rn", "ql", "qlp", "wql", "wrb", "*"], "ADV"),
    # pronouns: nominal ("everybody"), personal, possessive, reflexive, wh-pronouns
    **dict.fromkeys(["pn", "pp", "ppl", "ppls", "ppo", "pps", "ppss", "wp", "wpo", "wps"], "PRON"),
    # determiners: articles, pre-qualifiers/quantifiers ("quite", "all", "both"; Penn PDT),
    # demonstratives, wh-determiners, and existential "there" (Penn EX -> DET)
    **dict.fromkeys(["at", "abl", "abn", "abx", "dt", "dti", "dts", "dtx", "wdt", "ex"], "DET"),
    # prepositions; subordinating conjunctions too, as Penn IN (which covers both) maps to ADP
    **dict.fromkeys(["in", "cs"], "ADP"),
    "cc": "CONJ",
    "cd": "NUM",
    # infinitival "to" and particles ("up" in "give up")
    **dict.fromkeys(["to", "rp"], "PRT"),
    # interjections and untagged material
    **dict.fromkeys(["uh", "nil"], "X"),
    **dict.fromkeys([".", ",", ":", "(", ")", "--", "'", "''", "``"], "."),
}
_SUFFIXES = ("-tl", "-hl", "-nc")   # in a title, in a headline, cited (not used) word


def universal_tag(tag: str) -> str:
    """Map one Brown tag, with its decorations, to one of the 12 universal tags.

    "fw-..." (foreign word) -> X; compound tags of contractions ("ppss+md", I'll) take the
    first part's tag; suffixes -tl/-hl/-nc are dropped; "*" marks negation ("md*", can't)
    and "$" possession ("nn$", "pp$"), neither changes the class. Raises KeyError on an
    unknown tag, so a gap in the table cannot hide.
    """
    t = tag.lower()
    if t.startswith("fw-"):
        return "X"
    t = t.split("+")[0]
    while t.endswith(_SUFFIXES):
        t = t[:-3]
    if t != "*":
        t = t.rstrip("*")
    t = t.rstrip("$") or t
    return _BASE_TO_UNIVERSAL[t]


def _categories() -> dict[str, str]:
    cats = {}
    for line in source_file("brown", "package/cats.txt").read_text().splitlines():
        if line.strip():
            file_id, category = line.split()
            cats[file_id] = category
    return cats


def _parse_brown() -> list[tuple]:
    cats = _categories()
    out = []
    for path in source_files("brown", "package/c[a-r][0-9][0-9]"):
        for line in path.read_text(encoding="utf-8").splitlines():
            pairs = line.split()
            if not pairs:
                continue
            words, tags = zip(*(p.rsplit("/", 1) for p in pairs))   # words may contain "/" (e.g. 1/2)
            tags = tuple(t.lower() for t in tags)
            out.append((path.name, cats[path.name], words, tags, tuple(universal_tag(t) for t in tags)))
    return out


def brown_tagged(split: str | None = None) -> list[TaggedSentence]:
    """The 57k Brown sentences with Brown and universal tags, in file order (cached after the first call).

    `split` ("train" | "valid" | "test") keeps the files in that split of `pretraining_corpus`,
    so a POS probe can be scored on text the language model never saw; None keeps all.
    """
    rows = cached("brown-tagged-v2", _parse_brown, sources=["brown"])
    if split is not None:
        check_split(split)
        keep = {f for f in {r[0] for r in rows} if split_of(f"brown/{f}") == split}
        rows = [r for r in rows if r[0] in keep]
    return [TaggedSentence(*r) for r in rows]


_NO_SPACE_BEFORE = {".", ",", ";", ":", "?", "!", ")", "''", "'", "n't", "'s", "'re", "'ve", "'ll", "'d", "'m"}


def detokenize(words: tuple[str, ...] | list[str]) -> str:
    """Join Brown tokens back into plain running text ("`` Yes , '' he said ." -> '"Yes," he said.')."""
    out: list[str] = []
    glue = True                              # no space before the next token
    for w in words:
        if w == "``":
            out.append(("" if glue else " ") + '"')
            glue = True
        elif w == "''":
            out.append('"')
            glue = False
        elif w in _NO_SPACE_BEFORE:
            out.append(w)
            glue = False
        elif w == "(":
            out.append(("" if glue else " ") + "(")
            glue = True
        else:
            out.append(("" if glue else " ") + w)
            glue = False
    return "".join(out)


def brown_texts() -> list[tuple[str, str, str]]:
    """(file_id, category, plain text) for the 500 Brown samples, one sentence per line, tags stripped."""
    by_file: dict[str, list[str]] = {}
    cats: dict[str, str] = {}
    for s in brown_tagged():
        by_file.setdefault(s.file_id, []).append(detokenize(s.words))
        cats[s.file_id] = s.category
    return [(f, cats[f], "\n".join(lines)) for f, lines in by_file.items()]
