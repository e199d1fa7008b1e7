"""cooper on a GPU, on tiny models: `cooper rl` with the one-GPU preset (configs/rl_gpu.yaml: bf16 policy weights,
gradient checkpointing, policy and VerifyRM on CUDA; vLLM off), `cooper train-rm` and `cooper eval`. Skipped
without CUDA (CI has none): run them on a GPU machine with `pytest tests/rl/test_gpu.py` (README, "GPU machines")."""

from pathlib import Path

import pytest
import torch
from tests.rl.test_train import rows
from tests.rm.test_train import _synthetic_rows, _write_jsonl

from cooper_rl.cli import parse_config
from cooper_rl.cooper.reward_model import VerifyRM
from cooper_rl.evaluate import EvalConfig, evaluate
from cooper_rl.rl.checkpoint import RM_DIR
from cooper_rl.rl.config import RLConfig
from cooper_rl.rl.train import build_trainer, run_rl
from cooper_rl.rm.train import TrainRMConfig, run_train_rm
from tiny import same, save_tiny_bert, weights

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
ROOT = Path(__file__).resolve().parents[2]


def gpu_config(assets, out, **flags):
    """configs/rl_gpu.yaml with the tiny assets, a small batch and short completions (its learning rates are for a
    1.5B policy: the tiny one needs larger steps to move in 4 steps), every new negative kind, vLLM off."""
    argv = [
        "--config",
        str(ROOT / "configs/rl_gpu.yaml"),
        "--policy",
        str(assets / "policy"),
        "--rm",
        str(assets / "rm"),
    ]
    argv += ["--datasets", str(assets / "data.jsonl"), "--negatives", "corrupt,mined,truncate,masterkey"]
    argv += [
        "--use_vllm",
        "false",
        "--num_generations",
        "4",
        "--prompts_per_step",
        "2",
        "--max_completion_length",
        "12",
    ]
    argv += ["--learning_rate", "1e-4", "--rm_learning_rate", "1e-3", "--rm_warmup_steps", "0", "--save_steps", "2"]
    argv += ["--report_to", "none", "--output_dir", str(out)]
    for k, v in flags.items():
        argv += [f"--{k}", str(v)]
    return parse_config(RLConfig, argv)


def test_the_gpu_preset_trains_the_policy_and_the_rm_on_the_gpu_and_resumes(assets, tmp_path):
    cfg = gpu_config(assets, tmp_path, max_steps=2)
    assert cfg.bf16 and cfg.gradient_checkpointing and cfg.reward == "cooper"
    trainer, reward, _ = build_trainer(cfg)
    p = next(trainer.model.parameters())
    assert p.is_cuda and p.dtype == torch.bfloat16
    assert reward.rm.device.type == "cuda"
    initial = weights(reward.rm)
    trainer.train()
    assert trainer.model.is_activation_checkpointing  # the Trainer turns it on at train() (TRL off for generation)
    metrics = rows(tmp_path)
    assert len(metrics) == 2 and sum(r["rm/n_valid"] for r in metrics) > 0  # the fitted policy answers 7 sometimes
    assert not same(initial, weights(reward.rm))
    assert all(torch.isfinite(v).all() for v in reward.rm.model.state_dict().values())
    assert (tmp_path / "checkpoint-2" / RM_DIR).is_dir()
    del trainer, reward
    torch.cuda.empty_cache()
    run_rl(gpu_config(assets, tmp_path, max_steps=4, resume_from_checkpoint="last"))
    assert [r["step"] for r in rows(tmp_path)] == [1, 2, 3, 4]
    assert (tmp_path / "checkpoint-4" / RM_DIR).is_dir()


def test_train_rm_on_the_gpu_gives_a_verifyrm_that_scores_there(tmp_path):
    data = _write_jsonl(tmp_path / "rm.jsonl", _synthetic_rows())
    backbone = save_tiny_bert(tmp_path / "backbone")
    cfg = TrainRMConfig(
        data=str(data), backbone=backbone, output_dir=str(tmp_path / "rm"), max_length=64, device="cuda"
    )
    report = run_train_rm(TrainRMConfig(**{**cfg.__dict__, "max_steps": 3, "eval_steps": 3, "batch_size": 8}))
    assert report["val_accuracy"] is not None
    rm = VerifyRM.from_pretrained(str(tmp_path / "rm"), device="cuda")
    assert rm.device.type == "cuda" and rm.meta["train"]["global_step"] == 3
    scores = rm.score(["What is 3 + 4?"] * 2, ["7"] * 2, ["The answer is \\boxed{7}.", "The answer is \\boxed{8}."])
    assert len(scores) == 2 and all(0.0 < float(x) < 1.0 for x in scores)


def test_eval_on_the_gpu_samples_the_fitted_policy(assets, tmp_path):
    cfg = EvalConfig(
        model=str(assets / "policy"),
        datasets=[str(assets / "data.jsonl")],
        k=4,
        temperature=1.0,
        max_new_tokens=12,
        use_chat_template=True,
        output_dir=str(tmp_path),
        device="cuda",
    )
    summary = evaluate(cfg)
    assert summary["overall"]["n_problems"] == 4 and summary["overall"]["k"] == 4
    assert (
        summary["overall"]["avg@k_strict"] > 0
    )  # the fitted policy's answers: test_the_tiny_policy_answers_right_and_wrong


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_shared_prefix_log_probs_and_gradients_on_the_gpu(dtype):
    """Shared-prefix log-probs (both mechanisms: cache and packed) equal TRL's whole-row forward on CUDA (fp32: float
    noise; bf16: bf16 rounding of other matmul shapes), and under gradient checkpointing the default mechanism (auto)
    shares the loss forward too."""
    from tests.rl.test_shared_prefix import _batch, _trl_logps
    from trl.trainer.utils import add_fused_lm_head

    from cooper_rl.rl.shared_prefix import checkpointed, packed_prefix_logps, shared_prefix_logps
    from tiny import tiny_llama

    model, tok = tiny_llama(seed=3)
    model = model.to("cuda", dtype)
    add_fused_lm_head(model, temperature=0.7, outputs=("log_probs", "entropy"))
    ids, mask, keep = _batch(tok, 8)
    ids, mask = ids.cuda(), mask.cuda()
    m = mask[:, -keep:].bool()
    want = _trl_logps(model, ids, mask, keep)[0]
    got = shared_prefix_logps(model, ids, mask, keep, True, lead_ok=dtype == torch.float32)[0]
    tol = 1e-4 if dtype == torch.float32 else 0.1  # bf16: ~3 significant digits on log-probs of magnitude ~10
    assert (got - want)[m].abs().max().item() <= tol
    packed = packed_prefix_logps(model, ids, mask, keep, True, lead_ok=dtype == torch.float32)[0]  # the other mechanism
    assert (packed - want)[m].abs().max().item() <= tol
    (got.sum() + packed.sum()).backward()
    assert all(p.grad is not None for p in model.parameters() if p.requires_grad)
    model.activation_checkpointing_enable()
    model.train()
    assert checkpointed(model)
    # the default mechanism (auto) packs the loss forward under checkpointing, so it shares there too (rl_gpu.yaml)
    from types import SimpleNamespace as NS

    from cooper_rl.rl.shared_prefix import SharedPrefix

    shared = SharedPrefix(NS(model=model, accelerator=NS(autocast=lambda: torch.autocast("cuda", enabled=False))))
    auto = shared.wrap_logps(lambda *a, **k: _trl_logps(*a, **k))(model, ids, mask, keep, compute_entropy=False)[0]
    assert shared.calls == 1 and shared.fallbacks == 0 and auto.requires_grad
    assert (auto - want)[m].abs().max().item() <= tol
    auto.sum().backward()
