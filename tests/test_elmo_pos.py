"""The taggers of experiments/elmo_pos.py: padding never leaks into a prediction, sentence labels batch."""
import pytest
import torch

from minilab.experiments import elmo_pos
from minilib.runtime import UsageError


def _feats(lengths, L=3, D=8, seed=0):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(L, T, D, generator=g) for T in lengths]


def test_pad_batches_token_tags_with_ignore_index_and_sentence_labels_as_a_vector():
    feats = _feats([2, 4])
    x, y, lengths = elmo_pos._pad(feats, [torch.tensor([1, 2]), torch.tensor([3, 4, 5, 6])])
    assert x.shape == (3, 2, 4, 8) and lengths.tolist() == [2, 4]
    assert y.tolist() == [[1, 2, -100, -100], [3, 4, 5, 6]]
    assert torch.equal(x[:, 0, :2], feats[0]) and x[:, 0, 2:].abs().sum() == 0
    _, labels, _ = elmo_pos._pad(feats, [torch.tensor(1), torch.tensor(0)])
    assert labels.tolist() == [1, 0]


@pytest.mark.parametrize("hidden", [None, 5])
def test_pooled_classifier_ignores_padding_and_returns_one_row_per_sentence(hidden):
    torch.manual_seed(0)
    model = elmo_pos.Tagger(3, 8, 2, dropout=0.0, hidden=hidden, pool=True).eval()
    short, long = _feats([2, 5])
    x, _, lengths = elmo_pos._pad([short, long], [torch.tensor(0), torch.tensor(1)])
    logits = model(x, lengths)
    assert logits.shape == (2, 2)
    alone = model(short[:, None], torch.tensor([2]))        # the short sentence without padding
    assert torch.allclose(logits[0], alone[0], atol=1e-5)
    x[:, 0, 2:] = 100.0                                      # garbage in the padding changes nothing
    assert torch.allclose(model(x, lengths)[0], alone[0], atol=1e-5)


def test_token_tagger_scores_every_position():
    model = elmo_pos.Tagger(3, 8, 12, dropout=0.0, hidden=4).eval()
    x, _, lengths = elmo_pos._pad(_feats([3, 6]), [torch.zeros(3, dtype=torch.long), torch.zeros(6, dtype=torch.long)])
    assert model(x, lengths).shape == (2, 6, 12)


def test_a_tagger_that_does_not_fit_the_task_is_refused_with_the_fix():
    with pytest.raises(UsageError, match="bilstm-max"):
        elmo_pos.run("bilstm-max", profile="smoke", task="pos")


def test_summary_line_reads_the_kind_from_the_method_name():
    rows = [{"task": "rt", "method": f"bilstm-max-{k}", "n_labels": 20, "seed": 0, "error": e}
            for k, e in zip(elmo_pos.KINDS, (0.4, 0.3, 0.5))]
    line = elmo_pos.summary_line(rows, "elmo-rt")
    assert line == "elmo-rt: static_acc_n20=0.600 elmo_acc_n20=0.700 untrained_acc_n20=0.500"
