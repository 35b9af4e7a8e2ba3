"""The scaling experiment: power-law fits, FLOPs counting, the cached sweeps, the CLI line, the widget."""
import json
import math
import re
from dataclasses import replace

import ipywidgets as w
import numpy as np
import pytest

from minilab import widgets
from minilab.cli.experiment import options_parser
from minilab.experiments import scaling
from minilib.runtime import UsageError
from panels import assert_fits, part, plot_pixels, text

LINE = re.compile(r"^scaling: alpha_params=-?\d+\.\d{3} r2_params=-?\d+\.\d{3} alpha_tokens=-?\d+\.\d{3} "
                  r"r2_tokens=-?\d+\.\d{3} pure_alpha_params=-?\d+\.\d{3} pure_alpha_tokens=-?\d+\.\d{3} "
                  r"profile=\w+$")


def synthetic_summary(noise: float = 0.0) -> dict:
    """Runs whose losses follow known laws (tests only: lessons show measured runs)."""
    rng = np.random.default_rng(0)
    config = scaling.SIZES["laptop"]
    d_fix, n_fix = 1_638_400, 100_096
    size = [{"shape": f"L1-d{i}", "params": n, "tokens": d_fix, "flops": 6 * n * d_fix,
             "valid_nats_per_token": (30 * n ** -0.3 + 4.0) * (1 + noise * rng.standard_normal())}
            for i, n in enumerate([12_768, 50_000, 100_096, 223_000, 397_000, 793_000])]
    token = [{"shape": "L2-d64", "params": n_fix, "tokens": d, "flops": 6 * n_fix * d,
              "valid_nats_per_token": 60 * d ** -0.25 + 3.5} for d in [102_400 * 2 ** k for k in range(6)]]
    return scaling.summarize({"params": size, "tokens": token}, config, "laptop")


# -- fits ------------------------------------------------------------------------------------------
def test_fit_recovers_a_known_exponent_and_offset():
    x = np.geomspace(1e4, 1e6, 6)
    fit = scaling.fit_power_law(x, 12 * x ** -0.3 + 4.0)
    assert fit["form"] == "a*x^-alpha + c"
    assert fit["alpha"] == pytest.approx(0.3, abs=1e-4) and fit["c"] == pytest.approx(4.0, abs=1e-4)
    assert fit["a"] == pytest.approx(12, rel=1e-3) and fit["points"] == 6
    pure = scaling.fit_power_law(x, 40 * x ** -0.076, offset=False)
    assert pure["alpha"] == pytest.approx(0.076, abs=1e-9) and pure["c"] == 0.0
    assert scaling.predict(fit, 1e5) == pytest.approx(12 * 1e5 ** -0.3 + 4.0, rel=1e-6)


def test_r2_is_one_on_exact_points_and_below_one_with_noise():
    x = np.geomspace(1e5, 1e7, 6)
    exact = 60 * x ** -0.25 + 3.5
    assert scaling.fit_power_law(x, exact)["r2"] == pytest.approx(1.0, abs=1e-9)
    noisy = exact * (1 + 0.01 * np.random.default_rng(1).standard_normal(len(x)))
    r2 = scaling.fit_power_law(x, noisy)["r2"]
    assert 0.5 < r2 < 1 - 1e-6
    assert scaling.r_squared([1.0, 2.0, 3.0], [2.0, 2.0, 2.0]) == pytest.approx(0.0)   # the mean explains nothing


def test_fit_refuses_too_few_or_nonpositive_points():
    with pytest.raises(ValueError, match="at least 3 distinct x"):
        scaling.fit_power_law([1, 2, 2], [3, 2, 1])
    with pytest.raises(ValueError, match="positive"):
        scaling.fit_power_law([0, 1, 2], [3, 2, 1])


# -- counting --------------------------------------------------------------------------------------
def test_flops_are_six_n_d_with_kaplans_non_embedding_n():
    from minilib.models.gpt import GPT, gpt_config

    L, d, V = 2, 16, 50
    model = GPT(gpt_config(V, "smoke", n_layer=L, n_embd=d, n_head=2, block_size=8))
    # per block: qkv 3d²+3d, proj d²+d, fc 4d²+4d, proj 4d²+d, two LayerNorms 4d; one final LayerNorm 2d
    n = L * (12 * d * d + 13 * d) + 2 * d
    assert scaling.non_embedding_params(model) == n == 6_592
    assert scaling.training_flops(model, 1_000) == 6 * n * 1_000
    assert model.num_params(non_embedding=True) == n + V * d    # nanoGPT's count keeps the tied head


# -- the experiment ----------------------------------------------------------------------------------
TINY = replace(scaling.SIZES["smoke"], shapes=((1, 16), (1, 32), (2, 32)), fixed_tokens=8 * 128,
               token_shape=(1, 16), token_budgets=(2 * 128, 4 * 128, 8 * 128), train_words=20_000, valid_tokens=400)


@pytest.mark.data
def test_a_tiny_run_caches_every_point_and_resumes(tmp_path, monkeypatch, one_thread):
    trained = []
    real = scaling.train_point
    monkeypatch.setattr(scaling, "train_point", lambda *a, **k: trained.append(a[:2]) or real(*a, **k))
    result = scaling.run("smoke", TINY, results_dir=tmp_path, log=None)
    assert len(trained) == 5                                 # 3 shapes + 3 budgets, (1, 16) at 1,024 tokens shared
    assert len(list((tmp_path / "scaling").glob("*-smoke.json"))) == 5
    runs = scaling.unique_runs(result)
    assert {r["valid_tokens"] for r in runs} == {399}        # one held-out text for every run
    for r in runs:
        assert r["flops"] == 6 * r["params"] * r["tokens"]
    assert [r["tokens"] for r in result["runs"]["tokens"]] == [256, 512, 1024]
    assert {r["tokens"] for r in result["runs"]["params"]} == {1024}
    assert all(math.isfinite(result["fits"][s]["offset"]["r2"]) for s in ("params", "tokens"))
    saved = json.loads((tmp_path / "scaling-smoke-custom.json").read_text())
    assert saved["provenance"]["seed"] == 0 and saved["fits"] == json.loads(json.dumps(result["fits"]))

    again = scaling.run("smoke", TINY, results_dir=tmp_path, log=None)
    assert len(trained) == 5 and again["fits"] == result["fits"]     # all cached: nothing trained

    path = tmp_path / "scaling" / "L2-d32-t1024-smoke.json"
    stale = json.loads(path.read_text())
    stale["config"]["lr"] = 1.0                                        # made with another recipe
    path.write_text(json.dumps(stale))
    scaling.run("smoke", TINY, results_dir=tmp_path, log=None)
    assert trained[5:] == [((2, 32), 1024)]                           # only that run is trained again


def parse(*argv):
    return options_parser("scaling").parse_args(list(argv))


def test_cli_prints_one_summary_line(monkeypatch, capsys):
    asked = []
    monkeypatch.setattr(scaling, "run", lambda prof, config: asked.append((prof, config)) or synthetic_summary())
    assert scaling.cli_run(parse("--profile", "laptop", "--shapes", "1x32,2x64,4x128", "--budgets", "100k,1.6M,3.2M"),
                           "scaling") == 0
    out = capsys.readouterr().out.strip().splitlines()
    assert len(out) == 1 and LINE.match(out[0]), out
    assert out[0].startswith("scaling: alpha_params=0.300 r2_params=1.000 alpha_tokens=0.250 r2_tokens=1.000")
    prof, config = asked[0]
    assert prof == "laptop" and config.shapes == ((1, 32), (2, 64), (4, 128))
    assert config.token_budgets == (100_000, 1_600_000, 3_200_000)


@pytest.mark.parametrize("argv, message", [
    (("--shapes", "2x"), "shape '2x': write LAYERSxWIDTH"),
    (("--shapes", "1x32,1x50,2x64"), "shape 1x50"),
    (("--shapes", "1x32,2x64"), "needs ≥ 3 points per sweep"),
    (("--budgets", "ten,20k,40k"), "token budget 'ten'"),
    (("--budgets", "100,20k,40k"), "a budget of 100 tokens is less than one batch"),
    (("--threads", "0"), "--threads 0: use 1 or more"),
])
def test_bad_arguments_are_usage_errors(argv, message, monkeypatch):
    monkeypatch.setattr(scaling, "train_point", lambda *a, **k: pytest.fail("trained despite a bad argument"))
    with pytest.raises(UsageError, match=re.escape(message)):
        scaling.cli_run(parse("--profile", "smoke", *argv), "scaling")


# -- plots and the widget ----------------------------------------------------------------------------
def test_plot_scaling_draws_three_log_panels_with_kaplan_in_the_legends():
    import matplotlib.pyplot as plt

    axes = scaling.plot_scaling(synthetic_summary())
    try:
        assert [ax.get_xscale() for ax in axes] == ["log"] * 3
        legends = [" ".join(t.get_text() for t in ax.get_legend().get_texts()) for ax in axes]
        assert "α = 0.076" in legends[0] and "α = 0.095" in legends[1] and "α_C = 0.05" in legends[2]
        assert "R² 1.000" in legends[0]
    finally:
        plt.close(axes[0].figure)


def test_scaling_explorer_predicts_at_the_chosen_compute():
    summary = synthetic_summary(noise=0.01)
    box = widgets.scaling_explorer(summary)
    assert_fits(box)
    slider = part(box, w.FloatLogSlider)
    first, img = text(box), plot_pixels(box)
    assert "⚠" not in first and "within the measured range" in first
    here = scaling.at_compute(summary, slider.value)
    assert f"predicted {here['params']['loss']:.3f} nats/token" in first
    assert f"predicted {here['tokens']['loss']:.3f} nats/token" in first

    slider.value = 10 ** slider.max                                   # a decade past the dearest run
    later = text(box)
    assert later != first and "extrapolated beyond the measured range" in later
    assert not np.array_equal(plot_pixels(box), img)


def test_scaling_explorer_turns_a_broken_summary_into_one_line():
    summary = synthetic_summary()
    del summary["fits"]["tokens"]
    box = widgets.scaling_explorer(summary)
    assert text(box).startswith("⚠ KeyError")
