"""AWD-LSTM (minilib/models/awd_lstm.py): each regulariser does what the paper says, and it trains."""
import math
import warnings

import numpy as np
import pytest
import torch
import torch.nn.modules.rnn as rnn_module

from minilib.data.batching import LMStream
from minilib.train.callbacks import ARTAR, SeqLenLR
from minilib.models.awd_lstm import AWDLSTM, AWDLSTMConfig, EmbeddingDropout, LockedDropout, WeightDropLSTM, ar_tar
from minilib.data.batching import VariableBPTTStream
from minilib.train import Learner
from minilib.train.groups import layer_groups


pytestmark = pytest.mark.usefixtures("one_thread")  # see conftest.py


def tiny(vocab=50, **kw) -> AWDLSTM:
    torch.manual_seed(0)
    return AWDLSTM(AWDLSTMConfig(vocab, emb_size=8, hidden_size=12, n_layers=3, **kw))


@pytest.fixture
def lstm_calls(monkeypatch):
    """Every call of the fused LSTM op nn.LSTM uses (torch._VF.lstm), with its weight list."""
    calls = []
    real = rnn_module._VF.lstm

    def spy(*args):
        calls.append([w.detach().clone() for w in args[2]])  # (input, hx, weights, ...)
        return real(*args)

    monkeypatch.setattr(rnn_module._VF, "lstm", spy)
    return calls


def manual_lstm(x, w_ih, w_hh, b_ih, b_hh):
    """A step-by-step LSTM (gates i, f, g, o) using the same w_hh at every time step."""
    B, T, _ = x.shape
    h = c = x.new_zeros(B, w_hh.shape[1])
    out = []
    for t in range(T):
        i, f, g, o = (x[:, t] @ w_ih.T + b_ih + h @ w_hh.T + b_hh).chunk(4, dim=-1)
        c = f.sigmoid() * c + i.sigmoid() * g.tanh()
        h = o.sigmoid() * c.tanh()
        out.append(h)
    return torch.stack(out, 1)


def test_shapes_and_encoder_outputs():
    model = tiny()
    x = torch.randint(0, 50, (4, 7))
    assert model(x).shape == (4, 7, 50)
    raw, dropped = model.encoder(x)
    assert [r.shape for r in raw] == [(4, 7, 12), (4, 7, 12), (4, 7, 8)]  # last layer = emb size (§4.5)
    assert [d.shape for d in dropped] == [r.shape for r in raw]
    assert [tuple(h.shape) for h, c in model.encoder.state] == [(1, 4, 12), (1, 4, 12), (1, 4, 8)]
    loss, extras = model(x, torch.randint(0, 50, (4, 7)))
    assert loss.ndim == 0 and set(extras) == {"ar", "tar"}
    model.eval()
    assert model(x, x).ndim == 0  # eval: just the loss


def test_tied_weights_share_storage():
    model = tiny()
    emb, dec = model.encoder.embedding.weight, model.decoder.weight
    assert dec is emb and dec.data_ptr() == emb.data_ptr()
    assert sum(p is emb for p in model.parameters()) == 1  # counted (and optimised) once
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    loss, _ = model(torch.randint(0, 50, (2, 5)), torch.randint(0, 50, (2, 5)))
    loss.backward()
    opt.step()
    assert torch.equal(model.decoder.weight, model.encoder.embedding.weight)


def test_weight_drop_one_mask_per_pass_through_fused_lstm(lstm_calls):
    torch.manual_seed(0)
    layer = WeightDropLSTM(3, 5, p=0.5).train()
    raw = layer.lstm.weight_hh_l0
    x = torch.randn(2, 6, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # e.g. "RNN module weights are not part of single contiguous chunk"
        out1, _ = layer(x)
        out2, _ = layer(x)
        (out1 + out2).sum().backward()
    assert len(lstm_calls) == 2  # nn.LSTM's own fused path ran, once per forward
    w_ih, w_hh1, b_ih, b_hh = lstm_calls[0]
    w_hh2 = lstm_calls[1][1]
    # dropped entries are 0, kept ones scaled by 1/(1-p); about half dropped
    zero = w_hh1 == 0
    assert torch.allclose(w_hh1[~zero], raw.detach()[~zero] / 0.5)
    assert 0.25 < zero.float().mean() < 0.75
    # the same dropped matrix served every time step of the sequence
    assert torch.allclose(out1, manual_lstm(x, w_ih, w_hh1, b_ih, b_hh), atol=1e-5)
    assert not torch.allclose(out1, manual_lstm(x, w_ih, raw.detach(), b_ih, b_hh), atol=1e-3)
    # a new mask on the next pass
    assert not torch.equal(w_hh1 == 0, w_hh2 == 0)
    assert not torch.allclose(out1, out2)
    # eval: no weight drop, the raw matrix
    layer.eval()
    layer(x)
    assert torch.equal(lstm_calls[2][1], raw.detach())


def test_weight_drop_gradients_reach_raw_weight(lstm_calls):
    torch.manual_seed(1)
    layer = WeightDropLSTM(3, 5, p=0.5).train()
    out, _ = layer(torch.randn(2, 6, 3))
    out.pow(2).sum().backward()
    grad, used = layer.lstm.weight_hh_l0.grad, lstm_calls[0][1]
    assert grad is not None and grad.abs().sum() > 0
    assert torch.all(grad[used == 0] == 0)  # a dropped connection gets no gradient...
    assert (grad[used != 0] != 0).float().mean() > 0.9  # ...the kept ones do
    assert layer.lstm.weight_ih_l0.grad.abs().sum() > 0


def test_embedding_dropout_drops_whole_words():
    torch.manual_seed(0)
    emb = EmbeddingDropout(100, 16, p=0.5).train()
    x = torch.randint(0, 100, (8, 30))  # each word occurs many times
    out = emb(x)
    full = emb.weight[x].detach()
    dropped = (out == 0).all(-1)  # (B, T): whole vectors are zero
    assert torch.allclose(out[~dropped], full[~dropped] / 0.5)  # kept rows scaled by 1/(1-p)
    assert torch.all((out == 0) == dropped.unsqueeze(-1))  # never part of a vector
    for word in x.unique():  # same word -> same fate everywhere in the batch
        assert dropped[x == word].all() or not dropped[x == word].any()
    frac = torch.tensor([bool(dropped[x == w][0]) for w in x.unique()]).float().mean()
    assert 0.3 < frac < 0.7
    emb.eval()
    assert torch.equal(emb(x), full)


def test_locked_dropout_mask_constant_over_time():
    torch.manual_seed(0)
    drop = LockedDropout(0.4).train()
    out = drop(torch.ones(4, 10, 50))
    assert torch.all(out == out[:, :1])  # the same mask at every time step
    assert out.unique().tolist() == pytest.approx([0.0, 1 / 0.6])  # dropped, or kept and scaled by 1/(1-p)
    assert not torch.equal(out[0], out[1])  # a mask per sequence
    drop.eval()
    assert torch.equal(drop(torch.ones(4, 10, 50)), torch.ones(4, 10, 50))


def test_ar_tar_match_hand_computation():
    dropped = torch.tensor([[[1.0, 2.0], [0.0, 3.0]]])  # (B=1, T=2, H=2)
    raw = torch.tensor([[[1.0, 1.0], [3.0, -1.0]]])
    ar, tar = ar_tar(dropped, raw, alpha=2.0, beta=1.0)
    assert ar.item() == pytest.approx(2.0 * (1 + 4 + 0 + 9) / 4)
    assert tar.item() == pytest.approx(1.0 * (2 ** 2 + (-2) ** 2) / 2)


def test_hidden_state_carried_and_reset():
    model = tiny().eval()
    x = torch.randint(0, 50, (3, 10))
    with torch.no_grad():
        whole = model(x)
        model.reset()
        first, second = model(x[:, :6]), model(x[:, 6:])  # state carried from batch 1 to batch 2
        assert torch.allclose(torch.cat([first, second], 1), whole, atol=1e-5)
        assert all(not h.requires_grad for h, c in model.encoder.state)
        model.reset()
        assert model.encoder.state is None
        fresh = model(x[:, 6:])
        assert not torch.allclose(fresh, second, atol=1e-4)
    model.train()  # in training the carried state is detached: backward stops at the batch
    model(x[:, :5], x[:, :5])[0].backward()
    model(x[:, 5:], x[:, 5:])[0].backward()  # would fail ("backward through the graph a second time") if not


def test_eval_is_deterministic_and_train_is_not():
    model, x = tiny(), torch.randint(0, 50, (2, 8))
    model.eval()
    a = model(x)
    model.reset()
    assert torch.equal(a, model(x))
    model.train()
    model.reset()
    b = model(x)
    model.reset()
    assert not torch.allclose(b, model(x))


def test_layer_groups_cover_every_parameter_once():
    model = tiny()
    groups = layer_groups(model)  # raises if a parameter is in two groups or none
    assert len(groups) == 4
    ids = [id(p) for g in groups for p in g]
    assert len(ids) == len(set(ids)) == len(list(model.parameters()))
    assert groups[0] == [model.encoder.embedding.weight]
    assert any(p is model.decoder.bias for p in groups[-1])
    learner = Learner(model, [], device="cpu", progress=False)
    learner.freeze_to(-1)
    trainable = {id(p) for p in model.parameters() if p.requires_grad}
    assert trainable == {id(p) for p in groups[-1]}


def test_variable_bptt_stream():
    ids = np.arange(20_001)
    stream = VariableBPTTStream(ids, batch_size=4, bptt=70)
    batches = list(stream)
    assert 0 < len(batches) <= len(stream) == len(LMStream(ids, 4, 70))
    xs = torch.cat([x for x, y in batches], 1)
    assert torch.equal(xs, stream.x[:, :xs.shape[1]])  # consecutive batches continue each row
    assert torch.equal(batches[0][1], batches[0][0] + 1)  # y is x shifted by one
    lens = np.array([x.shape[1] for x, _ in batches[:-1]])
    assert 5 <= lens.min() and lens.max() <= 110
    assert lens.std() > 2  # lengths vary
    assert list(stream.seq_lens()) == list(stream.seq_lens())  # the same epoch repeats
    stream.set_epoch(1)
    assert list(stream.seq_lens()) != [x.shape[1] for x, _ in batches]
    # the paper's distribution: N(70, 5) w.p. 0.95, else N(35, 5)
    big = VariableBPTTStream(np.arange(1_000_001), batch_size=1, bptt=70)
    lens = np.array(list(big.seq_lens()))
    short = lens < 52
    assert 0.03 < short.mean() < 0.07
    assert abs(lens[~short].mean() - 69.5) < 0.5 and abs(lens[~short].std() - 5) < 0.6  # int() floors


def test_seq_len_lr_rescales_the_step_lr():
    class FakeLearner:
        batch = (torch.zeros(2, 35, dtype=torch.long), torch.zeros(2, 35, dtype=torch.long))
        opt = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=1.0)

    SeqLenLR(bptt=70).before_step(FakeLearner)
    assert FakeLearner.opt.param_groups[0]["lr"] == pytest.approx(0.5)


def test_config_profiles_and_dropout_scaling():
    full = AWDLSTMConfig.for_profile(1000, "full")
    assert (full.emb_size, full.hidden_size, full.n_layers) == (400, 1150, 3)
    assert AWDLSTMConfig.for_profile(1000, "smoke").hidden_size < AWDLSTMConfig.for_profile(1000, "laptop").hidden_size
    half = full.scale_dropouts(0.5)
    assert (half.dropouti, half.wdrop, half.alpha) == (pytest.approx(0.325), 0.25, 2.0)


@pytest.mark.data
def test_loss_falls_on_real_text_with_the_learner():
    from minilib import data

    train_docs = data.pretraining_corpus("train", max_words=20_000)
    valid_docs = data.pretraining_corpus("valid", max_words=4_000)
    train_toks = [t for d in train_docs for t in data.tokenize(d.text)]
    vocab = data.Vocab.build([train_toks], min_count=3)
    valid_ids = vocab.encode_array(t for d in valid_docs for t in data.tokenize(d.text))
    torch.manual_seed(0)
    model = AWDLSTM(AWDLSTMConfig.for_profile(len(vocab), "smoke").scale_dropouts(0.5))
    learner = Learner(model, VariableBPTTStream(vocab.encode_array(train_toks), 16, 30),
                      LMStream(valid_ids, 16, 30), callbacks=[ARTAR(), SeqLenLR(30)],
                      device="cpu", progress=False)
    before = learner.evaluate()["loss"]
    assert before == pytest.approx(math.log(len(vocab)), abs=0.3)  # untrained: about uniform
    learner.fit(1, lr=3e-2, schedule="stlr")  # one epoch from scratch: ~7.1 -> ~4.6 nats
    after = learner.history.evals[-1]["valid_loss"]
    assert after < before - 1.5, (before, after)
    step = learner.history.steps[-1]
    assert step["total_loss"] == pytest.approx(step["loss"] + step["ar"] + step["tar"], rel=1e-4)  # ARTAR added


@pytest.mark.data
def test_bench_runs_and_ends_with_its_summary_line(capsys):
    from minilab.cli import main

    assert main(["bench", "awd-lstm", "--profile", "smoke", "--steps", "2", "--warmup", "1", "--threads", "1"]) == 0
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert last.startswith("awd-lstm: plain_tok_per_s=") and " awd_tok_per_s=" in last and " overhead_ratio=" in last
