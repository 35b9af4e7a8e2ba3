"""BERT: the masking rule and NSP pairs (§3.1), the encoder and its heads, the ablation twins, equal compute,
pretraining with resume and the checkpoint. Each test was checked against a planted error (see the commit)."""
from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from minilib.data.corpora import Document
from minilib.data.mlm import (IGNORE_INDEX, BERTBatch, DocumentStream, PairBatches, SpecialTokens, mask_tokens,
                              next_token_labels)
from minilib.models.bert import BERT, BERTConfig, bert_config

SP = SpecialTokens(cls_id=2, sep_id=3, pad_id=0, mask_id=4, vocab_size=1000, special_ids=(0, 1, 2, 3, 4))


def tiny(objective="mlm+nsp", vocab=1000, **kw) -> BERT:
    torch.manual_seed(0)
    return BERT(bert_config(vocab, "smoke", objective, dropout=0.0, block_size=32, **kw)).eval()


def within(count: int, n: int, p: float, sigmas: float = 4.0) -> bool:
    """count of n Bernoulli(p) draws within `sigmas` standard deviations of n·p."""
    return abs(count - n * p) <= sigmas * math.sqrt(n * p * (1 - p))


def numbered_docs(n_docs=12, lines=8, line_len=(3, 30), seed=0):
    """Documents whose token ids say where they are: document k holds ids 1000·(k+1) + its position,
    so a pair's source and adjacency can be read from its ids."""
    rng = np.random.default_rng(seed)
    docs = []
    for k in range(n_docs):
        lengths = rng.integers(*line_len, lines)
        starts = np.concatenate([[0], np.cumsum(lengths)])
        docs.append([list(range(1000 * (k + 1) + a, 1000 * (k + 1) + b)) for a, b in zip(starts[:-1], starts[1:])])
    return docs


# ----------------------------------------------------------------------------- Task #1: masking

def test_masking_rates_are_15_then_80_10_10_within_binomial_bounds():
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(5, SP.vocab_size, (4000, 40), generator=g)
    ids[:, 0], ids[:, 20], ids[:, -1] = SP.cls_id, SP.sep_id, SP.sep_id          # 37 real tokens a row
    inputs, labels = mask_tokens(ids, SP, g)
    chosen = labels != IGNORE_INDEX
    assert (chosen.sum(1) == round(0.15 * 37)).all()                              # the released code's fixed count
    assert torch.equal(labels[chosen], ids[chosen])                               # labels: the original tokens
    assert torch.equal(inputs[~chosen], ids[~chosen])                             # nothing else is touched
    n = int(chosen.sum())
    masked = int((inputs[chosen] == SP.mask_id).sum())
    replaced = int(((inputs[chosen] != SP.mask_id) & (inputs[chosen] != ids[chosen])).sum())
    kept = int((inputs[chosen] == ids[chosen]).sum())
    p_same = 1 / (SP.vocab_size - 5)                                              # a random draw may hit the original
    assert within(masked, n, 0.8), masked / n
    assert within(replaced, n, 0.1 * (1 - p_same)), replaced / n
    assert within(kept, n, 0.1 + 0.1 * p_same), kept / n
    # which positions are chosen: every real position equally often (uniform), within bounds
    per_position = chosen.sum(0)[1:20]
    assert all(within(int(c), 4000, round(0.15 * 37) / 37) for c in per_position)


def test_special_tokens_are_never_chosen_nor_drawn():
    sp = dataclasses.replace(SP, vocab_size=20)                                  # a random id would be special 1 in 4
    g = torch.Generator().manual_seed(1)
    ids = torch.randint(0, 5, (500, 30), generator=g)                             # mostly specials ...
    ids[:, ::3] = torch.randint(5, sp.vocab_size, (500, 10), generator=g)         # ... a third real tokens
    ids[0] = sp.pad_id                                                            # a row with no real token
    inputs, labels = mask_tokens(ids, sp, g)
    special = torch.isin(ids, torch.tensor(sp.special_ids))
    assert (labels[special] == IGNORE_INDEX).all() and torch.equal(inputs[special], ids[special])
    assert (labels[0] == IGNORE_INDEX).all()
    chosen = labels != IGNORE_INDEX
    assert (chosen.sum(1)[1:] == 2).all()                                         # round(0.15 · 10) = 2 per row
    swapped = inputs[chosen & (inputs != sp.mask_id)]
    assert len(swapped) > 100 and not torch.isin(swapped, torch.tensor([0, 1, 2, 3])).any()   # never special


def test_next_token_labels_are_the_following_real_token():
    ids = torch.tensor([[2, 10, 11, 3, 12, 3, 0, 0]])
    assert next_token_labels(ids, SP).tolist() == [[10, 11, IGNORE_INDEX, 12, IGNORE_INDEX, IGNORE_INDEX,
                                                     IGNORE_INDEX, IGNORE_INDEX]]


# ----------------------------------------------------------------------------- Task #2: pairs

def test_nsp_pairs_half_not_next_and_is_next_really_follows():
    stream = DocumentStream.from_token_lists(numbered_docs())
    batches = PairBatches(stream, dataclasses.replace(SP, vocab_size=20_000), batch_size=8, max_len=48, steps=1)
    rng = np.random.default_rng(0)
    pairs = [batches.sample_pair(rng) for _ in range(4000)]
    n_random = sum(p.is_random_next for p in pairs)
    assert within(n_random, len(pairs), 0.5), n_random / len(pairs)
    line_starts = set(stream.line_starts.tolist())
    for p in pairs:
        doc_a, doc_b = int(p.a[0]) // 1000, int(p.b[0]) // 1000
        assert len(p.a) >= 1 and len(p.b) >= 1 and len(p.a) + len(p.b) <= 48 - 3
        assert p.a_start in line_starts                                           # a starts at a line
        assert np.array_equal(np.diff(p.a), np.ones(len(p.a) - 1))                # contiguous text of one document
        assert np.array_equal(np.diff(p.b), np.ones(len(p.b) - 1))
        assert int(p.a[-1]) // 1000 == doc_a and int(p.b[-1]) // 1000 == doc_b
        if p.is_random_next:
            assert doc_b != doc_a                                                 # NotNext: another document
        else:
            assert doc_b == doc_a and p.b[0] == p.a[-1] + 1 and p.b_start == p.a_start + len(p.a)   # IsNext
    # NotNext b is as long as the real continuation would be (capped by its own document): no length cue
    lengths = {flag: np.mean([len(p.b) for p in pairs if p.is_random_next == flag]) for flag in (True, False)}
    assert abs(lengths[True] - lengths[False]) < 0.15 * lengths[False], lengths


def test_google_pairs_are_whole_sentences_and_fill_the_target():
    """create_pretraining_data.py's pairs: a and b are whole sentences (unless truncate_seq_pair trimmed the
    longer side), IsNext b follows a, NotNext b is another document's, a one-sentence chunk is always NotNext,
    and most pairs fill max_len - 3 (the 10 % short targets aside)."""
    stream = DocumentStream.from_token_lists(numbered_docs(lines=60, line_len=(3, 12)))   # long documents
    batches = PairBatches(stream, dataclasses.replace(SP, vocab_size=20_000), 8, 48, 1, pairing="google")
    rng = np.random.default_rng(0)
    pairs = [batches.sample_pair(rng) for _ in range(3000)]
    starts, ends = set(stream.line_starts.tolist()), set(batches.line_ends.tolist())
    whole = 0
    for p in pairs:
        assert len(p.a) >= 1 and len(p.b) >= 1 and len(p.a) + len(p.b) <= 45
        assert np.array_equal(np.diff(p.a), np.ones(len(p.a) - 1)) and np.array_equal(np.diff(p.b), np.ones(len(p.b) - 1))
        doc_a, doc_b = int(p.a[0]) // 1000, int(p.b[0]) // 1000
        assert (doc_a != doc_b) == p.is_random_next
        if not p.is_random_next:
            assert p.b[0] > p.a[-1]                                 # after a (truncation may trim between)
        if len(p.a) + len(p.b) < 45:                                # nothing truncated: whole sentences
            assert p.a_start in starts and p.b_start in starts and p.a_start + len(p.a) in ends
            whole += 1
    assert whole > 0.05 * len(pairs)
    full = np.mean([len(p.a) + len(p.b) >= 45 - 11 for p in pairs])  # within one sentence of the target
    assert full > 0.8, full
    n_random = sum(p.is_random_next for p in pairs)
    assert 0.5 < n_random / len(pairs) < 0.7                        # 0.5, plus the one-sentence chunks


def test_doc_sentences_are_one_segment_of_whole_sentences():
    stream = DocumentStream.from_token_lists(numbered_docs(line_len=(3, 12)))
    batches = PairBatches(stream, dataclasses.replace(SP, vocab_size=20_000), 16, 48, 1, p_random_next=0.0,
                          pairing="doc-sentences")
    b = next(iter(batches))
    original = torch.where(b.labels != IGNORE_INDEX, b.labels, b.ids)
    for row in range(16):
        n = int(b.attention_mask[row].sum())
        seq = original[row, :n].tolist()
        assert seq[0] == SP.cls_id and seq[-1] == SP.sep_id and seq.count(SP.sep_id) == 1
        assert (b.segments[row] == 0).all() and len({t // 1000 for t in seq[1:-1]}) == 1   # one document
    with pytest.raises(ValueError, match="NotNext"):
        PairBatches(stream, SP, 2, 40, 1, pairing="doc-sentences")


def test_nsp_weight_zero_trains_bert_pairs_on_the_masked_lm_alone():
    from minilib.recipes.bert import PretrainingLoss

    stream = DocumentStream.from_token_lists(numbered_docs())
    sp = dataclasses.replace(SP, vocab_size=20_000)
    batch = next(iter(PairBatches(stream, sp, 8, 32, 1)))
    model = BERT(bert_config(20_000, "smoke", "mlm+nsp", dropout=0.0, block_size=32))
    full, parts = PretrainingLoss(model)(*batch)
    assert torch.allclose(full, parts["mlm_loss"] + parts["nsp_loss"])
    zero, _ = PretrainingLoss(model, nsp_weight=0.0)(*batch)
    zero.backward()
    assert torch.allclose(zero, parts["mlm_loss"]) and model.nsp_head.weight.grad.abs().sum() == 0


def test_batches_lay_out_cls_a_sep_b_sep_and_repeat_per_epoch():
    sp = dataclasses.replace(SP, vocab_size=20_000)
    stream = DocumentStream.from_token_lists(numbered_docs())
    batches = PairBatches(stream, sp, batch_size=16, max_len=40, steps=3, seed=5)
    first = list(batches)
    assert all(torch.equal(a.ids, b.ids) and torch.equal(a.labels, b.labels) for a, b in zip(first, batches))
    batches.set_epoch(1)
    assert not torch.equal(first[0].ids, next(iter(batches)).ids)
    b = first[0]
    assert isinstance(b, BERTBatch) and b.ids.shape == b.segments.shape == b.labels.shape == (16, 40)
    original = torch.where(b.labels != IGNORE_INDEX, b.labels, b.ids)
    for row in range(16):
        n = int(b.attention_mask[row].sum())
        seq = original[row, :n].tolist()
        assert (b.attention_mask[row, :n] == 1).all() and (b.ids[row, n:] == sp.pad_id).all()
        sep = seq.index(sp.sep_id)
        assert seq[0] == sp.cls_id and seq[-1] == sp.sep_id and seq.count(sp.sep_id) == 2
        assert b.segments[row].tolist() == [0] * (sep + 1) + [1] * (n - sep - 1) + [0] * (40 - n)
        doc_a, doc_b = seq[1] // 1000, seq[sep + 1] // 1000
        assert (doc_a != doc_b) == bool(b.nsp_labels[row])                        # the label says which
    ltr = PairBatches(stream, sp, batch_size=4, max_len=40, steps=1, target="next", p_random_next=0.0)
    b = next(iter(ltr))
    assert (b.nsp_labels == 0).all() and not (b.ids == sp.mask_id).any()
    assert torch.equal(b.labels, next_token_labels(b.ids, sp))
    with pytest.raises(ValueError, match="second document"):
        PairBatches(DocumentStream.from_token_lists(numbered_docs(1)), sp, 2, 40, 1)


# ----------------------------------------------------------------------------- the model

def test_config_builds_the_three_objectives():
    assert bert_config(100, "laptop").causal is False and bert_config(100, "full").norm == "post"
    assert bert_config(100, "smoke", "ltr").causal is True
    with pytest.raises(ValueError, match="causal"):
        BERTConfig(vocab_size=100, objective="mlm", causal=True)
    with pytest.raises(ValueError, match="objective"):
        bert_config(100, "smoke", "rtl")
    assert hasattr(tiny(), "nsp_head") and not hasattr(tiny("mlm"), "nsp_head") and not hasattr(tiny("ltr"), "pooler")


def test_logits_only_at_masked_positions_equal_the_full_logits_there():
    model = tiny()
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(5, 1000, (3, 32), generator=g)
    ids[:, 0] = SP.cls_id
    inputs, labels = mask_tokens(ids, SP, g)
    segments = torch.zeros_like(ids)
    segments[:, 16:] = 1
    nsp = torch.tensor([0, 1, 0])
    out = model(inputs, segments, None, labels, nsp)
    rows = labels != IGNORE_INDEX
    assert out.mlm_logits.shape == (int(rows.sum()), 1000)
    full = model(inputs, segments)
    torch.testing.assert_close(out.mlm_logits, full.mlm_logits[rows], rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(out.mlm_loss, F.cross_entropy(full.mlm_logits[rows], labels[rows]), rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(out.nsp_loss, F.cross_entropy(full.nsp_logits, nsp))
    torch.testing.assert_close(out.loss, out.mlm_loss + out.nsp_loss)              # §A.2: their sum
    assert tiny("mlm")(inputs, segments, None, labels, nsp).nsp_loss is None


def test_decoder_is_the_token_embedding_with_its_own_bias():
    model = tiny()
    assert model.mlm.decoder.weight is model.tok_emb.weight
    assert model.mlm.decoder.bias.shape == (1000,)
    h = torch.randn(2, 64)
    with torch.no_grad():
        model.mlm.decoder.bias.fill_(0.5)
    torch.testing.assert_close(model.mlm(h), model.mlm.ln(F.gelu(model.mlm.dense(h), approximate="tanh"))
                               @ model.tok_emb.weight.t() + 0.5)
    # one weight counted once; position and segment embeddings are not "non-embedding" parameters
    every = sum(v.numel() for k, v in model.state_dict().items() if k != "mlm.decoder.weight")
    assert model.num_params(False) == every
    assert model.num_params() == every - 32 * 64 - 2 * 64


@pytest.mark.parametrize("objective", ["mlm+nsp", "ltr"])
def test_padding_never_changes_the_real_positions(objective):
    model = tiny(objective)
    ids = torch.randint(5, 1000, (1, 20))
    segments = torch.cat([torch.zeros(1, 12, dtype=torch.long), torch.ones(1, 8, dtype=torch.long)], 1)
    alone = model.hidden(ids, segments)
    junk = torch.randint(5, 1000, (1, 12))                                        # padding with arbitrary ids
    padded_ids = torch.cat([ids, junk], 1)
    padded_seg = torch.cat([segments, torch.ones(1, 12, dtype=torch.long)], 1)
    mask = torch.cat([torch.ones(1, 20), torch.zeros(1, 12)], 1).long()
    padded = model.hidden(padded_ids, padded_seg, mask)
    torch.testing.assert_close(padded[:, :20], alone, rtol=1e-5, atol=1e-5)
    unmasked = model.hidden(padded_ids, padded_seg)                               # without the mask it would leak
    if objective != "ltr":
        assert not torch.allclose(unmasked[:, :20], alone, atol=1e-3)


def test_the_left_to_right_twin_never_looks_ahead_and_bert_does():
    ids = torch.randint(5, 1000, (2, 24))
    later = ids.clone()
    later[:, 15] = (later[:, 15] + 7) % 995 + 5                                    # change one token at t = 15
    for objective in ("ltr", "mlm"):
        model = tiny(objective)
        a, b = model.hidden(ids), model.hidden(later)
        same = torch.isclose(a, b, rtol=1e-5, atol=1e-6).all(-1).all(0)           # (T,) position unchanged
        if objective == "ltr":
            assert same[:15].all() and not same[15:].any()
        else:
            assert not same[:15].any()                                            # every position sees both sides


# ----------------------------------------------------------------------------- equal compute, pretraining

def test_laptop_budget_is_gpt_laptops_compute():
    from minilib.models.gpt import GPT, gpt_config
    from minilib.recipes.bert import BERTPretrainConfig, equal_compute_tokens
    from minilib.recipes.gpt import GPTPretrainConfig

    gpt = GPTPretrainConfig.for_profile("laptop")
    with torch.device("meta"):
        n_gpt = GPT(gpt_config(8000, "laptop")).num_params()
        n_bert = BERT(bert_config(8000, "laptop")).num_params()
    tokens = equal_compute_tokens("laptop")
    assert abs(tokens * n_bert - n_gpt * gpt.steps * gpt.batch_size * 128) <= n_bert   # rounding only
    cfg = BERTPretrainConfig.for_profile("laptop")
    assert abs(cfg.steps * cfg.batch_size * 128 - tokens) <= cfg.batch_size * 128 / 2
    assert BERTPretrainConfig.for_profile("laptop", "ltr").steps > cfg.steps      # no pooler / NSP head: fewer params
    assert BERTPretrainConfig.for_profile("laptop", steps=7).steps == 7


TEXTS = [Document("test", str(i), None, text) for i, text in enumerate([
    "The cat sat on the mat.\nIt purred all night.\nThe dog did not mind.",
    "Markets fell sharply on Monday.\nInvestors sold shares of banks.\nBonds rose.",
    "The president said the budget would pass.\nCongress voted on Friday.\nIt passed.",
    "She read the book in one night.\nThe ending surprised her.\nShe read it again."] * 6)]


def test_pretrain_resumes_exactly_and_saves_a_loadable_checkpoint(tmp_path, monkeypatch, one_thread):
    from minilib.data.tokenizer import train_wordpiece
    from minilib.models import pretrained
    from minilib.recipes import bert as recipe

    monkeypatch.setitem(pretrained.KINDS, "bert", pretrained.ModelKind(BERT, BERTConfig, {"mlm.decoder.weight":
                                                                                            "tok_emb.weight"}))
    tok = train_wordpiece([d.text for d in TEXTS], 200, min_char_count=1)
    cfg = recipe.BERTPretrainConfig.for_profile("smoke", steps=6, batch_size=4, eval_every=3, valid_batches=2)
    run = dict(progress=False, log=lambda *_: None)
    whole = recipe.pretrain_bert(cfg, TEXTS, TEXTS[:8], tmp_path / "a.pt", tok, checkpoint_dir=tmp_path / "a", **run)
    assert [p["step"] for p in whole["curve"]] == [0, 3, 6] and (tmp_path / "a/snapshots/step-000006.pt").exists()
    assert whole["steps"] == 6 and 0 <= whole["valid_nsp_accuracy"] <= 1
    assert all("valid_mask_nats" in p for p in whole["curve"]) and whole["valid_mask_nats"] > 0

    class Interrupt(recipe.StopAfter):                                            # Ctrl-C after step 4
        def after_step(self, learner):
            if learner.step >= self.steps:
                raise KeyboardInterrupt

    monkeypatch.setattr(recipe, "StopAfter", Interrupt)
    with pytest.raises(KeyboardInterrupt):
        recipe.pretrain_bert(cfg, TEXTS, TEXTS[:8], tmp_path / "b.pt", tok, checkpoint_dir=tmp_path / "b",
                             max_steps=4, **run)
    resumed = recipe.pretrain_bert(cfg, TEXTS, TEXTS[:8], tmp_path / "b.pt", tok, checkpoint_dir=tmp_path / "b", **run)
    assert resumed["curve"] == whole["curve"] and resumed["valid_nats_per_token"] == whole["valid_nats_per_token"]

    back = pretrained.load_pretrained(tmp_path / "a.pt", "bert")
    assert back.model.mlm.decoder.weight is back.model.tok_emb.weight and back.vocab.mask_id == tok.mask_id
    assert back.meta["metrics"]["objective"] == "mlm+nsp"
    batches = list(recipe.batches_for(DocumentStream.from_documents(tok, TEXTS[:8]), SpecialTokens.of(tok), cfg,
                                      2, 64, cfg.seed))
    rescored = recipe.held_out_scores(back.model, batches)["valid_nats_per_token"]
    assert rescored == pytest.approx(whole["valid_nats_per_token"], rel=1e-6)     # the JSON's number, re-measured


# ----------------------------------------------------------------------------- fine-tuning (§4)

CLS, SEP = SP.cls_id, SP.sep_id


def test_classifier_reads_cls_sees_both_segments_and_ignores_padding():
    from minilib.models.bert import BERTClassifier

    model = BERTClassifier(tiny(), 3, CLS, SEP).eval()
    a, b = [10, 11, 12], [20, 21]
    one = torch.tensor([model.transform(a, b)])
    assert one[0].tolist() == [CLS, 10, 11, 12, SEP, 20, 21, SEP]
    padded = torch.cat([one, torch.zeros(1, 4, dtype=torch.long)], 1)
    alone = model(one, torch.tensor([8]))
    assert torch.allclose(model(padded, torch.tensor([8])), alone, atol=1e-5)         # padding is masked out
    swapped = torch.tensor([model.transform(a, [20, 22])])
    assert not torch.allclose(model(swapped, torch.tensor([8])), alone)                # [CLS] sees the last word
    segments = []
    model.bert.hidden = lambda ids, seg, mask: segments.append(seg) or torch.zeros(*ids.shape, 64)
    model(padded, torch.tensor([8]))
    assert segments[0][0, :8].tolist() == [0, 0, 0, 0, 0, 1, 1, 1]                     # Figure 2: A then B
    assert len(model.transform(list(range(100, 160)), [7] * 10)) == model.block_size   # cut to fit, b kept


def test_left_to_right_classifier_reads_the_last_token_and_never_the_future():
    from minilib.models.bert import BERTClassifier

    model = BERTClassifier(tiny("ltr"), 2, CLS, SEP).eval()
    assert not hasattr(model.bert, "pooler") and model.reads_last
    x = torch.tensor([model.transform([10, 11, 12])])
    y = x.clone()
    y[0, 3] = 13                                                                       # the last word changes
    assert not torch.allclose(model(x, torch.tensor([5])), model(y, torch.tensor([5])))
    h = model.encode(x, torch.tensor([5]))
    assert torch.allclose(h[:, :3], model.encode(y, torch.tensor([5]))[:, :3], atol=1e-6)   # causal: no look ahead


def test_tagger_reads_first_pieces_the_twin_last_pieces_and_drops_what_does_not_fit():
    from minilib.models.bert import BERTTagger

    words = [[10], [11, 12, 13], [14, 15]]
    bert = BERTTagger(tiny(), 5, CLS, SEP).eval()
    ltr = BERTTagger(tiny("ltr"), 5, CLS, SEP)
    ids, at = bert.transform_words(words)
    assert ids == [CLS, 10, 11, 12, 13, 14, 15, SEP] and at == [1, 2, 5]               # §5.3: first sub-token
    assert ltr.transform_words(words) == (ids, [1, 4, 6])                              # each word's last piece
    ids, at = bert.transform_words([[7, 8]] * 40)                                      # 32 positions: 15 words fit
    assert len(ids) <= bert.block_size and len(at) == 15 and ids[-1] == SEP
    logits = bert(torch.tensor([ids]), torch.tensor([len(ids)]), torch.tensor([at + [-1]]))
    assert logits.shape == (1, 16, 5)
    loss, _ = bert(torch.tensor([ids]), torch.tensor([len(ids)]), torch.tensor([at + [-1]]),
                   torch.tensor([[1] * 15 + [4]]))
    manual = F.cross_entropy(logits[0, :15], torch.ones(15, dtype=torch.long))
    assert loss.item() == pytest.approx(manual.item(), rel=1e-5)                       # the padded word is ignored


def test_the_ablations_share_berts_recipe_and_the_search_holds_the_papers_grid():
    from minilab.experiments import bert_finetune as bf
    from minilab import shipped

    grid_a3 = {(c["lr"], c["epochs"], c["batch_size"]) for c in bf.CANDIDATES.values()}
    assert {(lr, e, b) for lr in (5e-5, 3e-5, 2e-5) for e in (2, 3, 4) for b in (16, 32)} <= grid_a3
    assert bf.method_config("bert-mlm", "laptop") == bf.method_config("bert-ltr", "laptop") == \
        bf.method_config("bert", "laptop")
    assert not bf.method_config("bert-scratch", "laptop").pretrained
    assert bf.default_checkpoint("bert-ltr", "smoke") == shipped.checkpoint("bert-ltr", "laptop")   # smoke reads laptop's
    assert bf.default_checkpoint("bert-scratch", "laptop").name == "bert-laptop.pt"
    assert bf.default_checkpoint("bert-mlm", "laptop", (2, 128)).name == "bert-mlm-laptop-2x128.pt"


@pytest.fixture(scope="module")
def tiny_checkpoints(tmp_path_factory):
    """A BERT and its left-to-right twin, pretrained for a few steps on a few sentences (smoke shape)."""
    from minilib.data.tokenizer import train_wordpiece
    from minilib.recipes import bert as recipe

    torch.set_num_threads(1)
    out = tmp_path_factory.mktemp("bert")
    tok = train_wordpiece([d.text for d in TEXTS], 200, min_char_count=1)
    paths = {}
    for objective in ("mlm+nsp", "ltr"):
        cfg = recipe.BERTPretrainConfig.for_profile("smoke", objective, steps=2, batch_size=4, eval_every=2,
                                                    valid_batches=1)
        paths[objective] = out / f"{objective}.pt"
        recipe.pretrain_bert(cfg, TEXTS, TEXTS[:8], paths[objective], tok, progress=False, log=lambda *_: None)
    return paths


@pytest.mark.data
@pytest.mark.parametrize("task,method,objective", [("trec", "bert", "mlm+nsp"), ("pos", "bert-ltr", "ltr"),
                                                   ("pos", "bert-scratch", "mlm+nsp")])
def test_a_bert_point_fine_tunes_and_scores_once(task, method, objective, tiny_checkpoints, tmp_path, monkeypatch):
    from minilab.experiments import grid

    monkeypatch.setenv("MINILIB_PROFILE", "smoke")                  # one epoch, 200 test items
    where = dict(checkpoint=tiny_checkpoints[objective], results_dir=tmp_path)
    row = grid.run_point(task, 20, method, 0, **where)
    assert 0 <= row["error"] <= 1 and len(row["curve"]) == 1 and row["objective"] == objective
    assert (row["pretrained"] is None) == (method == "bert-scratch")
    assert grid.run_point(task, 20, method, 0, **where) == row                        # cached


@pytest.mark.data
def test_ablations_of_another_shape_are_cached_apart_from_the_chapters(tiny_checkpoints, tmp_path, monkeypatch):
    from minilab.experiments import bert_finetune as bf
    from minilab.experiments import store

    monkeypatch.setenv("MINILIB_PROFILE", "smoke")
    monkeypatch.setattr(store, "RESULTS", tmp_path)
    asked = []

    def checkpoint(method, profile=None, shape=None):
        asked.append(shape)
        return tiny_checkpoints["ltr" if method == "bert-ltr" else "mlm+nsp"]

    monkeypatch.setattr(bf, "default_checkpoint", checkpoint)
    rows = bf.ablation_rows("trec", [20], [0], (1, 64), log=None)
    assert [r["method"] for r in rows] == list(bf.ABLATIONS) and set(asked) == {(1, 64)}
    assert sorted(p.name for p in (tmp_path / "bert-1x64").iterdir()) == sorted(
        f"trec-{m}-n20-s0-smoke.json" for m in bf.ABLATIONS)
    assert bf.ablation_rows("trec", [20], [0], (1, 64), cached_only=True) == rows
    assert bf.ablation_rows("trec", [20], [0], cached_only=True) == []          # the chapter's shape: not these
    other = bf.ablation_rows("trec", [20], [0], (1, 64), methods=("bert-mlm",), checkpoint=tiny_checkpoints["ltr"],
                             results_dir=tmp_path / "other", log=None)
    assert other[0]["checkpoint_sha256"] != rows[1]["checkpoint_sha256"] and other[0]["method"] == "bert-mlm"


def test_cloze_guesses_each_blank_bert_from_both_sides_the_lm_from_the_left():
    from minilib.data.tokenizer import train_bpe, train_wordpiece
    from minilib.eval.cloze import bert_cloze, left_to_right_cloze
    from minilib.models.gpt import GPT, gpt_config

    texts = [d.text for d in TEXTS]
    wordpiece, bpe = train_wordpiece(texts, 200, min_char_count=1), train_bpe(texts, 300)
    bert = tiny(vocab=wordpiece.vocab_size)
    one = bert_cloze(bert, wordpiece, "the [MASK] sat on the mat .", k=5)
    other = bert_cloze(bert, wordpiece, "the [mask] sat on the rug .", k=5)
    assert len(one) == 1 and len(one[0].tokens) == 5 and sorted(one[0].probs, reverse=True) == one[0].probs
    assert one[0].probs != other[0].probs                                 # BERT reads the words after the blank
    assert not set(one[0].ids) & set(wordpiece.specials.values())         # never a special token
    torch.manual_seed(0)
    gpt = GPT(gpt_config(bpe.vocab_size, "smoke", block_size=32)).eval()
    left = left_to_right_cloze(gpt, bpe, "The [MASK] sat on the mat.", k=5)
    assert left == left_to_right_cloze(gpt, bpe, "The [MASK] barked at the dog.", k=5)   # it never reads the right
    two = left_to_right_cloze(gpt, bpe, "The [MASK] sat on the [MASK].", k=3)
    assert len(two) == 2 and two[0] == left_to_right_cloze(gpt, bpe, "The [MASK]", k=3)[0]
    with pytest.raises(ValueError, match="no \\[MASK\\]"):
        bert_cloze(bert, wordpiece, "the cat sat")


def test_blank_scores_hide_the_token_from_bert_and_the_right_side_from_the_twin(monkeypatch):
    from minilib.data.tokenizer import train_wordpiece
    from minilib.eval import cloze

    wordpiece = train_wordpiece([d.text for d in TEXTS], 200, min_char_count=1)
    bert, ltr = tiny(vocab=wordpiece.vocab_size), tiny("ltr", vocab=wordpiece.vocab_size)
    seen = []
    real_hidden = {m: m.hidden for m in (bert, ltr)}
    for m in (bert, ltr):
        monkeypatch.setattr(m, "hidden", lambda ids, seg, mask, m=m: seen.append((m, ids.clone())) or real_hidden[m](ids, seg, mask))
    sentences = ["the cat sat on the mat .", "markets fell sharply on monday ."]
    a = cloze.blank_scores(bert, ltr, wordpiece, sentences, seed=3)
    assert a["n"] == 2 and 0 <= a["bert_top1"] <= 1 and a["bert_nats"] > 0 and a["ltr_nats"] > 0
    (_, bert_in), (_, ltr_in) = seen
    assert (bert_in == wordpiece.mask_id).sum(1).tolist() == [1, 1]          # one blank each, hidden from BERT
    assert not (ltr_in == wordpiece.mask_id).any()                           # the twin reads the text itself
    assert a == cloze.blank_scores(bert, ltr, wordpiece, sentences, seed=3)  # seeded blanks
    # the same blank with other words after it: the twin's score stays, BERT's moves
    words = "the cat sat on the mat .".split()
    assert len(wordpiece.encode(" ".join(words))) == len(words)               # one piece per word here
    blank = int((bert_in[0] == wordpiece.mask_id).nonzero()[0, 0])           # 1 + the word's index
    other = words[:blank] + ["the"] * (len(words) - blank)
    b = cloze.blank_scores(bert, ltr, wordpiece, [" ".join(other), sentences[1]], seed=3)
    assert b["ltr_nats"] == pytest.approx(a["ltr_nats"], abs=1e-6) and b["bert_nats"] != pytest.approx(a["bert_nats"])


def test_pairs_start_at_every_sentence_and_never_in_shuffled_sentences():
    from types import SimpleNamespace

    from minilib.data.mlm import document_level
    from minilib.data.tokenizer import train_wordpiece

    tok = train_wordpiece([d.text for d in TEXTS], 200, min_char_count=1)
    one_line = "The cat sat on the mat. It purred all night! Did the dog mind? It did not."
    stream = DocumentStream.from_documents(tok, [one_line, "Markets fell.\nBonds rose."])
    starts = [tok.decode(stream.ids[a:a + 1].tolist()) for a in stream.line_starts]
    assert starts == ["the", "it", "did", "it", "markets", "bonds"]           # a start at each sentence
    docs = [SimpleNamespace(source=s, text="x") for s in ("brown", "mixed", "news")]
    assert [d.source for d in document_level(docs)] == ["brown", "news"]      # §3.2: document-level text only


# ----------------------------------------------------------------------------- the shipped checkpoints

SHIPPED_BERT = sorted((Path(__file__).parents[1] / "checkpoints").glob("bert*-laptop*.pt"))   # every shape


@pytest.mark.skipif(not SHIPPED_BERT, reason="no shipped BERT checkpoint in checkpoints/ yet")
@pytest.mark.parametrize("path", SHIPPED_BERT, ids=[p.name for p in SHIPPED_BERT])
@pytest.mark.data
@pytest.mark.slow
def test_shipped_bert_remeasures_its_held_out_loss_at_gpts_compute(path, one_thread):
    """Each shipped encoder: ≤ 30 MB, the objective its name says, GPT laptop's compute (within one step of
    equal_compute_tokens; a run at a budget, `pretrain bert --budget X`, X times that and named -Xx), and its
    held-out loss re-measured from the fp16 weights on the same fixed batches."""
    from minilib import data
    from minilib.models.pretrained import load_pretrained
    from minilib.recipes.bert import (BERTPretrainConfig, default_out, equal_compute_tokens, held_out_batches,
                                      held_out_scores)

    model, tok, meta = load_pretrained(path, "bert")
    config = BERTPretrainConfig(**meta["config"])
    assert path.stat().st_size <= 30e6
    recipe = BERTPretrainConfig.for_profile("laptop", config.objective, shape=config.shape)
    budget = config.steps / recipe.steps if config.schedule == "wsd" else None      # at_budget's runs
    m = meta["metrics"]
    tokens_per_step = config.batch_size * model.cfg.block_size
    # a recipe changed in one place (another masking rate or NSP weight) is saved under a name of its own
    own_name = (config.mask_prob, config.nsp_weight) != (BERTPretrainConfig.mask_prob, BERTPretrainConfig.nsp_weight)
    if not own_name:
        assert default_out("laptop", config.objective, config.shape, budget).name == path.name
    if own_name and config.steps != recipe.steps:      # trained at another run's schedule (tools/bert_diagnosis.py)
        assert m["train_tokens_seen"] == config.steps * tokens_per_step
    else:
        assert abs(m["train_tokens_seen"] - (budget or 1) * equal_compute_tokens("laptop", config.objective,
                                                                                 shape=config.shape)) \
            <= (budget or 1) * tokens_per_step
    valid = held_out_batches(tok, data.pretraining_corpus("valid"), config, model.cfg.block_size)
    scores = held_out_scores(model, valid)
    assert scores["valid_nats_per_token"] == pytest.approx(m["valid_nats_per_token"], rel=1e-5)
    if config.objective == "mlm+nsp":
        assert scores["valid_nsp_accuracy"] == pytest.approx(m["valid_nsp_accuracy"])


def test_masked_nats_by_input_splits_the_80_10_10_and_sees_a_copying_model():
    """A model that only copies its input is perfect on the unchanged 10 % and no better than chance on
    [MASK]; the split must show exactly that, and the unigram row must be the train counts' -log p."""
    from minilib.models.bert import BERTOutput
    from minilib.recipes.bert import masked_nats_by_input, unigram_log_probs

    V = 40
    specials = SpecialTokens(cls_id=0, sep_id=1, pad_id=2, mask_id=3, vocab_size=V, special_ids=(0, 1, 2, 3))
    rng = np.random.default_rng(0)
    docs = [[list(rng.integers(4, V, 12)) for _ in range(6)] for _ in range(8)]
    stream = DocumentStream.from_token_lists(docs)
    batches = list(PairBatches(stream, specials, 8, 32, 6, p_random_next=0.0, seed=1))

    class Copier(BERT):
        def forward(self, idx, segments=None, attention_mask=None, labels=None, nsp_labels=None):
            rows = labels.reshape(-1) != IGNORE_INDEX
            logits = torch.full((int(rows.sum()), V), -30.0)
            shown = idx.reshape(-1)[rows]
            logits[torch.arange(len(shown)), shown] = 30.0          # all belief on the input token
            logits[shown == 3] = 0.0                                 # [MASK]: uniform
            return BERTOutput(None, logits, None, None, None)

    split = masked_nats_by_input(Copier(bert_config(V, "smoke", "mlm")), batches, unigram_log_probs(stream, V), mask_id=3)
    assert split["unchanged"] == pytest.approx(0.0, abs=1e-6)
    assert split["[MASK]"] == pytest.approx(math.log(V), rel=1e-6)
    assert split["random"] == pytest.approx(60.0, rel=1e-3)              # all belief on the wrong token
    counts = np.bincount(stream.ids, minlength=V) + 1.0
    assert min(-np.log(counts / counts.sum())) < split["unigram at [MASK]"] < max(-np.log(counts / counts.sum()))


def test_bert_plateau_splits_every_snapshot_and_reads_the_twins_curve(tmp_path, monkeypatch, one_thread):
    from minilib import data
    from minilib.data.tokenizer import train_wordpiece
    from minilab.experiments import bert_plateau
    from minilib.models.pretrained import load_pretrained
    from minilib.recipes import bert as recipe

    tok = train_wordpiece([d.text for d in TEXTS], 200, min_char_count=1)
    paths = {}
    for objective in ("mlm+nsp", "mlm", "ltr"):
        cfg = recipe.BERTPretrainConfig.for_profile("smoke", objective, steps=4, batch_size=4, eval_every=2,
                                                    valid_batches=2)
        paths[objective] = tmp_path / recipe.default_out("laptop", objective).name
        recipe.pretrain_bert(cfg, TEXTS, TEXTS[:8], paths[objective], tok, progress=False, log=lambda *_: None,
                             checkpoint_dir=tmp_path / "runs" / paths[objective].stem)
    monkeypatch.setattr(bert_plateau, "_checkpoint", lambda profile, objective, shape=None: paths[objective])
    monkeypatch.setitem(bert_plateau.PROBE_SENTENCES, "laptop", 30)
    monkeypatch.setattr(data, "pretraining_corpus", lambda split, max_words=None: TEXTS if split == "train" else TEXTS[:8])
    result = bert_plateau.run("laptop", tmp_path / "runs", write=False, log=None)
    for objective in ("mlm+nsp", "mlm"):
        rows = result["masked"][objective]
        assert [r["step"] for r in rows] == [0, 2, 4] and [r["tokens"] for r in rows] == [0, 2 * 4 * 64, 4 * 4 * 64]
        assert rows[0]["[MASK]"] != rows[-1]["[MASK]"]                          # each snapshot's own weights
        # the last snapshot file, loaded with its tied decoder, scores exactly as the shipped checkpoint
        model = bert_plateau.snapshot_bert(tmp_path / "runs" / paths[objective].stem / "snapshots/step-000004.pt",
                                           load_pretrained(paths[objective], "bert").model.cfg)
        pre = load_pretrained(paths[objective], "bert")
        valid = recipe.held_out_batches(tok, TEXTS[:8], recipe.BERTPretrainConfig(**pre.meta["config"]), 64)
        train = DocumentStream.from_documents(tok, TEXTS)
        again = recipe.masked_nats_by_input(model, valid, recipe.unigram_log_probs(train, model.cfg.vocab_size), tok.mask_id)
        assert again == pytest.approx({k: v for k, v in rows[-1].items() if k not in ("step", "tokens")})
        assert pre.meta["metrics"]["valid_mask_nats"] == pytest.approx(rows[-1]["[MASK]"])   # one number, two paths
    assert [p["step"] for p in result["ltr"]] == [0, 2, 4]
    assert set(result["pos_probe"]) == {"mlm+nsp", "mlm", "ltr"}
    assert all([r["step"] for r in rows] == [0, 2, 4] and all(0 < r["pos_probe_accuracy"] <= 1 for r in rows)
               for rows in result["pos_probe"].values())
    assert bert_plateau.summary_line(result).startswith("bert-plateau: tokens=1024 mlm+nsp_mask_nats=")


def test_word_states_read_each_words_first_piece_or_its_last():
    from minilab.experiments.bert_plateau import word_states

    class Tok:
        cls_id, sep_id, unk_id = 1, 2, 3
        pieces = {"un": [10], "believ": [11, 12], "able": [13]}

        def encode(self, word):
            return self.pieces[word]

    class Echo(BERT):        # each position's "state" is its own index, to read which one was taken
        def hidden(self, idx, segments=None, attention_mask=None):
            return torch.arange(idx.shape[1], dtype=torch.float32)[None, :, None].expand(1, -1, 2)

    model = Echo(bert_config(20, "smoke", "mlm"))
    first, used = word_states(model, Tok(), [["un", "believ", "able"]], last_piece=False)
    last, _ = word_states(model, Tok(), [["un", "believ", "able"]], last_piece=True)
    assert first[:, 0].tolist() == [1, 2, 4] and last[:, 0].tolist() == [1, 3, 4] and used == [0]
    too_long, used = word_states(model, Tok(), [["believ"] * 40], last_piece=False)
    assert used == [] and len(too_long) == 0


def test_another_shape_reads_gpts_compute_in_more_tokens_and_names_its_checkpoint(tmp_path, monkeypatch, one_thread):
    from minilib.data.tokenizer import TOKENIZER_SIZES, train_wordpiece
    from minilib.models import pretrained
    from minilib.recipes import bert as recipe
    from minilib.runtime import UsageError

    base, small = recipe.equal_compute_tokens("laptop"), recipe.equal_compute_tokens("laptop", shape=(2, 128))
    V = TOKENIZER_SIZES["laptop"]["wordpiece"]
    with torch.device("meta"):
        n_base = BERT(bert_config(V, "laptop")).num_params()
        n_small = BERT(bert_config(V, "laptop", **recipe.shape_overrides((2, 128)))).num_params()
    assert small > 3 * base and n_small * small == pytest.approx(n_base * base, rel=1e-6)   # one compute
    assert recipe.default_out("laptop", "ltr", (2, 128)).name == "bert-ltr-laptop-2x128.pt"
    assert recipe.default_out("laptop", "mlm+nsp").name == "bert-laptop.pt"
    with pytest.raises(UsageError, match="multiple of 64"):
        recipe.shape_overrides((2, 100))
    cfg = recipe.BERTPretrainConfig.for_profile("smoke", "mlm", shape=(1, 64), steps=2, batch_size=4, valid_batches=1)
    tok = train_wordpiece([d.text for d in TEXTS], 200, min_char_count=1)
    recipe.pretrain_bert(cfg, TEXTS, TEXTS[:8], tmp_path / "s.pt", tok, progress=False, log=lambda *_: None)
    back = pretrained.load_pretrained(tmp_path / "s.pt", "bert")
    assert (back.model.cfg.n_layer, back.model.cfg.n_embd, back.model.cfg.n_head) == (1, 64, 1)
    assert tuple(recipe.BERTPretrainConfig(**back.meta["config"]).shape) == (1, 64)


def test_pretrain_bert_takes_another_mask_rate_from_the_command_line(monkeypatch, tmp_path):
    from minilib import data
    from minilab.cli import main
    from minilib.data import tokenizer
    from minilib.recipes import bert as recipe

    seen = {}

    def stop(cfg, *args, **kwargs):
        seen["cfg"] = cfg
        raise LookupError("stopped before training")  # the run itself is not the point here

    monkeypatch.setattr(recipe, "pretrain_bert", stop)
    monkeypatch.setattr(data, "pretraining_corpus", lambda *a, **k: TEXTS)
    monkeypatch.setattr(tokenizer, "pretrained_tokenizer", lambda *a, **k: None)
    for argv, rate in ((["--mask-prob", "0.4"], 0.4), ([], 0.15)):
        with pytest.raises(LookupError, match="stopped before training"):
            main(["pretrain", "bert", "--profile", "smoke", "--objective", "mlm", "--out", str(tmp_path / "m.pt"), *argv])
        assert seen.pop("cfg").mask_prob == rate


@pytest.mark.data
@pytest.mark.results
def test_bert_fine_tunes_with_what_the_cached_search_chose():
    from minilab.experiments import bert_finetune as bf

    chosen = bf.chosen_recipe("laptop")
    assert chosen.get("bert") == bf.FINE_TUNING["bert"], \
        "results/bert-recipe/ chose otherwise: run `experiment bert-recipe --methods bert` for trec and rt, then update FINE_TUNING"
    assert bf.FINE_TUNING["bert-mlm"] == bf.FINE_TUNING["bert-ltr"] == bf.FINE_TUNING["bert"]     # Table 5: one recipe
    assert bf.method_config("bert-ltr", "laptop").lr == bf.CANDIDATES[bf.FINE_TUNING["bert"]]["lr"]
