"""`cooper sft` on a tiny Llama with the SmolLM2 tokenizer: chat prompt/completion rows, loss only on the
solution, a saved policy that `cooper rl` / `cooper eval` can load."""

import json

import pytest

from cooper_rl.rl.sft import SFTRunConfig, run_sft, sft_rows
from cooper_rl.trainer_hooks import ElapsedTime, is_complete_checkpoint
from tiny import run_cli_until_killed, save_tiny_llama


def test_rows_use_the_rl_prompt_and_the_boxed_answer(tmp_path):
    data = tmp_path / "p.jsonl"
    data.write_text(
        json.dumps({"question": "What is 2 + 3?", "answer": "2 + 3 = 5\n#### 5"})
        + "\n"
        + json.dumps({"question": "What is 1 + 1?", "answer": "2"})
        + "\n"
    )  # no worked solution
    rows, skipped = sft_rows(SFTRunConfig(datasets=[str(data)]))
    assert skipped == 1 and len(rows) == 1
    assert rows[0]["prompt"][0]["content"].startswith("What is 2 + 3?\nPlease reason step by step")
    assert rows[0]["completion"][0]["content"].endswith("The answer is $\\boxed{5}$.")
    none = tmp_path / "none.jsonl"
    none.write_text(json.dumps({"question": "What is 1 + 1?", "answer": "2"}) + "\n")
    with pytest.raises(ValueError, match="no worked solutions"):
        sft_rows(SFTRunConfig(datasets=[str(none)]))


def test_sft_fits_the_solutions_and_saves_a_loadable_policy(tmp_path, one_thread):
    from transformers import AutoModelForCausalLM

    save_tiny_llama(tmp_path / "tiny")
    summary = run_sft(
        SFTRunConfig(
            policy=str(tmp_path / "tiny"),
            datasets=["builtin:train:8:1"],
            num_train_epochs=10,
            batch_size=4,
            learning_rate=3e-3,
            save_steps=1000,
            output_dir=str(tmp_path / "out"),
        )
    )
    assert summary["n_examples"] == 8 and summary["n_skipped"] == 0 and summary["global_step"] == 20
    assert (
        summary["last_logged_loss"] < 0.8 * summary["first_logged_loss"]
    )  # it learns the solutions (10.4 -> 7.7 seen)
    policy = tmp_path / "out" / "policy"
    assert (policy / "model.safetensors").is_file() and (policy / "tokenizer.json").is_file()
    assert AutoModelForCausalLM.from_pretrained(policy).config.num_hidden_layers == 2


def test_sft_resumes_after_sigkill(tmp_path):
    """`cooper sft` SIGKILLed after a checkpoint: a rerun with --resume_from_checkpoint last goes on from it."""
    out = tmp_path / "out"
    args = ["sft", "--policy", save_tiny_llama(tmp_path / "tiny"), "--output_dir", str(out)]
    args += [
        "--datasets",
        "builtin:train:64:1",
        "--max_steps",
        "40",
        "--batch_size",
        "2",
        "--save_steps",
        "2",
        "--learning_rate",
        "1e-3",
    ]
    run_cli_until_killed(args, ready=lambda: bool(list(out.glob("checkpoint-*/trainer_state.json"))))
    assert list(out.glob("checkpoint-*/trainer_state.json")), "no checkpoint before the deadline"
    assert not (out / "sft_summary.json").exists()  # it really was killed mid-run
    records = {str(c): ElapsedTime.recorded(c) for c in out.glob("checkpoint-*") if is_complete_checkpoint(c)}

    cfg = SFTRunConfig(
        policy=str(tmp_path / "tiny"),
        datasets=["builtin:train:64:1"],
        max_steps=40,
        batch_size=2,
        save_steps=2,
        learning_rate=1e-3,
        output_dir=str(out),
        resume_from_checkpoint="last",
    )
    summary = run_sft(cfg)
    start = int(summary["resumed_from"].rsplit("-", 1)[1])  # checkpoint-N
    assert 0 < start < 40 and summary["global_step"] == 40
    # the time to train: the killed process's up to the checkpoint resumed from, then this one's
    killed_at = records[summary["resumed_from"]]
    assert killed_at > 0 and summary["train_seconds_total"] - summary["train_seconds"] == pytest.approx(
        killed_at, abs=0.5
    )


def test_sft_resume_without_checkpoint_says_so_in_one_line(tmp_path, capsys):
    from cooper_rl.cli import main

    assert main(["sft", "--output_dir", str(tmp_path), "--resume_from_checkpoint", "last"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "no complete checkpoint" in err and str(tmp_path) in err
