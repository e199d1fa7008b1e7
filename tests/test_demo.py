"""cooper demo: the whole pipeline on tiny models (RM build + cache, eval, Cooper RL, eval, plot)."""

import json

from cooper_rl.demo import DemoConfig, build_demo_rm, run_demo
from tiny import tiny_rm


def test_build_demo_rm_trains_once_then_reuses_the_cache(tmp_path, monkeypatch, one_thread):
    monkeypatch.setenv("COOPER_CACHE", str(tmp_path / "cache"))
    tiny_rm(tmp_path / "backbone")
    cfg = DemoConfig(rm_backbone=str(tmp_path / "backbone"), rm_problems=20, rm_steps=2)
    path, info = build_demo_rm(cfg, tmp_path / "work")
    assert not info["cached"] and info["global_step"] == 2 and str(tmp_path / "cache") in path
    rows = [json.loads(x) for x in (tmp_path / "work" / "rm_train.jsonl").read_text().splitlines()]
    assert {r["label"] for r in rows} == {0, 1} and len(rows) >= 40
    path2, info2 = build_demo_rm(cfg, tmp_path / "work2")
    assert path2 == path and info2["cached"] and not (tmp_path / "work2").exists()
    path3, _ = build_demo_rm(DemoConfig(rm_backbone=cfg.rm_backbone, rm_problems=20, rm_steps=3), tmp_path / "work3")
    assert path3 != path  # other settings, other cache entry


def test_demo_runs_the_whole_pipeline(assets, tmp_path, one_thread, capsys):  # noqa: F811
    out = tmp_path / "demo"
    summary = run_demo(
        DemoConfig(
            model=str(assets / "policy"),
            rm=str(assets / "rm"),
            n_problems=2,
            k=2,
            max_new_tokens=8,
            rl_steps=2,
            eval_steps=1,
            num_generations=2,
            prompts_per_step=2,
            output_dir=str(out),
        )
    )
    printed = capsys.readouterr().out
    assert "before" in printed and "after" in printed and "avg@k_strict" in printed
    assert 0 <= summary["before"]["avg@k_strict"] <= 1 and 0 <= summary["after"]["avg@k_strict"] <= 1
    assert [s for s, _ in summary["rm_heldout_accuracy"]] == [0, 1, 2]
    assert (out / "dynamics.png").stat().st_size > 10_000 and (out / "demo_summary.json").is_file()
    assert (out / "rl" / "policy" / "model.safetensors").is_file() and (out / "rl" / "rm" / "cooper_rm.json").is_file()
