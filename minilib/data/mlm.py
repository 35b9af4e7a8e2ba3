"""BERT's pretraining data (Devlin et al. 2018, §3.1): sentence pairs and masked tokens.

    stream = DocumentStream.from_documents(tokenizer, document_level(pretraining_corpus("train")))  # ids + sentences
    batches = PairBatches(stream, SpecialTokens.of(tokenizer), batch_size=16, max_len=128, steps=1000)
    for batch in batches: ...        # BERTBatch(ids, segments, attention_mask, labels, nsp_labels)

Task #1, the masked LM (`mask_tokens`): in each sequence 15 % of the tokens are chosen (never
[CLS], [SEP], [PAD] or another special token) and become the targets; of the chosen, 80 % are
replaced by [MASK], 10 % by a random token and 10 % left unchanged, so the model must keep a
good representation of every input token, not only of [MASK], which fine-tuning never shows it.
As in the released code, the count per sequence is fixed, max(1, round(0.15 · n)), and the
80/10/10 choice is drawn per chosen token.

Task #2, next sentence prediction (`PairBatches.sample_pair`): a "sentence" is a span of
contiguous text (§3: not necessarily a linguistic sentence). Each input is
`[CLS] a [SEP] b [SEP]`, at most `max_len` tokens: a starts at a sentence of a document and ends at a
sentence boundary (or mid-sentence, when one sentence fills the pair); b is, half of the time, the text that
really follows a in that document (IsNext, label 0) and otherwise a span from another document
(NotNext, label 1), as long as the real continuation would have been, so length gives nothing
away. Unlike the released code, which masked each pair 10 times ahead of training (static), the
pairs and masks are drawn afresh for every batch (dynamic, as RoBERTa does), from a generator
seeded by (seed, epoch): a resumed run draws the same batches.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable, NamedTuple, Sequence

import numpy as np
import torch

SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n")   # where a line or a sentence ends: the pairs' cut points
IGNORE_INDEX = -100   # a label that scores nothing: F.cross_entropy's default (models.transformer uses the same)
MASK_PROB = 0.15      # §3.1: "we mask 15% of all WordPiece tokens in each sequence at random"
P_MASK, P_RANDOM = 0.8, 0.1   # §3.1: of the chosen, 80 % [MASK], 10 % a random token, (the rest) 10 % unchanged


@dataclass(frozen=True)
class SpecialTokens:
    """The ids the pretraining data needs, read from a WordPiece tokenizer (`SpecialTokens.of(tok)`)."""
    cls_id: int
    sep_id: int
    pad_id: int
    mask_id: int
    vocab_size: int
    special_ids: tuple[int, ...]      # never chosen for masking, never drawn as a random replacement

    @classmethod
    def of(cls, tokenizer) -> "SpecialTokens":
        missing = [r for r in ("cls", "sep", "pad", "mask") if getattr(tokenizer, f"{r}_id", None) is None]
        if missing:
            raise ValueError(f"the tokenizer has no {', '.join(missing)} token: BERT's data needs a WordPiece "
                             f"tokenizer with [CLS] [SEP] [PAD] [MASK] (pretrained_tokenizer('wordpiece'))")
        return cls(tokenizer.cls_id, tokenizer.sep_id, tokenizer.pad_id, tokenizer.mask_id, tokenizer.vocab_size,
                   tuple(sorted(set(tokenizer.specials.values()))))


# ----------------------------------------------------------------------------- Task #1: masking

def mask_tokens(ids: torch.Tensor, specials: SpecialTokens, generator: torch.Generator | None = None,
                mask_prob: float = MASK_PROB) -> tuple[torch.Tensor, torch.Tensor]:
    """§3.1 Task #1 on a (B, T) batch of ids → (inputs, labels), both (B, T).

    In each row, max(1, round(mask_prob · n)) of its n non-special tokens are chosen uniformly at
    random; labels hold their original ids (IGNORE_INDEX everywhere else); inputs have 80 % of them
    replaced by [MASK], 10 % by a random non-special token, 10 % unchanged.
    """
    special = torch.isin(ids, torch.tensor(specials.special_ids, device=ids.device))
    n_real = (~special).sum(1)                                                   # (B,)
    n_chosen = (n_real * mask_prob).round().long().clamp(min=1).minimum(n_real)  # (B,), 0 only for a row of specials
    scores = torch.rand(ids.shape, generator=generator).to(ids.device).masked_fill(special, 2.0)  # specials last
    rank = scores.argsort(1).argsort(1)                                          # (B, T): 0 = the lowest score
    chosen = rank < n_chosen[:, None]
    labels = ids.masked_fill(~chosen, IGNORE_INDEX)
    u = torch.rand(ids.shape, generator=generator).to(ids.device)
    allowed = torch.tensor(np.setdiff1d(np.arange(specials.vocab_size), specials.special_ids), device=ids.device)
    random_ids = allowed[torch.randint(len(allowed), ids.shape, generator=generator).to(ids.device)]
    inputs = ids.masked_fill(chosen & (u < P_MASK), specials.mask_id)
    swap = chosen & (u >= P_MASK) & (u < P_MASK + P_RANDOM)
    inputs = torch.where(swap, random_ids, inputs)
    return inputs, labels


def next_token_labels(ids: torch.Tensor, specials: SpecialTokens) -> torch.Tensor:
    """The left-to-right twin's targets (Table 5, "LTR"): at position t the token at t + 1, unless that is a
    special token ([SEP], [PAD], ...) or past the end: IGNORE_INDEX."""
    labels = torch.full_like(ids, IGNORE_INDEX)
    nxt = ids[:, 1:]
    labels[:, :-1] = nxt.masked_fill(torch.isin(nxt, torch.tensor(specials.special_ids, device=ids.device)),
                                     IGNORE_INDEX)
    return labels


# ----------------------------------------------------------------------------- Task #2: sentence pairs

def document_level(docs: Iterable) -> list:
    """The documents whose lines follow one another (§3.2: "it is critical to use a document-level corpus
    rather than a shuffled sentence-level corpus"): sources of shuffled sentences (data.corpora.SHUFFLED_SOURCES)
    are left out, or every IsNext pair cut from them would be false."""
    from minilib.data.corpora import SHUFFLED_SOURCES

    return [d for d in docs if getattr(d, "source", None) not in SHUFFLED_SOURCES]


@dataclass
class DocumentStream:
    """Documents as one token stream with their boundaries: what the pairs are cut from.

    ids: every document's tokens, concatenated (int32). doc_bounds: (D + 1,) where each document
    starts, and the end. line_starts: sorted positions where a line starts (from_documents: a sentence,
    SENTENCE_END); every document start is one.
    """
    ids: np.ndarray
    doc_bounds: np.ndarray
    line_starts: np.ndarray

    @classmethod
    def from_token_lists(cls, docs: Iterable[Sequence[Sequence[int]]]) -> "DocumentStream":
        """From documents given as lists of lines of token ids (empty lines and documents are dropped)."""
        chunks, bounds, starts, pos = [], [0], [], 0
        for doc in docs:
            lines = [np.asarray(line, dtype=np.int32) for line in doc if len(line)]
            if not lines:
                continue
            for line in lines:
                starts.append(pos)
                chunks.append(line)
                pos += len(line)
            bounds.append(pos)
        if len(bounds) < 2:
            raise ValueError("no text: every document was empty")
        return cls(np.concatenate(chunks), np.asarray(bounds, dtype=np.int64), np.asarray(starts, dtype=np.int64))

    @classmethod
    def from_documents(cls, tokenizer, docs: Iterable, max_tokens: int | None = None) -> "DocumentStream":
        """Tokenize documents (objects with .text, or strings) sentence by sentence, without special tokens,
        stopping after the document that reaches `max_tokens` (but not before a second document).

        The "lines" of the stream are sentences (each line cut after . ! or ?), so a pair may start at any
        sentence of a long paragraph: starts are drawn per sentence, and each source is read about in
        proportion to its text (a one-line news article would otherwise offer one start, its first words)."""
        out, total = [], 0
        for d in docs:
            lines = [line for line in SENTENCE_END.split(getattr(d, "text", d)) if line.strip()]
            hf = getattr(tokenizer, "hf", None)
            ids = ([e.ids for e in hf.encode_batch(lines, add_special_tokens=False)] if hf is not None
                   else [tokenizer.encode(line) for line in lines])
            out.append(ids)
            total += sum(map(len, ids))
            if max_tokens is not None and total >= max_tokens and len(out) >= 2:   # NotNext needs 2 documents
                break
        return cls.from_token_lists(out)

    @property
    def n_docs(self) -> int:
        return len(self.doc_bounds) - 1

    def doc_of(self, pos: int) -> int:
        """The document holding stream position `pos`."""
        return int(np.searchsorted(self.doc_bounds, pos, side="right") - 1)


class Pair(NamedTuple):
    a: np.ndarray              # segment A's ids
    b: np.ndarray              # segment B's ids
    is_random_next: bool       # True: b comes from another document (NotNext, label 1)
    a_start: int               # where a and b start in the stream (for inspection and tests)
    b_start: int


class BERTBatch(NamedTuple):
    ids: torch.Tensor             # (B, T) [CLS] a [SEP] b [SEP] [PAD]..., masked for the MLM
    segments: torch.Tensor        # (B, T) 0 for [CLS] a [SEP] (and the padding), 1 for b [SEP]
    attention_mask: torch.Tensor  # (B, T) 1 at real tokens, 0 at padding
    labels: torch.Tensor          # (B, T) the token to predict at a scored position, IGNORE_INDEX elsewhere
    nsp_labels: torch.Tensor      # (B,) 0 IsNext, 1 NotNext


PAIRINGS = ("lines", "google", "doc-sentences")
SHORT_SEQ_PROB = 0.1   # create_pretraining_data.py: a tenth of the inputs aim at a random shorter length


class PairBatches:
    """BERT's pretraining batches: `steps` batches of `batch_size` pairs of at most `max_len` tokens.

    target="mlm": inputs masked by `mask_tokens`, labels at the masked positions (BERT, "No NSP").
    target="next": inputs unmasked, labels the next token (the left-to-right twin).
    p_random_next: the share of NotNext pairs (§3.1: 0.5); 0 gives only real continuations (the
    ablations without NSP train on the same contiguous text). Draws come from a generator seeded by
    (seed, epoch) (`set_epoch`), so iterating twice, or resuming, gives the same batches.
    pairing: how a pair is cut (`sample_pair`): "lines" (this book's: a from any sentence, b the rest of the
    span or as long a span of another document), "google" (Google's create_pretraining_data.py:
    `sample_google_pair`), "doc-sentences" (RoBERTa §4.2: one segment of whole sentences of one document,
    no b, no NSP).
    """

    def __init__(self, stream: DocumentStream, specials: SpecialTokens, batch_size: int, max_len: int,
                 steps: int, target: str = "mlm", p_random_next: float = 0.5, mask_prob: float = MASK_PROB,
                 seed: int = 0, pairing: str = "lines"):
        if target not in ("mlm", "next"):
            raise ValueError(f"target={target!r}: use 'mlm' (masked LM) or 'next' (left-to-right LM)")
        if pairing not in PAIRINGS:
            raise ValueError(f"pairing={pairing!r}: use one of {', '.join(PAIRINGS)}")
        if pairing == "doc-sentences" and p_random_next > 0:
            raise ValueError("pairing='doc-sentences' has one segment and no NotNext: give p_random_next=0")
        if max_len < 5:
            raise ValueError(f"max_len={max_len}: a pair needs room for [CLS] a [SEP] b [SEP], at least 5")
        if p_random_next > 0 and stream.n_docs < 2:
            raise ValueError("NotNext pairs need a second document to draw b from: give at least 2 documents")
        doc_end = stream.doc_bounds[np.searchsorted(stream.doc_bounds, stream.line_starts, side="right")]
        self.starts = stream.line_starts[doc_end - stream.line_starts >= 2]   # a and b need a token each
        if not len(self.starts):
            raise ValueError("no line has a second token after it in its document: nothing to cut a pair from")
        self.stream, self.specials, self.pairing = stream, specials, pairing
        self.batch_size, self.max_len, self.steps, self.target = batch_size, max_len, steps, target
        self.p_random_next, self.mask_prob, self.seed, self.epoch = p_random_next, mask_prob, seed, 0
        self.line_ends = np.append(stream.line_starts[1:], len(stream.ids))   # sentence k: [starts[k], ends[k])

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def __len__(self) -> int:
        return self.steps

    def sample_pair(self, rng: np.random.Generator) -> Pair:
        """One pair cut as `pairing` says; len(a) + len(b) ≤ max_len - 3 (max_len - 2 with no b)."""
        if self.pairing == "google":
            return self.sample_google_pair(rng)
        if self.pairing == "doc-sentences":
            return self.sample_doc_sentences(rng)
        return self.sample_line_pair(rng)

    def sample_line_pair(self, rng: np.random.Generator) -> Pair:
        """This book's pair: a from a random line start, b its continuation or (p_random_next) as long a span
        of another document's text, both inside the max_len - 3 tokens after a's start."""
        s, budget = self.stream, self.max_len - 3
        a_start = int(self.starts[rng.integers(len(self.starts))])
        doc = s.doc_of(a_start)
        end = min(int(s.doc_bounds[doc + 1]), a_start + budget)                 # the span a and b share
        lo, hi = np.searchsorted(s.line_starts, [a_start + 1, end])             # line starts inside (a_start, end)
        cut = int(s.line_starts[rng.integers(lo, hi)]) if hi > lo else a_start + int(rng.integers(1, end - a_start))
        b_len = end - cut
        if rng.random() < self.p_random_next:                                   # NotNext: b from another document
            b_start = int(s.line_starts[self._line_in_another_document(rng, doc)])
            other = s.doc_of(b_start)
            b = s.ids[b_start:min(int(s.doc_bounds[other + 1]), b_start + b_len)]
            return Pair(s.ids[a_start:cut], b, True, a_start, b_start)
        return Pair(s.ids[a_start:cut], s.ids[cut:end], False, a_start, cut)

    def _line_in_another_document(self, rng: np.random.Generator, doc: int) -> int:
        """A random line (sentence) index whose document is not `doc`: where a NotNext b starts."""
        s = self.stream
        while True:
            k = int(rng.integers(len(s.line_starts)))
            if s.doc_of(int(s.line_starts[k])) != doc:
                return k

    def _sentences_from(self, k: int, target: int) -> list[int]:
        """Sentence indices k, k + 1, ... of k's document until their tokens reach `target` (or it ends)."""
        s = self.stream
        doc_end, taken, length = int(s.doc_bounds[s.doc_of(int(s.line_starts[k])) + 1]), [], 0
        while k < len(s.line_starts) and s.line_starts[k] < doc_end and length < target:
            taken.append(k)
            length += int(self.line_ends[k] - s.line_starts[k])
            k += 1
        return taken

    def _span(self, sentences: list[int]) -> np.ndarray:
        return self.stream.ids[int(self.stream.line_starts[sentences[0]]):int(self.line_ends[sentences[-1]])]

    def sample_google_pair(self, rng: np.random.Generator) -> Pair:
        """A pair as Google's create_instances_from_document cuts it: a chunk of whole sentences from a random
        sentence start that reaches the target length (max_len - 3, or 10 % of the time a length drawn from
        2 .. max_len - 3); a = its first 1 .. n-1 sentences; b = the rest (IsNext) or, half of the time and
        always when the chunk is one sentence, whole sentences from a random sentence of another document
        until the target is filled (NotNext). The released code walks each document in order and puts the
        chunk's unused tail back for the next instance; drawing each chunk's start at random needs no
        putting back. The longer of a and b then loses a token from its front or back at random
        (truncate_seq_pair) until both fit."""
        s, budget = self.stream, self.max_len - 3
        target = budget if rng.random() >= SHORT_SEQ_PROB else int(rng.integers(2, budget + 1))
        chunk = self._sentences_from(int(rng.integers(len(s.line_starts))), target)
        a_end = 1 if len(chunk) < 2 else int(rng.integers(1, len(chunk)))
        a = self._span(chunk[:a_end])
        if len(chunk) == 1 or rng.random() < self.p_random_next:
            k = self._line_in_another_document(rng, s.doc_of(int(s.line_starts[chunk[0]])))
            b_sentences, is_random = self._sentences_from(k, max(target - len(a), 1)), True
        else:
            b_sentences, is_random = chunk[a_end:], False
        b = self._span(b_sentences)
        a_lo, a_hi, b_lo, b_hi = 0, len(a), 0, len(b)
        while (a_hi - a_lo) + (b_hi - b_lo) > budget:     # truncate_seq_pair: the longer side, front or back
            front = rng.random() < 0.5
            if a_hi - a_lo > b_hi - b_lo:
                a_lo, a_hi = (a_lo + 1, a_hi) if front else (a_lo, a_hi - 1)
            else:
                b_lo, b_hi = (b_lo + 1, b_hi) if front else (b_lo, b_hi - 1)
        a_start, b_start = int(s.line_starts[chunk[0]]), int(s.line_starts[b_sentences[0]])
        return Pair(a[a_lo:a_hi], b[b_lo:b_hi], is_random, a_start + a_lo, b_start + b_lo)

    def sample_doc_sentences(self, rng: np.random.Generator) -> Pair:
        """RoBERTa's DOC-SENTENCES input (§4.2): whole sentences of one document from a random sentence start,
        as many as fit max_len - 2 (a first sentence longer than that is cut), as one segment; no b."""
        s, budget = self.stream, self.max_len - 2
        sentences = self._sentences_from(int(rng.integers(len(s.line_starts))), budget)
        while len(sentences) > 1 and self.line_ends[sentences[-1]] - s.line_starts[sentences[0]] > budget:
            sentences.pop()
        a = self._span(sentences)[:budget]
        return Pair(a, a[:0], False, int(s.line_starts[sentences[0]]), int(s.line_starts[sentences[0]]) + len(a))

    def collate(self, pairs: Sequence[Pair], generator: torch.Generator | None = None) -> BERTBatch:
        """Pairs → a BERTBatch padded to max_len, masked (target "mlm") or with next-token labels."""
        sp, T = self.specials, self.max_len
        ids = np.full((len(pairs), T), sp.pad_id, dtype=np.int64)
        segments = np.zeros((len(pairs), T), dtype=np.int64)
        for i, p in enumerate(pairs):
            na, nb = len(p.a), len(p.b)
            if nb == 0:                                   # one segment (doc-sentences): [CLS] a [SEP]
                ids[i, :na + 2] = [sp.cls_id, *p.a, sp.sep_id]
                continue
            ids[i, :na + nb + 3] = [sp.cls_id, *p.a, sp.sep_id, *p.b, sp.sep_id]
            segments[i, na + 2:na + nb + 3] = 1
        ids, segments = torch.from_numpy(ids), torch.from_numpy(segments)
        attention_mask = (ids != sp.pad_id).long()
        nsp = torch.tensor([int(p.is_random_next) for p in pairs])
        if self.target == "mlm":
            inputs, labels = mask_tokens(ids, sp, generator, self.mask_prob)
        else:
            inputs, labels = ids, next_token_labels(ids, sp)
        return BERTBatch(inputs, segments, attention_mask, labels, nsp)

    def __iter__(self):
        rng = np.random.default_rng((self.seed, self.epoch))
        for _ in range(self.steps):
            pairs = [self.sample_pair(rng) for _ in range(self.batch_size)]
            generator = torch.Generator().manual_seed(int(rng.integers(2 ** 62)))
            yield self.collate(pairs, generator)
