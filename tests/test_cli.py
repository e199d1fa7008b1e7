import dataclasses
import json
from pathlib import Path

import pytest
import yaml

from cooper_rl.cli import main, parse_config
from cooper_rl.data import DataConfig
from cooper_rl.evaluate import EvalConfig
from cooper_rl.rl.config import RLConfig

ROOT = Path(__file__).resolve().parents[1]


def test_yaml_then_flags(tmp_path):
    cfg_file = tmp_path / "run.yaml"
    cfg_file.write_text("k: 3\ndatasets: [builtin:test:5, a.jsonl]\ntemperature: 0.5\n")
    cfg = parse_config(EvalConfig, ["--config", str(cfg_file), "--k", "5"])
    assert cfg.k == 5  # flag beats YAML
    assert cfg.datasets == ["builtin:test:5", "a.jsonl"]  # YAML beats default
    assert cfg.temperature == 0.5
    assert cfg.top_p == 0.95  # default kept


def test_yaml_unknown_key(tmp_path):
    cfg_file = tmp_path / "run.yaml"
    cfg_file.write_text("kk: 3\n")
    with pytest.raises(SystemExit, match="kk"):
        parse_config(EvalConfig, ["--config", str(cfg_file)])


def test_missing_config_file(tmp_path):
    with pytest.raises(SystemExit, match="not found"):
        parse_config(DataConfig, ["--config", str(tmp_path / "nope.yaml")])


def test_data_command_writes_jsonl(tmp_path, capsys):
    out = tmp_path / "p.jsonl"
    assert main(["data", "--source", "builtin:test:12", "--output", str(out)]) == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == 12 and all(r["question"] and r["answer"] for r in rows)
    assert json.loads(capsys.readouterr().out.splitlines()[0])["n_written"] == 12


def test_data_command_bad_file_names_row_and_field(tmp_path, capsys):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"question": "q1", "answer": "#### 3"}\n{"question": "", "answer": "#### 4"}\n')
    assert main(["data", "--source", str(bad), "--output", str(tmp_path / "o.jsonl")]) == 2
    err = capsys.readouterr().err
    assert "bad.jsonl" in err and "row 2" in err and "question" in err
    # with --skip_invalid the row is skipped and counted, not silently dropped
    assert main(["data", "--source", str(bad), "--output", str(tmp_path / "o.jsonl"), "--skip_invalid", "true"]) == 0
    report = json.loads(capsys.readouterr().out.splitlines()[0])
    assert report["n_written"] == 1 and report["n_skipped"] == 1


def test_unknown_command():
    assert main(["nope"]) == 2
    assert main([]) == 0


@pytest.mark.parametrize("name", ["eval", "data", "collect", "label", "train-rm", "eval-rm", "rl", "plot", "demo"])
def test_every_command_has_config_and_help(name, capsys):
    with pytest.raises(SystemExit) as e:
        main([name, "--help"])
    assert e.value.code == 0 and "--config" in capsys.readouterr().out


def test_every_committed_preset_parses_into_cooper_rls_config():
    presets = sorted((ROOT / "configs").glob("*.yaml"))
    assert {p.name for p in presets} >= {"rl_cpu.yaml", "rl_cpu_small.yaml", "rl_gpu.yaml"}
    for p in presets:
        parse_config(RLConfig, ["--config", str(p)])  # unknown keys or bad values exit


def test_the_cpu_preset_is_the_regime_the_rl_learns_sweep_picked():
    """configs/rl_cpu.yaml steps as experiments/rl_learns' regime does (the regime's flags over the experiment's base
    preset and common flags), so the README's claim for the preset is the experiment's."""
    settings = yaml.safe_load((ROOT / "experiments/rl_learns/settings.yaml").read_text())
    preset = yaml.safe_load((ROOT / "configs/rl_cpu.yaml").read_text())
    base = yaml.safe_load((ROOT / "configs/rl_cpu_small.yaml").read_text())  # what the experiment's runs start from
    run = base | settings["common"] | settings["settings"][settings["regime"]]["flags"]
    run["data_seed"] = settings["filter"]["data_seed"]  # run.py passes the filter's
    defaults = {f.name: f.default for f in dataclasses.fields(RLConfig)}
    for k in ("num_generations", "prompts_per_step", "steps_per_generation",
              "learning_rate", "lr_scheduler_type", "warmup_steps", "max_steps", "beta", "temperature", "top_p",
              "loss_type", "scale_rewards", "max_prompt_length", "max_completion_length", "bf16_autocast",
              "rollout_bf16_weights", "rm_bf16_autocast", "bf16", "rollout_autocast", "num_iterations",
              "compact_lm_head", "trim_padding", "sampler_logprobs", "data_seed", "reward"):  # fmt: skip
        assert preset.get(k, defaults[k]) == run.get(k, defaults[k]), k
    # the micro-batch size may differ (the preset: 32 rows, the runs: 16; issue 105's benchmark): with loss_type grpo
    # and micro-batches of whole, equal-sized groups the loss and its gradient are the same
    rows = preset["prompts_per_step"] * preset["num_generations"]
    assert preset.get("loss_type", defaults["loss_type"]) == "grpo"
    for accumulation in (preset["gradient_accumulation_steps"], run["gradient_accumulation_steps"]):
        assert rows % accumulation == 0 and (rows // accumulation) % preset["num_generations"] == 0
