"""GPT-1: the configuration, cached generation, the fine-tuning model, batches, held-out scoring, checkpoints."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from minilib.data.batching import RandomWindows
from minilib.data.tokenizer import train_bpe
from minilib.eval.perplexity import windowed_nats, windowed_token_nats
from minilib.models.gpt import GPT, GPTClassifier, gpt_config
from minilib.models.pretrained import load_pretrained, save_pretrained
from minilib.models.transformer import IGNORE_INDEX

TEXTS = ["The cat sat on the mat.", "A dog barked at the postman twice.", "Markets fell sharply on Monday.",
         "The president said the budget would pass.", "She read the book in one night."] * 4


def tiny(vocab=50, **kw) -> GPT:
    torch.manual_seed(0)
    return GPT(gpt_config(vocab, "smoke", dropout=0.0, block_size=24, **kw)).eval()


def test_config_is_gpt1s_shape():
    cfg = gpt_config(100, "laptop")
    assert (cfg.positions, cfg.causal, cfg.tie_weights, cfg.dropout) == ("learned", True, True, 0.1)
    assert gpt_config(100, "full").norm == "post" and cfg.norm == "pre"       # GPT-1; pre-LN on a CPU (GPT_SIZES)
    with pytest.raises(ValueError, match="causal"):
        GPT(gpt_config(100, "smoke", causal=False))
    with pytest.raises(ValueError, match="profile"):
        gpt_config(100, "huge")


def test_kv_cache_gives_the_states_of_a_full_pass():
    model = tiny()
    x = torch.randint(0, 50, (2, 12))
    full = model.hidden(x)
    cache = model.new_cache()
    parts = [model.hidden(x[:, :5], cache=cache), model.hidden(x[:, 5:6], cache=cache), model.hidden(x[:, 6:], cache=cache)]
    assert len(cache[0]) == 12
    torch.testing.assert_close(torch.cat(parts, 1), full, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("temperature,top_k", [(0.0, None), (1.0, 5)])
def test_cached_and_uncached_generation_agree(temperature, top_k):
    model = tiny()
    prompt = torch.randint(0, 50, (2, 4))
    outs = []
    for use_cache in (True, False):
        g = torch.Generator().manual_seed(3)
        outs.append(model.generate(prompt, 30, temperature=temperature, top_k=top_k, generator=g, use_cache=use_cache))
    assert outs[0].shape == (2, 34) and torch.equal(outs[0][:, :4], prompt)
    # 30 new tokens run past block_size 24: the cache restarts and must still agree at every step before that
    assert torch.equal(outs[0][:, :24], outs[1][:, :24])


def test_generation_never_draws_banned_ids_and_respects_top_k():
    model = tiny()
    g = torch.Generator().manual_seed(0)
    out = model.generate(torch.zeros(4, 1, dtype=torch.long), 15, top_k=3, generator=g, banned=[7, 8])
    assert not ((out == 7) | (out == 8)).any()


def test_classifier_reads_the_extract_token_and_ignores_padding():
    model = GPTClassifier(tiny(), n_classes=3).eval()
    seq = model.transform([5, 6, 7])
    assert seq == [model.start_id, 5, 6, 7, model.extract_id]
    pair = model.transform(list(range(30)), [1, 2])
    assert len(pair) == 24 and pair[0] == model.start_id and pair[-1] == model.extract_id and model.delim_id in pair
    alone = model(torch.tensor([seq]), torch.tensor([5]))
    padded = model(torch.tensor([seq + [1, 1, 1]]), torch.tensor([5]))
    torch.testing.assert_close(alone, padded)
    torch.testing.assert_close(alone[0], model.classifier(model.gpt.hidden(torch.tensor([seq]))[0, 4]))
    moved = model(torch.tensor([seq[:-1] + [9, model.extract_id]]), torch.tensor([6]))
    assert not torch.allclose(alone, moved)                               # the head reads the last real token


def test_new_tokens_are_appended_and_the_head_stays_tied():
    gpt = tiny()
    before = gpt.tok_emb.weight.detach().clone()
    model = GPTClassifier(gpt, n_classes=2)
    assert model.gpt.tok_emb.weight.shape[0] == 53 and model.gpt.cfg.vocab_size == 53
    torch.testing.assert_close(model.gpt.tok_emb.weight[:50], before)
    assert model.gpt.head.weight is model.gpt.tok_emb.weight


def test_added_tokens_can_start_as_a_pretrained_token_and_a_pooler_reads_the_extract_state():
    gpt = tiny()
    eos = gpt.tok_emb.weight[7].detach().clone()
    model = GPTClassifier(gpt, n_classes=3, head="pooler", new_tokens_from=7).eval()
    for new in (50, 51, 52):
        torch.testing.assert_close(model.gpt.tok_emb.weight[new], eos)
    ids, lengths = torch.tensor([[50, 3, 4, 52]]), torch.tensor([4])
    last = model.gpt.hidden(ids)[0, 3]
    expected = model.classifier(torch.tanh(model.pooler(last)))
    torch.testing.assert_close(model(ids, lengths)[0], expected)
    assert GPTClassifier(tiny(), 2).pooler is None
    with pytest.raises(ValueError, match="head="):
        GPTClassifier(tiny(), 2, head="mlp")


def test_loss_is_task_loss_plus_half_the_lm_loss_on_text_tokens():
    torch.manual_seed(1)
    model = GPTClassifier(tiny(), n_classes=2, lm_coef=0.5).eval()
    seqs = [model.transform([3, 4, 5, 6]), model.transform([7, 8])]
    ids = torch.tensor([seqs[0], seqs[1] + [1, 1]])
    lengths, labels = torch.tensor([6, 4]), torch.tensor([1, 0])
    loss, parts = model(ids, lengths, labels)
    logits = model(ids, lengths)
    torch.testing.assert_close(parts["task_loss"], F.cross_entropy(logits, labels))
    lm_logits = model.gpt.head(model.gpt.hidden(ids))[:, :-1]
    targets = torch.tensor([[3, 4, 5, 6, IGNORE_INDEX], [7, 8, IGNORE_INDEX, IGNORE_INDEX, IGNORE_INDEX]])
    torch.testing.assert_close(parts["lm_loss"], F.cross_entropy(lm_logits.flatten(0, 1), targets.flatten(),
                                                                 ignore_index=IGNORE_INDEX), rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(loss, parts["task_loss"] + 0.5 * parts["lm_loss"])
    pair = torch.tensor([model.transform([3, 4], [5])])                 # start 3 4 delim 5 extract
    _, parts = model(pair, torch.tensor([6]), torch.tensor([0]))
    lm_logits = model.gpt.head(model.gpt.hidden(pair))[0, :-1]
    targets = torch.tensor([3, 4, IGNORE_INDEX, 5, IGNORE_INDEX])        # the delimiter is no word to predict
    torch.testing.assert_close(parts["lm_loss"], F.cross_entropy(lm_logits, targets, ignore_index=IGNORE_INDEX),
                               rtol=1e-4, atol=1e-5)
    no_aux = GPTClassifier(tiny(), n_classes=2, lm_coef=0.0)
    assert set(no_aux(ids, lengths, labels)[1]) == {"task_loss"}


def test_random_windows_are_shifted_pairs_and_repeat_per_epoch():
    ids = np.arange(1000)
    batches = RandomWindows(ids, batch_size=4, block_size=16, steps=3, seed=0)
    first = [x.clone() for x, _ in batches]
    x, y = next(iter(batches))
    assert x.shape == (4, 16) and torch.equal(y, x + 1)
    assert all(torch.equal(a, b) for a, b in zip(first, [x for x, _ in batches]))
    batches.set_epoch(1)
    assert not torch.equal(first[0], next(iter(batches))[0])
    with pytest.raises(ValueError, match="too short"):
        RandomWindows(np.arange(10), 2, 16, 1)


@pytest.mark.parametrize("stride", [24, 12, 5])
def test_windowed_nats_scores_every_token_once(stride):
    model = tiny()
    ids = np.random.default_rng(0).integers(0, 50, 100)
    total, n = windowed_nats(model, ids, 24, stride)
    assert n == 99
    first = torch.as_tensor(ids[:24])[None]
    logits, _ = model(first)
    first_block = F.cross_entropy(logits[0, :-1].detach().double(), first[0, 1:], reduction="sum")
    one_block, m = windowed_nats(model, ids[:24], 24, stride)
    assert m == 23 and one_block == pytest.approx(float(first_block), rel=1e-6)
    assert total / n == pytest.approx(float(np.log(50)), abs=0.5)


def test_windowed_token_nats_scores_a_later_token_from_its_own_window():
    model = tiny().eval()
    ids = np.random.default_rng(1).integers(0, 50, 60)
    nats = windowed_token_nats(model, ids, 24, 12)       # windows: targets 1-24 from ids[0:24], 25-36 from ids[12:36], ...
    assert nats.shape == (59,) and nats.sum() == pytest.approx(windowed_nats(model, ids, 24, 12)[0])
    logits, _ = model(torch.as_tensor(ids[12:36])[None])
    direct = F.cross_entropy(logits[0, 30 - 13].detach().double(), torch.tensor(ids[30]))   # target 30: position 17
    assert nats[30 - 1] == pytest.approx(float(direct), rel=1e-6)


def test_checkpoint_round_trip_carries_the_tokenizer(tmp_path):
    tok = train_bpe(TEXTS, 300)
    torch.manual_seed(0)
    model = GPT(gpt_config(tok.vocab_size, "smoke", block_size=32))
    save_pretrained(tmp_path / "gpt.pt", model, tok, {"note": "test"})
    back = load_pretrained(tmp_path / "gpt.pt", "gpt")
    assert back.vocab.encode(TEXTS[0]) == tok.encode(TEXTS[0]) and back.meta["note"] == "test"
    x = torch.tensor([tok.encode(TEXTS[1])])
    model.eval()
    torch.testing.assert_close(back.model(x)[0], model(x)[0], rtol=0.02, atol=0.02)   # fp16 weights
    assert back.model.head.weight is back.model.tok_emb.weight


def test_lm_quality_divides_both_models_nats_by_the_same_words(tmp_path):
    """A GPT whose logits are all zero predicts uniformly: its nats are tokens · ln V, and its
    perplexity per word is V ** (tokens / words) — the same words the AWD-LSTM is divided by."""
    from minilib import data
    from minilib.data.batching import EOS
    from minilib.data.vocab import UNK, Vocab
    from minilab.experiments import lm_quality
    from minilib.models.awd_lstm import AWDLSTM, AWDLSTMConfig

    tok = train_bpe(TEXTS, 300)
    gpt = GPT(gpt_config(tok.vocab_size, "smoke", block_size=32))
    torch.nn.init.zeros_(gpt.tok_emb.weight)
    save_pretrained(tmp_path / "gpt.pt", gpt, tok, {})
    docs = data.pretraining_corpus("valid", max_words=300)
    vocab = Vocab.build([data.tokenize(d.text) for d in docs], max_size=150, specials=(UNK, EOS))
    torch.manual_seed(0)
    awd = AWDLSTM(AWDLSTMConfig(vocab_size=len(vocab), emb_size=8, hidden_size=16, n_layers=2))
    save_pretrained(tmp_path / "awd.pt", awd, vocab, {})
    r = lm_quality.compare("smoke", tmp_path / "awd.pt", tmp_path / "gpt.pt", valid_words=300, write=False)
    words = len(lm_quality.word_stream(docs, vocab)[0]) - 1
    assert r["words"] == words == r["awd-lstm"]["tokens"]
    g = r["gpt"]
    assert g["nats"] == pytest.approx(g["tokens"] * np.log(tok.vocab_size), rel=1e-6)
    assert g["ppl_per_word"] == pytest.approx(tok.vocab_size ** (g["tokens"] / words), rel=1e-5)
    assert g["bits_per_byte"] == pytest.approx(g["nats"] / np.log(2) / g["bytes"])
    a = r["awd-lstm"]
    assert 0 < a["unk_rate"] < 1 and a["unk_words"] > 0
    assert a["ppl_per_word_open"] == pytest.approx(np.exp((a["nats"] + a["unk_spelling_nats"]) / words))
    assert a["ppl_per_word_open"] > a["ppl_per_word"]
    m = r["matched"]                                 # uniform GPT: ln V for each piece of the kept lines
    pieces = m["words"] * np.log(m["gpt_ppl_per_word"]) / np.log(tok.vocab_size)
    assert 0 < m["words"] < words and pieces == pytest.approx(round(pieces), abs=1e-6)
    assert all(not k.startswith("_") for k in {**a, **g})


def test_both_streams_tell_which_line_each_token_belongs_to():
    from types import SimpleNamespace

    from minilib.data.vocab import UNK, Vocab
    from minilab.experiments.lm_quality import bpe_stream, word_stream

    docs = [SimpleNamespace(text="Hello world.\nGood bye"), SimpleNamespace(text="\nSee you")]
    tok = train_bpe(TEXTS + ["Hello world. Good bye. See you"], 300)
    ids, lines = bpe_stream(tok, docs)
    assert tok.decode(ids[lines == 1][:-1]) == "Good bye" and ids[lines == 1][-1] == tok.eos_id   # and its document's end
    assert tok.decode(ids[lines == 3][:-1]) == "See you" and list(lines) == sorted(lines)
    assert tok.decode(ids[lines == 0]) == "Hello world.\n"        # the newline ends line 0
    vocab = Vocab.build([["hello", "world", "good"]], specials=(UNK, "<eos>"))
    ids, lines = word_stream(docs, vocab)
    assert list(lines) == [0, 0, 0, 0, 1, 1, 1, 3, 3, 3]            # line 2 is empty: no tokens


def test_spelling_cost_is_a_character_bigram_from_a_start_to_an_end_mark():
    from minilab.experiments.lm_quality import spelling_nats

    assert spelling_nats(["ab"], ["ab"]) == pytest.approx(3 * np.log(2))      # a|start, b|a, end|b: each (1 + 1) / (1 + 3)
    assert spelling_nats(["ab", "ab"], ["ab"]) == pytest.approx(6 * np.log(2))
    assert spelling_nats(["ba"], ["ab"]) > spelling_nats(["ab"], ["ab"])       # the order of letters counts
    assert spelling_nats(["z"], ["ab"]) > spelling_nats(["a"], ["ab"])          # unseen letters cost more


def test_continuation_log_probs_sum_the_pieces_whatever_the_batch():
    from minilib.eval.likelihood import continuation_log_probs

    model = tiny()
    contexts = [[1, 2, 3], [4, 5, 6, 7, 8, 9], list(range(10, 40))]          # the last is cut from the left
    cont = [11, 12]
    together = continuation_log_probs(model, contexts, cont, block_size=24)
    for ctx, got in zip(contexts, together):
        seq = torch.tensor([(ctx + cont)[-24:]])
        logp = model(seq)[0][0].double().log_softmax(-1)
        n = seq.size(1)
        expected = logp[n - 3, 11] + logp[n - 2, 12]
        assert float(got) == pytest.approx(float(expected), abs=1e-6)
    alone = continuation_log_probs(model, contexts[:1], cont, block_size=24, batch_size=1)
    assert float(alone[0]) == pytest.approx(float(together[0]), abs=1e-6)
    with pytest.raises(ValueError, match="continuation"):
        continuation_log_probs(model, contexts, [], block_size=24)


@pytest.mark.data
def test_pretrain_gpt_writes_a_checkpoint_whose_numbers_reload(tmp_path, one_thread):
    import json

    from minilib import data
    from minilab.cli import main
    from minilib.recipes.gpt import encode_documents

    out = tmp_path / "gpt-smoke.pt"
    args = ["pretrain", "gpt", "--profile", "smoke", "--words", "20000", "--steps", "12", "--progress", "off",
            "--out", str(out), "--checkpoint-dir", str(tmp_path / "train")]
    assert main(args) == 0
    meta = json.loads(out.with_suffix(".json").read_text())
    curve = meta["metrics"]["curve"]
    assert [p["step"] for p in curve] == [0, 12] and curve[-1]["tokens"] == 12 * 8 * 64
    assert curve[-1]["valid_nats_per_token"] < curve[0]["valid_nats_per_token"]      # it learned something
    assert sorted(p.name for p in (tmp_path / "train" / "snapshots").iterdir()) == ["step-000000.pt", "step-000012.pt"]
    model, tok, _ = load_pretrained(out, "gpt")
    valid = encode_documents(tok, data.pretraining_corpus("valid"), max_tokens=meta["config"]["valid_tokens"])
    nats, n = windowed_nats(model, valid, model.cfg.block_size)
    assert nats / n == pytest.approx(meta["metrics"]["valid_nats_per_token"], rel=1e-6)


SHIPPED_GPT = sorted((Path(__file__).parents[1] / "checkpoints").glob("gpt-*.pt"))


@pytest.mark.skipif(not SHIPPED_GPT, reason="no shipped GPT checkpoint in checkpoints/ yet")
@pytest.mark.parametrize("path", SHIPPED_GPT, ids=[p.name for p in SHIPPED_GPT])
@pytest.mark.data
@pytest.mark.slow
def test_shipped_gpt_remeasures_its_held_out_loss(path, one_thread):
    from minilib import data
    from minilib.recipes.gpt import encode_documents

    model, tok, meta = load_pretrained(path, "gpt")
    assert path.stat().st_size <= 30e6
    valid = encode_documents(tok, data.pretraining_corpus("valid"), max_tokens=meta["config"]["valid_tokens"])
    nats, n = windowed_nats(model, valid, model.cfg.block_size)
    assert nats / n == pytest.approx(meta["metrics"]["valid_nats_per_token"], rel=1e-5)


@pytest.mark.data
def test_gpt_norm_trains_both_blocks_on_the_same_batches(one_thread):
    from minilab.experiments import gpt_norm

    cfg = gpt_norm.NormConfig(steps=3, batch_size=2, train_words=20_000, valid_tokens=500)
    r = gpt_norm.run("smoke", cfg, write=False, log=None)
    assert set(r["runs"]) == {"post", "pre"} and all(len(v["train_loss"]) == 3 for v in r["runs"].values())
    assert r["runs"]["post"]["train_loss"][0] != r["runs"]["pre"]["train_loss"][0]          # two different models
    assert gpt_norm.summary_line(r).startswith("gpt-norm: post_valid=")


def test_tagger_reads_each_words_last_piece_and_drops_what_does_not_fit():
    from minilib.models.gpt import GPTTagger

    model = GPTTagger(tiny(), n_classes=4).eval()
    ids, ends = model.transform_words([[5, 6], [7], [8, 9, 10]])
    assert ids == [model.start_id, 5, 6, 7, 8, 9, 10] and ends == [2, 3, 6]
    ids_long, ends_long = model.transform_words([[1] * 10, [2] * 10, [3] * 10])     # block_size 24
    assert len(ends_long) == 2 and len(ids_long) == 21
    logits = model(torch.tensor([ids]), torch.tensor([7]), torch.tensor([ends]))
    h = model.gpt.hidden(torch.tensor([ids]))[0]
    torch.testing.assert_close(logits[0], model.classifier(h[[2, 3, 6]]))
    padded = model(torch.tensor([ids + [1, 1]]), torch.tensor([7]), torch.tensor([ends + [-1]]))
    torch.testing.assert_close(padded[0, :3], logits[0])


def test_tagger_loss_ignores_padded_words():
    from minilib.models.gpt import GPTTagger

    model = GPTTagger(tiny(), n_classes=4, lm_coef=0.0).eval()
    ids, ends = model.transform_words([[5, 6], [7]])
    tags = torch.tensor([[1, 2, 3]])
    loss, _ = model(torch.tensor([ids]), torch.tensor([4]), torch.tensor([ends + [-1]]), tags)
    logits = model(torch.tensor([ids]), torch.tensor([4]), torch.tensor([ends]))
    torch.testing.assert_close(loss, F.cross_entropy(logits[0], tags[0, :2]))


def test_tagging_batches_pad_ids_ends_and_tags():
    from minilib.data.batching import TaggingBatches

    items = [([0, 5, 6], [2], [3]), ([0, 7, 8, 9], [1, 3], [1, 2])]
    ids, lengths, ends, tags = next(iter(TaggingBatches(items, batch_size=2, shuffle=False, pad_id=1)))
    assert ids.tolist() == [[0, 5, 6, 1], [0, 7, 8, 9]] and lengths.tolist() == [3, 4]
    assert ends.tolist() == [[2, -1], [1, 3]] and tags.tolist() == [[3, -100], [1, 2]]


def test_the_grid_runs_each_method_with_the_recipe_chosen_for_it():
    from dataclasses import replace

    from minilab.experiments import gpt_finetune as gf

    for method in ("gpt", "gpt-scratch", "gpt-no-aux"):
        laptop = gf.method_config(method, "laptop")
        assert laptop == replace(gf.paper_config(method, "laptop"), **gf.CANDIDATES[gf.FINE_TUNING[method]])
        assert gf.method_config(method, "smoke") == gf.paper_config(method, "smoke")      # smoke checks plumbing
    gpt, no_aux = gf.method_config("gpt", "laptop"), gf.method_config("gpt-no-aux", "laptop")
    assert replace(no_aux, lm_coef=gpt.lm_coef) == gpt and no_aux.lm_coef == 0
    assert not gf.method_config("gpt-scratch", "laptop").pretrained and gf.paper_config("gpt", "laptop").lr == 6.25e-5


@pytest.mark.data
@pytest.mark.results
def test_fine_tuning_is_what_the_cached_search_chose():
    from minilab.experiments import gpt_finetune as gf

    chosen = gf.chosen_recipe("laptop")
    assert chosen == {m: gf.FINE_TUNING[m] for m in ("gpt-scratch", "gpt")}, \
        "results/gpt-recipe/ chose otherwise: run `experiment gpt-recipe` for trec and rt, then update FINE_TUNING"


@pytest.mark.data
def test_a_gpt_point_fine_tunes_and_scores_once(tmp_path, one_thread, monkeypatch):
    from minilab.experiments import gpt_finetune as gf, grid

    monkeypatch.setenv("MINILIB_PROFILE", "smoke")                  # one epoch, 200 test questions
    row = grid.run_point("trec", 20, "gpt", 0, results_dir=tmp_path)
    shipped = gf.default_checkpoint("smoke")                         # the laptop GPT: its recipe run or branch
    assert 0 <= row["error"] <= 1 and len(row["curve"]) == 1 and row["checkpoint"].endswith(shipped.name)
    assert grid.run_point("trec", 20, "gpt", 0, results_dir=tmp_path) == row                # cached


def test_zero_shot_predicts_the_likeliest_continuation_and_calibration_removes_the_prior(monkeypatch):
    from types import SimpleNamespace

    from minilab.experiments import gpt_zero_shot as zs

    labels = [0, 1, 1, 0, 1, 0, 0]
    class Split(list):
        pass

    test = Split(labels)
    test.texts, test.labels = [str(y) for y in labels], labels
    task = SimpleNamespace(name="rt", n_classes=2, test=test)

    def class_scores(model, tok, texts, cue, continuations):     # a prior for class 1, plus +1 for the true class
        prior = np.array([0.0, 3.0])
        return np.stack([prior + (np.eye(2)[int(t)] if t != zs.CONTENT_FREE else 0) for t in texts])

    monkeypatch.setattr(zs, "class_scores", class_scores)
    r = zs.zero_shot(None, None, task, "very")
    assert r["predicted_share"] == [0.0, 1.0] and r["accuracy"] == pytest.approx(3 / 7) == r["majority"] - 1 / 7
    assert r["accuracy_calibrated"] == 1.0 and r["predicted_share_calibrated"] == [round(4 / 7, 4), round(3 / 7, 4)]


@pytest.mark.data
def test_zero_shot_scores_the_shipped_checkpoint_on_both_tasks(tmp_path, one_thread):
    from minilab.experiments import gpt_zero_shot as zs

    r = zs.run("smoke", snapshot_dir=tmp_path, write=False, log=None)        # no snapshots: the final model only
    (point,) = r["points"]
    assert point["step"] == 4000 and point["tokens"] == 8_192_000
    for key in ("rt/very", "rt/it-was", "trec/answer-is"):
        assert point[key]["n_test"] == 100 and 0 <= point[key]["accuracy_calibrated"] <= 1
    assert zs.summary_line(r).startswith("gpt-zero-shot: step=4000 rt_very=")


def test_tagging_accuracy_moves_each_batch_to_the_models_device():
    from minilab.experiments.gpt_finetune import tagging_accuracy

    class OnAnotherDevice(torch.nn.Module):          # parameters on 'meta': a stand-in for a GPU here
        def __init__(self):
            super().__init__()
            self.w = torch.nn.Parameter(torch.empty(1, device="meta"))

        def forward(self, ids, lengths, ends):
            assert ids.device == lengths.device == ends.device == self.w.device
            scores = torch.zeros(ends.shape[0], ends.shape[1], 3)
            scores[..., 1] = 1.0                     # always tag 1
            return scores

    ids, lengths = torch.ones(2, 5, dtype=torch.long), torch.tensor([5, 4])
    ends = torch.tensor([[0, 2, 4], [1, 3, -1]])     # -1: a word past the context, not scored
    tags = torch.tensor([[1, 1, 0], [1, 2, 1]])
    assert tagging_accuracy(OnAnotherDevice(), [(ids, lengths, ends, tags)]) == 3 / 5


def test_the_search_never_drops_the_auxiliary_loss_from_gpts_recipe():
    """gpt keeps L2 + λ·L1 (§3.2) even where the search prefers λ = 0: that is gpt-no-aux's question on the test
    split; a method not bound to the auxiliary loss (gpt-scratch) takes whatever wins."""
    from minilab.experiments import gpt_finetune as gf

    no_aux, aux = "LR 2.5e-4, 10 epochs, no aux LM", "LR 2.5e-4, 10 epochs"
    rows = [{"method": m, "candidate": c, "error": e} for m in ("gpt", "gpt-scratch")
            for c, e in ((no_aux, 0.30), (aux, 0.35), ("LR 1e-3", 0.40))]
    assert gf.choose(rows) == {"gpt": aux, "gpt-scratch": no_aux}
    assert gf.CANDIDATES[no_aux]["lm_coef"] == 0.0 and "gpt" in gf.KEEPS_AUX_LM
