"""What a language model learned about grammar: subject-verb agreement on real held-out sentences.

To predict "The keys to the cabinet ___" a model must know that the verb
agrees with "keys", not with the nearer "cabinet". Linzen, Dupoux & Goldberg
(2016, "Assessing the ability of LSTMs to learn syntax-sensitive
dependencies") turned this into a test: cut a real sentence just before its
verb and ask whether the LM gives the right form ("are") more probability
than the wrong one ("is"). No labels were used to train the LM; if it
prefers the right form, it picked agreement up from raw text.

Where the items come from (`agreement_items`): sentences of the Brown Corpus
in a held-out split (`minilib.data.brown_tagged("valid")` / `("test")`: files
the pretraining corpus puts in valid/test, so the LM never trained on them).
Brown's gold tags give both numbers we need, no parser involved:

  * the verb: one of six forms of *be* / *have* with its own tag — bez "is",
    ber "are", bedz "was", bed "were", hvz "has", hv "have". The form the
    author wrote is the correct one; the wrong one is its partner of the other
    number (is↔are, was↔were, has↔have);
  * the subject: a common noun tagged NN (singular) or NNS (plural), with any
    -tl / -hl suffix (title, headline) ignored. Proper nouns and pronouns are
    left out ("I was", "you were" do not follow the NN/NNS pattern).

Two kinds of items:

  * "adjacent": the noun right before the verb agrees with it ("... the
    committee was"). Items where they disagree are dropped here: those are
    subjunctives ("if the man were"), inversions ("at one extreme are") or
    the next kind;
  * "attractor": the verb agrees with an earlier noun, and between the two
    lies only a prepositional phrase that ends with a noun of the *other*
    number ("the results of the first test were"). Precisely: the head noun
    is followed by a preposition (IN), the words up to the verb are
    determiners, adjectives, numbers, nouns, possessives or prepositions (no
    verb, punctuation, conjunction or wh-word), and the noun before the verb
    has the opposite number. A trigram model sees only the attractor, so it
    must guess wrong; an LM that tracks the head noun can get these right.

The baseline knows no context: it always picks the more frequent form in the
training text (e.g. "was" over "were"), so its accuracy is the share of items
whose correct form happens to be the more frequent one.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from minilib.data.brown import detokenize
from minilib.data.words import tokenize
from minilib.generate import batch_next_word_log_probs

# Brown tag -> (form, number); each form's partner of the other number is the wrong answer
VERB_TAGS = {"bez": ("is", "sg"), "ber": ("are", "pl"), "bedz": ("was", "sg"), "bed": ("were", "pl"),
             "hvz": ("has", "sg"), "hv": ("have", "pl")}
PARTNER = {"is": "are", "are": "is", "was": "were", "were": "was", "has": "have", "have": "has"}
NOUN_NUMBER = {"nn": "sg", "nns": "pl"}
# what may stand between a head noun and the verb inside a prepositional phrase (Brown base tags)
_PP_TAGS = {"in", "at", "ap", "abn", "cd", "od", "dt", "dti", "dts", "jj", "jjr", "jjs", "jjt",
            "nn", "nns", "nn$", "nns$", "np", "np$", "pp$", "ql", "vbg", "vbn"}


@dataclass(frozen=True)
class AgreementItem:
    """A held-out sentence cut before its verb, with the right and wrong verb form."""

    context: str          # the sentence up to the verb, as plain text ("The keys to the cabinet")
    correct: str          # the form the author wrote ("are")
    wrong: str            # its partner of the other number ("is")
    subject: str          # the noun whose number decides the verb ("keys"), lowercased
    number: str           # "sg" | "pl": the subject's (and the correct verb's) number
    kind: str             # "adjacent" | "attractor"
    attractor: str | None  # for "attractor" items, the nearer noun of the other number ("cabinet")
    source: str           # Brown file id, e.g. "cf07"


def _base(tag: str) -> str:
    for suffix in ("-tl", "-hl"):
        tag = tag.replace(suffix, "")
    return tag


def agreement_items(sentences) -> list[AgreementItem]:
    """Agreement items from Brown `TaggedSentence`s (see the module doc for the rules); one item per verb."""
    items = []
    for s in sentences:
        tags = [_base(t) for t in s.tags]
        for i in range(1, len(s.words)):
            verb = s.words[i].lower()
            if tags[i] not in VERB_TAGS or VERB_TAGS[tags[i]][0] != verb:
                continue
            number = VERB_TAGS[tags[i]][1]
            prev = NOUN_NUMBER.get(tags[i - 1])
            if prev is None:
                continue
            context = detokenize(s.words[:i])
            if prev == number:
                items.append(AgreementItem(context, verb, PARTNER[verb], s.words[i - 1].lower(), number,
                                           "adjacent", None, s.file_id))
                continue
            head = _head_across_pp(tags, i, number)
            if head is not None:
                items.append(AgreementItem(context, verb, PARTNER[verb], s.words[head].lower(), number,
                                           "attractor", s.words[i - 1].lower(), s.file_id))
    return items


def _head_across_pp(tags: list[str], verb: int, number: str) -> int | None:
    """Index of a noun of `number` followed by a preposition, with only noun-phrase material up to the verb."""
    for j in range(verb - 2, -1, -1):
        if tags[j] not in _PP_TAGS:
            return None                                   # a verb, comma, conjunction...: not one PP
        if NOUN_NUMBER.get(tags[j]) == number and tags[j + 1] == "in":
            return j
    return None


@dataclass
class ScoredItem:
    item: AgreementItem
    p_correct: float      # p(correct form | context)
    p_wrong: float        # p(wrong form | context)

    @property
    def right(self) -> bool:
        return self.p_correct > self.p_wrong


@dataclass
class AgreementResult:
    accuracy: float                    # share of items where p(correct) > p(wrong)
    baseline_accuracy: float           # "always the more frequent form" on the same items
    n: int                             # items scored
    n_skipped: int                     # items left out: subject (or attractor) not in the vocabulary
    by_kind: dict[str, dict[str, float]] = field(default_factory=dict)   # kind -> accuracy, baseline, n
    examples: list[ScoredItem] = field(default_factory=list)

    def __repr__(self) -> str:
        kinds = ", ".join(f"{k}: {v['accuracy']:.3f} (baseline {v['baseline']:.3f}, n={int(v['n'])})"
                          for k, v in self.by_kind.items())
        return (f"AgreementResult(accuracy={self.accuracy:.3f}, baseline={self.baseline_accuracy:.3f}, "
                f"n={self.n}, skipped={self.n_skipped}; {kinds})")


def frequency_baseline(vocab, items) -> np.ndarray:
    """For each item, True if its correct form is the more frequent of the pair in `vocab.counts`."""
    return np.array([vocab.counts[vocab[it.correct]] > vocab.counts[vocab[it.wrong]] for it in items], dtype=bool)


def agreement_probe(model, vocab, items) -> AgreementResult:
    """Score `model` (a torch LM or a KneserNey) on agreement items: is p(correct) > p(wrong) given the context?

    `items`: AgreementItems, or Brown TaggedSentences (made into items by agreement_items). The context is tokenized like the training text and fed from a fresh state.
    Items whose subject (or attractor) noun is not in `vocab` are skipped: the model
    sees <unk> there and cannot know its number.
    """
    if vocab.unk is None:
        raise ValueError("agreement_probe needs a vocabulary with an <unk> token")
    for form in PARTNER:
        if form not in vocab:
            raise ValueError(f"the verb form {form!r} is not in the vocabulary: build it from more text")
    items = list(items)
    if items and not isinstance(items[0], AgreementItem):
        items = agreement_items(items)
    kept = [it for it in items if it.subject in vocab and (it.attractor is None or it.attractor in vocab)]
    log_p = batch_next_word_log_probs(model, [vocab.encode(tokenize(it.context)) for it in kept]).numpy() \
        if kept else np.zeros((0, len(vocab)))
    scored = [ScoredItem(it, float(np.exp(lp[vocab[it.correct]])), float(np.exp(lp[vocab[it.wrong]])))
              for it, lp in zip(kept, log_p)]
    right = np.array([s.right for s in scored], dtype=bool)
    base = frequency_baseline(vocab, kept)
    by_kind = {}
    for kind in dict.fromkeys(it.kind for it in kept):
        mask = np.array([it.kind == kind for it in kept])
        by_kind[kind] = {"accuracy": float(right[mask].mean()), "baseline": float(base[mask].mean()),
                         "n": int(mask.sum())}
    mean = lambda a: float(a.mean()) if len(a) else float("nan")
    return AgreementResult(mean(right), mean(base), len(kept), len(items) - len(kept), by_kind, scored)
