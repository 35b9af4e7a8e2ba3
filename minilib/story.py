"""The milestones the book retraces, in one place.

Lesson 00 draws them as a timeline and the book's references list is built
from the same entries, so a date is typed once. Dates are the first public
release (usually arXiv), month precision; entries are in date order. Each
milestone names the chapter that rebuilds it or tells its story.
"""
from __future__ import annotations

from dataclasses import dataclass


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
