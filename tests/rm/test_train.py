import json
import random
import re

import pytest

from cooper_rl.data import DataError
from cooper_rl.rm.train import TrainRMConfig, load_rm_rows, run_train_rm, split_by_question
from cooper_rl.trainer_hooks import ElapsedTime, is_complete_checkpoint


def _synthetic_rows(n_questions=10, seed=0):
    """4 completions per question: 2 end with the reference in \\boxed{}, 2 with another number."""
    rng = random.Random(seed)
    rows = []
    for i in range(n_questions):
        a, b = rng.randint(2, 50), rng.randint(2, 50)
        for j in range(4):
            ok = j % 2 == 0
            ans = a + b if ok else a + b + rng.randint(1, 9)
            rows.append(
                {
                    "question": f"Q{i}: what is {a} + {b}?",
                    "reference": str(a + b),
                    "completion": f"Adding gives {ans}. \\boxed{{{ans}}}",
                    "label": ok,
                }
            )
    return rows


def _write_jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_train_rm_writes_model_and_metrics(tmp_path, monkeypatch):
    from transformers import Trainer

    passes = []  # every validation pass: the scheduled ones, and none after training
    evaluate = Trainer.evaluate
    monkeypatch.setattr(Trainer, "evaluate", lambda self, *a, **k: passes.append(1) or evaluate(self, *a, **k))
    data = _write_jsonl(tmp_path / "rm.jsonl", _synthetic_rows())
    out = tmp_path / "rm"
    cfg = TrainRMConfig(
        data=str(data), output_dir=str(out), max_length=64, max_steps=2, eval_steps=1, batch_size=8, val_fraction=0.2
    )
    report = run_train_rm(cfg)
    for name in ("model.safetensors", "config.json", "tokenizer.json", "cooper_rm.json", "train_metrics.json"):
        assert (out / name).is_file(), name
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rm", "rm.jsonl"]  # trainer checkpoints removed
    meta = json.loads((out / "cooper_rm.json").read_text())
    assert meta["max_length"] == 64 and meta["backbone"] == "minilm-l6" and meta["template_version"] == "cooper-rm-v1"
    assert meta["train"]["global_step"] == 2
    assert report["class_balance"]["train"]["n"] + report["class_balance"]["val"]["n"] == 40
    assert report["class_balance"]["val"] == {"n": 8, "n_pos": 4, "pos_rate": 0.5}
    assert report["val_accuracy"] is not None and 0.0 <= report["val_accuracy"] <= 1.0
    # the returned model is the best checkpoint, and its validation is the one logged for it (no second pass)
    assert report["val_accuracy"] == report["best_val_accuracy"]
    assert report["val_accuracy"] in [h["accuracy"] for h in report["eval_history"]]
    assert len(passes) == len(report["eval_history"]) == 2
    assert json.loads((out / "train_metrics.json").read_text())["global_step"] == 2
    # the validation curve is in the metrics (the console shows only a bar): one entry per scheduled evaluation
    assert [h["step"] for h in report["eval_history"]] == [1, 2]
    assert all(0.0 <= h["accuracy"] <= 1.0 for h in report["eval_history"])
    assert 0.0 < report["eval_seconds"] < report["train_seconds"]
    assert report["train_seconds"] <= report["train_seconds_total"] < report["train_seconds"] + 1.0  # one process


def test_split_is_grouped_by_question_and_deterministic():
    rows = [{**r, "label": int(r["label"])} for r in _synthetic_rows(20)]
    train, val = split_by_question(rows, 0.25, seed=3)
    assert not {r["question"] for r in train} & {r["question"] for r in val}
    assert len({r["question"] for r in val}) == 5 and len(train) + len(val) == len(rows)
    assert split_by_question(rows, 0.25, seed=3) == (train, val)


@pytest.mark.parametrize(
    "bad, field",
    [
        ({"question": "q", "reference": "1", "completion": "c"}, "label"),
        ({"question": "q", "reference": "1", "completion": "c", "label": "maybe"}, "label"),
        ({"question": "q", "completion": "c", "label": 1}, "reference"),
        ({"question": "", "reference": "1", "completion": "c", "label": 1}, "question"),
        ({"question": "q", "reference": "1", "completion": 5, "label": 1}, "completion"),
    ],
)
def test_bad_rows_raise_data_error_naming_row_and_field(tmp_path, bad, field):
    good = {"question": "q", "reference": "1", "completion": "c", "label": 1}
    path = _write_jsonl(tmp_path / "bad.jsonl", [good, good, bad])
    with pytest.raises(DataError, match=rf"bad\.jsonl: row 3: .*'{field}'"):
        load_rm_rows(str(path))


def test_authors_parquet_schema_and_verifybench_fields_load(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = tmp_path / "verifyrm.parquet"
    pq.write_table(
        pa.table(
            {
                "question": ["What is 2+2?", "What is 3+3?"],
                "reference_answer": ["4", "6"],
                "completion": ["\\boxed{4}", "\\boxed{7}"],
                "label": [1, 0],
            }
        ),
        path,
    )
    rows = load_rm_rows(str(path))
    assert rows == [
        {"question": "What is 2+2?", "reference": "4", "completion": "\\boxed{4}", "label": 1},
        {"question": "What is 3+3?", "reference": "6", "completion": "\\boxed{7}", "label": 0},
    ]
    vb = _write_jsonl(
        tmp_path / "vb.jsonl",
        [{"question": "q", "answer": 12, "completion": "c", "gold_correct": False, "answer_type": "integer"}],
    )
    assert load_rm_rows(str(vb)) == [
        {"question": "q", "reference": "12", "completion": "c", "label": 0, "answer_type": "integer"}
    ]


def test_train_rm_bf16_autocast_resumes_after_sigkill(tmp_path):
    """A killed train-rm continues from its newest checkpoint (OUTPUT.checkpoints) and records the data hash."""
    from tiny import run_cli_until_killed, save_tiny_bert

    data = _write_jsonl(tmp_path / "rm.jsonl", _synthetic_rows(n_questions=20))
    out = tmp_path / "rm"
    args = ["train-rm", "--data", str(data), "--backbone", save_tiny_bert(tmp_path / "bert"), "--output_dir", str(out)]
    args += ["--max_length", "64", "--max_steps", "60", "--eval_steps", "2", "--batch_size", "4"]
    args += ["--bf16_autocast", "true", "--learning_rate", "1e-3"]
    ckpts = tmp_path / "rm.checkpoints"
    run_cli_until_killed(args, ready=lambda: bool(list(ckpts.glob("checkpoint-*/trainer_state.json"))))
    assert list(ckpts.glob("checkpoint-*/trainer_state.json")), "no checkpoint before the deadline"
    assert list(ckpts.glob("checkpoint-*/optimizer.pt")) and list(ckpts.glob("checkpoint-*/scheduler.pt"))
    assert not (out / "train_metrics.json").exists()  # it really was killed mid-run

    cfg = TrainRMConfig(
        data=str(data),
        backbone=str(tmp_path / "bert"),
        output_dir=str(out),
        max_length=64,
        max_steps=60,
        eval_steps=2,
        batch_size=4,
        bf16_autocast=True,
        learning_rate=1e-3,
        resume_from_checkpoint="last",
    )
    # every complete checkpoint (trainer_state.json written) holds its time record
    records = {str(c): ElapsedTime.recorded(c) for c in ckpts.glob("checkpoint-*") if is_complete_checkpoint(c)}
    assert records and all(v is not None for v in records.values())
    report = run_train_rm(cfg)
    assert report["resumed_from"] and report["global_step"] == 60
    # the time to train: the killed process's up to the checkpoint resumed from, then this one's
    killed_at = records[report["resumed_from"]]
    assert killed_at > 0 and report["train_seconds_total"] - report["train_seconds"] == pytest.approx(
        killed_at, abs=0.5
    )
    assert report["data_rows"] == 80 and len(report["data_sha256"]) == 64
    assert not ckpts.exists()  # checkpoints removed once the RM is saved
    with pytest.raises(FileNotFoundError, match="no complete checkpoint"):
        run_train_rm(TrainRMConfig(**{**cfg.__dict__, "output_dir": str(tmp_path / "other")}))


def test_fresh_head_trains_at_its_own_learning_rate(tmp_path):
    """A backbone without a classification head gets a new one, trained at learning_rate x head_lr_multiplier
    (AdamW steps are ~lr in size, so after 2 steps the head moved ~1000x more than the encoder)."""
    import torch
    from transformers import BertConfig, BertModel

    from cooper_rl.cooper.reward_model import VerifyRM
    from cooper_rl.models import load_tokenizer

    tok = load_tokenizer("minilm-l6")
    torch.manual_seed(0)
    cfg = BertConfig(
        vocab_size=len(tok), hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=64
    )
    BertModel(cfg).save_pretrained(tmp_path / "base")
    tok.save_pretrained(tmp_path / "base")
    from transformers import set_seed

    set_seed(0)  # as run_train_rm does before building the RM: the same initial head
    start = VerifyRM.from_pretrained(str(tmp_path / "base"), device="cpu")
    assert sorted(start.new_parameters) == ["classifier.bias", "classifier.weight"]
    data = _write_jsonl(tmp_path / "rm.jsonl", _synthetic_rows())
    report = run_train_rm(
        TrainRMConfig(
            data=str(data),
            backbone=str(tmp_path / "base"),
            output_dir=str(tmp_path / "rm"),
            max_length=64,
            max_steps=2,
            batch_size=8,
            learning_rate=1e-6,
            head_lr_multiplier=1000,
            warmup_ratio=0.0,
            val_fraction=0.0,
            seed=0,
        )
    )
    assert report["new_head_parameters"] == ["classifier.bias", "classifier.weight"]
    end = VerifyRM.from_pretrained(str(tmp_path / "rm"), device="cpu")
    assert end.new_parameters == []  # a trained RM has its head
    before, after = dict(start.model.named_parameters()), dict(end.model.named_parameters())
    moved = {n: (after[n] - before[n]).abs().max().item() for n in before}
    encoder = max(v for n, v in moved.items() if not n.startswith("classifier"))
    assert moved["classifier.weight"] > 100 * encoder


@pytest.mark.parametrize("sig", ["SIGTERM", "SIGUSR1"])
def test_train_rm_saves_a_checkpoint_and_stops_on_signal(tmp_path, sig):
    """SIGTERM/SIGUSR1 mid-run: the step in flight is checkpointed (with optimizer and schedule, far from any
    scheduled save), nothing final is written, and the command exits 143."""
    import os
    import signal
    import subprocess
    import sys
    import time

    from tiny import save_tiny_bert

    data = _write_jsonl(tmp_path / "rm.jsonl", _synthetic_rows(n_questions=20))
    out = tmp_path / "rm"
    args = ["train-rm", "--data", str(data), "--backbone", save_tiny_bert(tmp_path / "bert"), "--output_dir", str(out)]
    args += ["--max_length", "64", "--max_steps", "100000", "--eval_steps", "50000", "--batch_size", "4"]
    bar = tmp_path / "stderr.txt"  # the progress bar: it shows when training has taken a step
    with open(bar, "w") as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", "cooper_rl.cli", *args],
            env={**os.environ, "OMP_NUM_THREADS": "1"},
            stdout=subprocess.PIPE,
            stderr=err,
            text=True,
        )
    try:
        assert proc.stdout.readline().startswith("[train-rm]")  # rows loaded
        deadline = time.time() + 120  # a signal before training began would stop it with nothing to save
        while not re.search(r"\| *[1-9]\d*/100000", bar.read_text()) and time.time() < deadline:
            time.sleep(0.5)
        proc.send_signal(getattr(signal, sig))
        rc = proc.wait(timeout=120)
    finally:
        proc.kill()
    assert rc == 143
    ckpts = list((tmp_path / "rm.checkpoints").glob("checkpoint-*"))
    assert len(ckpts) == 1
    step = int(ckpts[0].name.split("-")[1])
    assert 0 < step < 50000
    assert json.loads((ckpts[0] / "trainer_state.json").read_text())["global_step"] == step
    assert (ckpts[0] / "optimizer.pt").is_file() and (ckpts[0] / "scheduler.pt").is_file()
    assert not out.exists()


def test_a_checkpoint_at_max_steps_is_finished_not_trained_further(tmp_path, monkeypatch):
    """A job stopped between its last checkpoint (at max_steps) and its final save: the resume saves that RM; the
    Trainer alone would take a step past max_steps."""
    import shutil

    import cooper_rl.rm.train as train_mod
    from tiny import save_tiny_bert

    data = _write_jsonl(tmp_path / "rm.jsonl", _synthetic_rows(n_questions=20))
    cfg = TrainRMConfig(
        data=str(data),
        backbone=save_tiny_bert(tmp_path / "bert"),
        output_dir=str(tmp_path / "rm"),
        max_length=64,
        max_steps=4,
        eval_steps=2,
        batch_size=4,
        learning_rate=1e-3,
    )
    keep = tmp_path / "kept"
    # the first run's checkpoints survive its end, as if it had been stopped before its final save
    rmtree = shutil.rmtree

    def keep_checkpoints(path, **kw):
        if str(path).endswith(".checkpoints"):
            shutil.copytree(path, keep)
        rmtree(path, **kw)

    monkeypatch.setattr(train_mod.shutil, "rmtree", keep_checkpoints)
    first = run_train_rm(cfg)
    monkeypatch.undo()
    from safetensors.torch import load_file

    weights = load_file(tmp_path / "rm" / "model.safetensors")
    shutil.rmtree(tmp_path / "rm")
    shutil.copytree(keep, tmp_path / "rm.checkpoints")
    assert (tmp_path / "rm.checkpoints" / "checkpoint-4").is_dir()
    again = run_train_rm(TrainRMConfig(**{**cfg.__dict__, "resume_from_checkpoint": "last"}))
    assert again["global_step"] == 4 and again["resumed_from"].endswith("checkpoint-4")
    assert again["val_accuracy"] == first["val_accuracy"] and again["val_loss"] == first["val_loss"]
    assert again["eval_history"] == first["eval_history"]
    after = load_file(tmp_path / "rm" / "model.safetensors")
    assert after.keys() == weights.keys() and all(after[k].equal(weights[k]) for k in weights)

    # the best checkpoint other than the last (as train() leaves it where an earlier validation was better): the
    # resume saves the best one's weights, not the last one's
    ckpts = tmp_path / "rm.checkpoints"
    shutil.rmtree(tmp_path / "rm")
    shutil.copytree(keep, ckpts)
    state_file = ckpts / "checkpoint-4" / "trainer_state.json"
    state = json.loads(state_file.read_text())
    state["best_model_checkpoint"] = str(ckpts / "checkpoint-2")
    state_file.write_text(json.dumps(state))
    best = load_file(ckpts / "checkpoint-2" / "model.safetensors")
    last = load_file(ckpts / "checkpoint-4" / "model.safetensors")
    assert any(not best[k].equal(last[k]) for k in best)
    run_train_rm(TrainRMConfig(**{**cfg.__dict__, "resume_from_checkpoint": "last"}))
    after = load_file(tmp_path / "rm" / "model.safetensors")
    assert after.keys() == best.keys() and all(after[k].equal(best[k]) for k in best)


def test_train_rm_with_lora_saves_adapter_and_head_only(tmp_path):
    from cooper_rl.cooper.reward_model import VerifyRM
    from tiny import save_tiny_llama

    data = _write_jsonl(tmp_path / "rm.jsonl", _synthetic_rows())
    base = save_tiny_llama(tmp_path / "base")
    out = tmp_path / "rm"
    cfg = TrainRMConfig(
        data=str(data), backbone=base, output_dir=str(out), max_length=64, max_steps=2, eval_steps=1, batch_size=8,
        val_fraction=0.2, lora_rank=2, learning_rate=1e-2,
    )  # fmt: skip
    report = run_train_rm(cfg)
    assert sorted(p.name for p in out.iterdir()) == [
        "README.md", "adapter_config.json", "adapter_model.safetensors", "cooper_rm.json", "train_metrics.json",
    ]  # fmt: skip
    assert report["adapter"]["rank"] == 2 and report["adapter"]["base"] == base
    # trained: the rows' scores of the saved RM are those of the best checkpoint's validation
    rm = VerifyRM.from_pretrained(str(out), device="cpu")
    rows = load_rm_rows(str(data))
    assert not rm.is_adapter and len(rm.score([r["question"] for r in rows], [r["reference"] for r in rows],
                                              [r["completion"] for r in rows])) == 40  # fmt: skip
