"""The milestones the book retraces, in one place.

Lesson 00 draws them as a timeline (`timeline`) and the book's references list is built
from the same entries, so a date is typed once. Dates are the first public
release (usually arXiv), month precision; entries are in date order. Each
milestone names the chapter that rebuilds it or tells its story.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Sequence


@dataclass(frozen=True)
class Milestone:
    date: str          # "YYYY-MM", first public release
    name: str          # what the field calls it
    idea: str          # the one idea, in a few words
    paper: str         # title
    authors: str       # first author et al.
    venue: str         # where it appeared
    lesson: int | None  # the chapter that rebuilds it (None: context only)


MILESTONES: tuple[Milestone, ...] = (
    Milestone("2013-01", "word2vec", "one vector per word, learned by predicting neighbours",
              "Efficient Estimation of Word Representations in Vector Space", "Mikolov et al.", "ICLR workshop 2013", 1),
    Milestone("2013-10", "SGNS", "skip-gram with negative sampling and subsampling",
              "Distributed Representations of Words and Phrases and their Compositionality", "Mikolov et al.",
              "NeurIPS 2013", 1),
    Milestone("2014-10", "GloVe", "vectors from global co-occurrence counts",
              "GloVe: Global Vectors for Word Representation", "Pennington et al.", "EMNLP 2014", 1),
    # ULMFiT's direct predecessor (ULMFiT §2 contrasts itself with it): chapter 04 tells its story.
    Milestone("2015-11", "Dai & Le", "pretrain an LSTM as a language model or sequence autoencoder, then fine-tune",
              "Semi-supervised Sequence Learning", "Dai & Le", "NeurIPS 2015", 4),
    Milestone("2016-02", "big LSTM LMs", "LSTM language models scaled to a billion words of text",
              "Exploring the Limits of Language Modeling", "Jozefowicz et al.", "arXiv 2016", 2),
    Milestone("2017-06", "Transformer", "self-attention, parallel over positions",
              "Attention Is All You Need", "Vaswani et al.", "NeurIPS 2017", 5),
    # ELMo's closest rival (ELMo compares with it): contextual vectors, but from translation, not an LM.
    Milestone("2017-08", "CoVe", "contextual vectors from a machine-translation encoder",
              "Learned in Translation: Contextualized Word Vectors", "McCann et al.", "NeurIPS 2017", 3),
    Milestone("2017-08", "AWD-LSTM", "a heavily regularised LSTM language model",
              "Regularizing and Optimizing LSTM Language Models", "Merity et al.", "ICLR 2018", 4),
    Milestone("2018-01", "ULMFiT", "fine-tune the whole LM: discriminative LRs, STLR, gradual unfreezing",
              "Universal Language Model Fine-tuning for Text Classification", "Howard & Ruder", "ACL 2018", 4),
    Milestone("2018-02", "ELMo", "contextual vectors from a deep biLSTM language model",
              "Deep Contextualized Word Representations", "Peters et al.", "NAACL 2018", 3),
    Milestone("2018-06", "GPT", "a Transformer decoder LM, pretrained then fine-tuned",
              "Improving Language Understanding by Generative Pre-Training", "Radford et al.", "OpenAI 2018", 6),
    Milestone("2018-10", "BERT", "masked LM + next sentence: deep bidirectional pretraining",
              "BERT: Pre-training of Deep Bidirectional Transformers for Language Understanding", "Devlin et al.",
              "NAACL 2019", 7),
)

# What came after the book's road, told (not rebuilt) by chapter 08, which draws them on the same timeline
# after MILESTONES. BERT in Google Search is a product launch, not a paper: its "paper" is the announcement.
AFTERWARDS: tuple[Milestone, ...] = (
    Milestone("2019-02", "GPT-2", "a 1.5B-parameter LM on web text does tasks zero-shot",
              "Language Models are Unsupervised Multitask Learners", "Radford et al.", "OpenAI 2019", 8),
    Milestone("2019-07", "RoBERTa", "BERT trained longer on 10x the text, without NSP",
              "RoBERTa: A Robustly Optimized BERT Pretraining Approach", "Liu et al.", "arXiv 2019", 8),
    Milestone("2019-10", "T5", "every task as text-to-text; pretraining choices compared at scale",
              "Exploring the Limits of Transfer Learning with a Unified Text-to-Text Transformer", "Raffel et al.",
              "JMLR 2020", 8),
    # the seed essay's dates: US English queries from 2019-10-25, 70+ languages from 2019-12-09
    Milestone("2019-10", "BERT in Search", "BERT reads English queries in Google Search (US)",
              "Understanding searches better than ever before", "Nayak", "Google blog 2019", 8),
    Milestone("2020-01", "Scaling laws", "LM loss falls as a power law in parameters, data and compute",
              "Scaling Laws for Neural Language Models", "Kaplan et al.", "arXiv 2020", 8),
    Milestone("2020-05", "GPT-3", "175B parameters: tasks learned from a few examples in the prompt",
              "Language Models are Few-Shot Learners", "Brown et al.", "NeurIPS 2020", 8),
)

# The size (inches) at which lesson 00 draws these milestones on one timeline with no two labels
# overlapping (tests/test_story.py draws it and checks); grow it when a milestone crowds the road.
TIMELINE_FIGSIZE = (13.0, 4.4)
# chapter 08's timeline: MILESTONES + AFTERWARDS, 2013–2020 (same test)
FLYWHEEL_TIMELINE_FIGSIZE = (15.0, 5.2)

CHAPTERS: tuple[tuple[int, str, str], ...] = (
    (0, "00-the-map", "The map: data, profiles, the engine"),
    (1, "01-static-word-vectors", "Static word vectors: word2vec, PPMI, GloVe"),
    (2, "02-language-models", "Language models: n-grams to LSTMs"),
    (3, "03-elmo", "ELMo: contextual vectors from a biLM"),
    (4, "04-ulmfit", "ULMFiT: fine-tune, don't just extract"),
    (5, "05-transformer", "The Transformer: attention in parallel"),
    (6, "06-gpt", "GPT: a Transformer LM, fine-tuned"),
    (7, "07-bert", "BERT: masked LM, both directions at every layer"),
    (8, "08-the-flywheel", "The flywheel: no labels, more data, bigger models"),
)


# ----------------------------------------------------------------------------- citations the lessons rest on

@dataclass(frozen=True)
class Citation:
    lesson: int        # the chapter whose text cites it
    paper: str         # short name, as the lesson's references give it
    anchor: str        # the words of the lesson next to the citation (its markdown or code, as typed)
    where: str         # the table, section or appendix the number or claim is in
    says: str          # what that place says, in our words (why the citation is there)


# A lesson cites each of these with `where` within CITATION_WINDOW characters of `anchor`, wherever the
# anchor appears (tests/test_story.py reads the notebooks, whitespace collapsed). Places checked against the
# papers' texts.
CITATION_WINDOW = 200
CITATIONS: tuple[Citation, ...] = (
    Citation(4, "Howard & Ruder 2018", "10× (IMDb), 20× (AG)", "§5",
             "low-shot learning: supervised ULMFiT at 100 labels matches scratch on 10× (IMDb) and 20× (AG) the labels"),
    Citation(4, "Howard & Ruder 2018", "50× (AG), 100× (IMDb)", "§5",
             "with unlabelled in-domain text, ULMFiT at 100 labels matches scratch on 50× (AG) and 100× (IMDb)"),
    Citation(4, "Howard & Ruder 2018", "100× on IMDb, 50× on AG", "§5", "the same, in the summary's line"),
    Citation(5, "Vaswani et al. 2017", "28.4 BLEU English→German", "§6.1", "the big model's EN→DE BLEU"),
    Citation(5, "Vaswani et al. 2017", "41.8 English→French", "Table 2",
             "41.8 is Table 2's (and the abstract's) EN→FR BLEU; §6.1's text reports 41.0 for the same model"),
    Citation(6, "Radford et al. 2018", "(74.7 → 59.9)", "Table 5",
             "removing pretraining lowers the GLUE-task average from 74.7 to 59.9, each task with its full training set"),
    Citation(6, "Zhao et al. 2021", "*Calibrate before use*", "§5",
             "contextual calibration with a content-free input is §5 (§4 describes the biases it corrects)"),
    Citation(7, "Devlin et al. 2019", "\"Pre-training data\"", "§3.1",
             "the document-level corpus paragraph sits in §3.1 (Pre-training BERT); §3.2 is fine-tuning"),
    Citation(7, "Devlin et al. 2019", "88.5 → 77.8 F1", "Table 5", "SQuAD F1 of BERT-base vs the LTR & no NSP model"),
    Citation(7, "Devlin et al. 2019", "GLUE 80.5", "abstract", "GLUE 80.5, 7.7 points above the previous best"),
    Citation(7, "Devlin et al. 2019", "begins to outperform the LTR model almost immediately", "C.1",
             "C.1 and Figure 5: MLM converges slightly slower than LTR but is ahead in MNLI accuracy almost at once"),
    Citation(7, "Devlin et al. 2019", "1,000,000 steps", "§A.2",
             "the pretraining procedure: batches of 256 sequences × 512 tokens (128,000 tokens), 1,000,000 steps"),
    Citation(8, "Kaplan et al. 2020", "Kaplan et al. (§3, eq. 1.1–1.2)", "eq. 1.1–1.2",
             "α_N ≈ 0.076 and α_D ≈ 0.095, the pure power laws in parameters and in tokens"),
)

# What the book's lessons must not say again: (chapter, text, why it was wrong). Checked in the notebooks'
# sources and saved outputs by tests/test_story.py.
SLIPS: tuple[tuple[int, str, str], ...] = (
    (4, "50× (IMDb), 100× (AG)", "ULMFiT §5 gives 50× for AG and 100× for IMDb"),
    (4, "50× on IMDb, 100× on AG", "ULMFiT §5 gives 50× for AG and 100× for IMDb"),
    (5, "41.8 English→French (§6.1)", "§6.1's text says 41.0; 41.8 is Table 2's and the abstract's"),
    (5, "some at a related word", "nothing in the lesson measures a head attending to a related word"),
    (6, "labels are few** (Table 5)", "GPT-1's Table 5 ablates pretraining on full training sets, not few labels"),
    (6, "*Calibrate before use*, §4", "contextual calibration is Zhao et al.'s §5"),
    (7, "(§3.2, \"Pre-training data\"", "BERT's pre-training data paragraph is in §3.1"),
    (7, "which is why it was trained for 1M steps", "BERT §A.2 states the 1M steps and gives no reason"),
    (8, "fine-tuned whole beats models built for one task (chapters",
     "chapters 06–07 measured the opposite at most label counts; that was the papers' claim, not ours"),
    (8, "falls as a power law in parameters (α", "6 data-starved points do not establish a power law in parameters"),
) + tuple((n, "Devlin et al. 2018", "the book cites BERT by its NAACL year, 2019 (arXiv October 2018)")
          for n in range(4, 9)) + tuple((n, "simple baseline", "GloVe and SGNS are pretrained static vectors, "
                                           "not simple baselines: name each with the text it read")
                                        for n in range(4, 9))

# What the pretrained static-vector baselines read: GloVe 6B (Pennington et al. 2014, §4.2: Wikipedia 2014
# + Gigaword 5, 6 billion tokens). Our SGNS reads the words ELMo's biLM read (its checkpoint's provenance).
GLOVE_TOKENS = 6_000_000_000


def baseline_names(sgns_words: int) -> dict[str, str]:
    """The four baselines named by what they read before the labels: two read nothing, two are pretrained
    static vectors. `sgns_words`: the words our SGNS was trained on (the ELMo checkpoint's data["train"])."""
    return {"majority": "majority class (no pretraining)",
            "bow-lr": "bag of words + LR (no pretraining)",
            "glove-lr": f"mean GloVe + LR (static vectors, {GLOVE_TOKENS / 1e9:.0f}B tokens read)",
            "sgns-lr": f"mean SGNS + LR (static vectors, {sgns_words / 1e6:.0f}M words read)"}


def cited(source: str) -> str:
    """A source written with a milestone's release year ("Devlin et al. 2018, §A.2") in the book's citation
    year, its venue's ("Devlin et al. 2019, §A.2"): the references list papers by where they appeared."""
    for m in MILESTONES + AFTERWARDS:
        surname = m.authors.split()[0]
        venue_year = next(iter(re.findall(r"\d{4}", m.venue)), None)
        released = m.date[:4]
        if venue_year and venue_year != released and f"{surname} et al. {released}" in source:
            return source.replace(f"{surname} et al. {released}", f"{surname} et al. {venue_year}")
    return source


# ----------------------------------------------------------------------------- the timeline, drawn

def _year_fraction(date: str) -> float:
    year, month = date.split("-")
    return int(year) + (int(month) - 1) / 12


def timeline(milestones: Sequence[Milestone] = MILESTONES, ax=None,
             title: str = "How NLP learned to pretrain: the papers this book retraces"):
    """The 2013–2018 road from static vectors to BERT, one marker per paper, coloured by lesson.
    Chapter 08 passes MILESTONES + AFTERWARDS (at FLYWHEEL_TIMELINE_FIGSIZE) and its own title."""
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=TIMELINE_FIGSIZE)
    xs = [_year_fraction(m.date) for m in milestones]
    # papers of the same month sit a little apart, so no marker hides another
    xs = [x + 0.06 * sum(1 for p in milestones[:i] if p.date == m.date) for i, (x, m) in enumerate(zip(xs, milestones))]
    cmap = plt.get_cmap("tab10")
    ax.axhline(0, color="0.6", lw=1, zorder=0)
    placed: list[tuple[float, float]] = []  # (x, height) of labels drawn so far
    for i, (x, m) in enumerate(zip(xs, milestones)):
        side = 1 if i % 2 == 0 else -1
        # the lowest free level on this side: labels are ~0.8 years wide
        level = 0
        while any(abs(x - px) < 0.8 and ph == side * (1.0 + 0.75 * level) for px, ph in placed):
            level += 1
        height = side * (1.0 + 0.75 * level)
        placed.append((x, height))
        colour = cmap((m.lesson or 0) % 10)
        ax.plot([x, x], [0, height], color=colour, lw=1)
        ax.scatter([x], [0], color=colour, s=40, zorder=3)
        label = f"{m.name}\n{m.date}" + (f" · ch.{m.lesson:02d}" if m.lesson is not None else "")
        ax.text(x, height, label, ha="center", va="bottom" if height > 0 else "top", fontsize=8.5,
                bbox=dict(boxstyle="round,pad=0.25", fc="white", ec=colour, lw=0.8))
    top = max(abs(h) for _, h in placed) + 0.9
    ax.set_ylim(-top, top)
    ax.set_xlim(min(xs) - 0.4, max(xs) + 0.4)
    ax.set_yticks([])
    for side in ("left", "right", "top"):
        ax.spines[side].set_visible(False)
    ax.set_title(title)
    return ax
