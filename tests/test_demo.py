"""cooper demo: the whole pipeline on tiny models (RM build + cache, warm-up + cache, eval, Cooper RL, summary)."""

import json
from pathlib import Path

from cooper_rl.demo import DemoConfig, build_demo_policy, cooper_activity, hacked_rollouts, run_demo


def test_warm_up_is_cached_by_its_settings(assets, tmp_path, monkeypatch, one_thread):
    monkeypatch.setenv("COOPER_CACHE", str(tmp_path / "cache"))
    cfg = DemoConfig(model=str(assets / "policy"), sft_steps=2, sft_batch_size=2)
    path, info = build_demo_policy(cfg)
    assert not info["cached"] and info["global_step"] == 2 and (tmp_path / "cache") in Path(path).parents
    assert (Path(path) / "model.safetensors").is_file()
    assert not list(Path(path).parent.glob("checkpoint-*"))  # no trainer checkpoint (1.6 GB at SmolLM2 size)
    path2, info2 = build_demo_policy(cfg)
    assert path2 == path and info2["cached"]
    assert build_demo_policy(DemoConfig(model=cfg.model, sft_steps=0))[0] == cfg.model  # no warm-up asked


def test_cooper_activity_sums_the_steps():
    rows = [
        {"rule_accuracy": 0.25, "rm/n_valid": 2, "rm/n_pairs": 3, "rm/invalid/still_correct": 1, "rm_fooled_rate": 0.5}
        | {"rm/valid/corrupt": 1, "rm/valid/mined": 1, "rm/valid/truncate": 0},
        {"rule_accuracy": 0.5, "rm/n_valid": 0, "rm/n_pairs": 0, "rm/invalid/no_positive": 2, "rm_fooled_rate": None},
    ]
    a = cooper_activity(rows)
    assert (a["valid_pairs"], a["pairs_tried"], a["rm_updates"]) == (2, 3, 1)
    assert a["invalid"] == {"still_correct": 1, "no_positive": 2} and a["rm_fooled_rate_mean"] == 0.5
    assert a["valid_by_kind"] == {"corrupt": 1, "mined": 1}
    assert (a["rule_accuracy_first"], a["rule_accuracy_last"], a["rule_accuracy_mean"]) == (0.25, 0.5, 0.375)
    assert a["rm_offset"] is None and a["recalibrate_seconds"] == 0.0  # no recalibration in these rows
    rows[0] |= {"rm/recal_offset": 0.5, "time/recalibrate": 2.0}
    rows[1] |= {"rm/recal_offset": 0.75, "time/recalibrate": 3.0}
    a = cooper_activity(rows)
    assert a["rm_offset"] == 0.75 and a["recalibrate_seconds"] == 5.0  # the last total offset, the summed time


def test_demo_runs_the_whole_pipeline(assets, tmp_path, monkeypatch, one_thread, capsys):
    monkeypatch.setenv("COOPER_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "demo"
    summary = run_demo(
        DemoConfig(
            model=str(assets / "policy"),
            rm=str(assets / "rm"),
            sft_steps=1,
            sft_batch_size=2,
            n_problems=2,
            k=2,
            rm_eval_problems=2,
            hacked_rollouts=4,
            max_new_tokens=8,
            rl_steps=2,
            num_generations=2,
            prompts_per_step=2,
            report_to="none",
            output_dir=str(out),
        )
    )
    printed = capsys.readouterr().out
    assert "policy avg@k (strict rule)" in printed and "valid pairs" in printed and "RM accuracy" in printed
    assert "The hack:" in printed and "weaker RM" in printed  # the committed issue-67 rollouts, rescored
    assert 0 <= summary["before"]["avg@k_strict"] <= 1 and 0 <= summary["after"]["avg@k_strict"] <= 1
    assert 0 <= summary["rm_heldout_before"]["accuracy"] <= 1 and 0 <= summary["rm_heldout_after"]["accuracy"] <= 1
    assert summary["hacked_rollouts"]["n"] == 4 and 0 <= summary["hacked_rollouts"]["verifyrm_accepts"] <= 1
    assert summary["cooper"]["rule_accuracy_first"] is not None
    assert (out / "demo.png").stat().st_size > 10_000 and (out / "demo_summary.json").is_file()
    assert (out / "rl" / "policy" / "model.safetensors").is_file() and (out / "rl" / "rm" / "cooper_rm.json").is_file()


def test_the_hacked_rollouts_are_the_weaker_rms_recorded_mistakes():
    from pathlib import Path

    from cooper_rl.demo import COMMITTED

    root = Path(__file__).parents[1] / COMMITTED
    hacks = hacked_rollouts(root, n=30, seed=1)
    assert len(hacks) == 30 and len({(h["run"], h["step"], h["completion"]) for h in hacks}) > 20
    assert all(h["verdict"] is False and h["reward"] >= 0.5 and h["run"].startswith("model-s") for h in hacks)
    assert hacks == hacked_rollouts(root, n=30, seed=1)  # seeded
    assert hacked_rollouts(Path("/nonexistent"), n=5) == []  # outside a clone


def test_the_demo_points_to_the_committed_experiment_with_its_own_numbers(tmp_path):
    from pathlib import Path

    from cooper_rl.demo import COMMITTED, committed_experiment

    root = Path(__file__).parents[1] / COMMITTED
    text = committed_experiment(root)
    conds = json.loads((root / "summary.json").read_text())["comparison"]["conditions"]
    assert "not this run" in text and str(root / "comparison.png") in text
    assert f"rule {conds['rule']['end']['built-in test']['mean']:.1f} %" in text
    assert f"collapsed in {len(conds['model']['collapsed'])} of 3 seeds" in text
    assert committed_experiment(tmp_path) == ""  # outside a clone: nothing to point to
