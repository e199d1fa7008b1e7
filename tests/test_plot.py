"""cooper plot: reads run dirs (metrics.jsonl, evals.jsonl), positional CLI args, clear errors."""

import gzip
import json

import pytest

from cooper_rl.cli import main
from cooper_rl.plot import PlotConfig, load_run, moving_average, plot_runs


def fake_run(d, reward, n=12, with_evals=True):
    d.mkdir(parents=True)
    (d / "rl_config.json").write_text(json.dumps({"reward": reward}))
    rows = [
        {
            "step": s,
            "rule_accuracy": s / n,
            "reward_mean": 1 - s / n,
            "rm_rule_agreement": 0.5,
            "hacking_warning": float(s == 7),
        }
        for s in range(1, n + 1)
    ]
    (d / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows) + '{"step": 13, "rule_acc')  # cut line
    if with_evals:
        ev = [{"step": s, "policy": {"builtin": {"avg@k_strict": s / 20}}, "rm": {"accuracy": 0.6}} for s in (0, 6, 12)]
        (d / "evals.jsonl").write_text("".join(json.dumps(e) + "\n" for e in ev))
    return d


def test_moving_average():
    assert moving_average([1, 2, 3, 4], 2) == [1, 1.5, 2.5, 3.5]
    assert moving_average([], 3) == []


def test_load_run_skips_cut_lines_and_labels_by_mode(tmp_path):
    run = load_run(fake_run(tmp_path / "a", "cooper"))
    assert len(run["metrics"]) == 12 and len(run["evals"]) == 3 and run["label"] == "cooper (a)"


@pytest.mark.parametrize("name", ["rollouts.jsonl", "rollouts.jsonl.gz"])  # a run's log, an experiment's committed copy
def test_rollouts_give_lengths_and_the_rate_of_rewarded_wrong_answers(tmp_path, name):
    d = fake_run(tmp_path / "m", "model")
    rollouts = [
        {"step": 1, "completion": "abcd", "verdict": False, "reward": 0.9},
        {"step": 1, "completion": "ab", "verdict": False, "reward": 0.1},
        {"step": 1, "completion": "abcdef", "verdict": True, "reward": 0.9},
        {"step": 2, "completion": "a", "verdict": True, "reward": 0.2},
    ]  # no wrong rollout: no point
    text = "".join(json.dumps(r) + "\n" for r in rollouts)
    (d / name).write_bytes(gzip.compress(text.encode()) if name.endswith(".gz") else text.encode())
    run = load_run(d)
    assert run["lengths"] == [(1, 4.0), (2, 1.0)] and run["fooled"] == [(1, 0.5)]
    cut = load_run(d, max_step=1)
    assert cut["lengths"] == [(1, 4.0)] and max(r["step"] for r in cut["metrics"]) == 1
    assert [e["step"] for e in cut["evals"]] == [0]
    out = plot_runs(PlotConfig(run_dirs=[str(d)], output=str(tmp_path / "fig3.png")))
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_plot_several_runs_writes_png(tmp_path):
    a, b = fake_run(tmp_path / "a", "rule"), fake_run(tmp_path / "b", "model", with_evals=False)
    out = plot_runs(PlotConfig(run_dirs=[str(a), str(b)], output=str(tmp_path / "fig.png")))
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and out.stat().st_size > 10_000
    assert not list(tmp_path.glob("*.tmp.png"))


def test_cli_positional_run_dirs(tmp_path, capsys):
    a = fake_run(tmp_path / "a", "rule")
    assert main(["plot", str(a), "--smooth", "3"]) == 0
    assert (a / "dynamics.png").is_file() and "dynamics.png" in capsys.readouterr().out


def test_cli_errors_name_the_problem(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    assert main(["plot", str(tmp_path / "empty")]) == 2
    assert "no metrics.jsonl" in capsys.readouterr().err
    a = fake_run(tmp_path / "a", "rule")
    assert main(["plot", str(a), "--labels", "x", "y"]) == 2
    assert "2 labels for 1 runs" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["plot", str(a), "--no_such_flag", "1"])


def test_learning_signal_metrics_add_a_row(tmp_path):
    import matplotlib.pyplot as plt

    a = fake_run(tmp_path / "a", "rule")
    plain = plt.imread(plot_runs(PlotConfig(run_dirs=[str(a)], output=str(tmp_path / "plain.png"))))
    rows = [json.loads(x) for x in (a / "metrics.jsonl").read_text().splitlines()[:-1]]
    signal = {"signal/zero_spread_groups": 0.5, "signal/informative_groups_per_step": 2.0}
    (a / "metrics.jsonl").write_text("".join(json.dumps(r | signal) + "\n" for r in rows))
    more = plt.imread(plot_runs(PlotConfig(run_dirs=[str(a)], output=str(tmp_path / "signal.png"))))
    assert more.shape[0] == plain.shape[0] * 3 // 2  # 3 rows of panels instead of 2


def test_a_short_run_is_drawn_as_measured_and_empty_panels_say_so(tmp_path, monkeypatch):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from cooper_rl.plot import FEW_POINTS

    a = fake_run(tmp_path / "a", "rule", n=3, with_evals=False)
    drawn, real = {}, plt.subplots
    monkeypatch.setattr(plt, "subplots", lambda *a, **kw: drawn.setdefault("fig", real(*a, **kw)))
    plot_runs(PlotConfig(run_dirs=[str(a)], output=str(tmp_path / "f.png")))
    axes = drawn["fig"][1]
    assert [line.get_marker() for line in axes[0][0].get_lines()] == ["o"]  # 3 points: as measured, with markers
    texts = [t.get_text() for ax in axes.flat for t in ax.texts]
    assert texts.count("not logged by these runs") == 1  # no evaluations: the held-out panel says so
    assert FEW_POINTS >= 8  # a demo's reward calls


def test_the_demo_figure_has_both_panels_on_fixed_axes(tmp_path):
    from cooper_rl.plot import plot_demo

    hacks = [{"reward": 0.5 + i / 40, "verifyrm": i / 20} for i in range(10)]
    path = plot_demo(tmp_path / "demo.png", hacks, {"a": (0.2, 0.3), "b": (0.95, 0.96)}, title="t")
    assert path.stat().st_size > 10_000
    empty = plot_demo(tmp_path / "none.png", [], {"a": (None, 0.5)}, title="t")  # outside a clone: one panel says so
    assert empty.stat().st_size > 5_000
