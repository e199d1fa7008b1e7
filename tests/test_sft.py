"""`cooper sft` on a tiny Llama with the SmolLM2 tokenizer: chat prompt/completion rows, loss only on the
solution, a saved policy that `cooper rl` / `cooper eval` can load."""

import json

import pytest
from tiny import save_tiny_llama

from cooper_rl.sft import SFTRunConfig, run_sft, sft_rows


def test_rows_use_the_rl_prompt_and_the_boxed_answer(tmp_path):
    data = tmp_path / "p.jsonl"
    data.write_text(json.dumps({"question": "What is 2 + 3?", "answer": "2 + 3 = 5\n#### 5"}) + "\n"
                    + json.dumps({"question": "What is 1 + 1?", "answer": "2"}) + "\n")  # no worked solution
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
    summary = run_sft(SFTRunConfig(policy=str(tmp_path / "tiny"), datasets=["builtin:train:8:1"], num_train_epochs=10,
                                   batch_size=4, learning_rate=3e-3, save_steps=1000, output_dir=str(tmp_path / "out")))
    assert summary["n_examples"] == 8 and summary["n_skipped"] == 0 and summary["global_step"] == 20
    assert summary["last_logged_loss"] < 0.8 * summary["first_logged_loss"]  # it learns the solutions (10.4 -> 7.7 seen)
    policy = tmp_path / "out" / "policy"
    assert (policy / "model.safetensors").is_file() and (policy / "tokenizer.json").is_file()
    assert AutoModelForCausalLM.from_pretrained(policy).config.num_hidden_layers == 2
