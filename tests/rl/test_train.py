"""`cooper rl` end to end on a tiny policy (2-layer Llama, SmolLM2 tokenizer, taught to answer \\boxed{7}) and a
tiny random BERT reward model: the three reward modes, metrics.jsonl, RM checkpointing and resume."""

import json
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file, save_file

from cooper_rl.cooper.rewards import CooperReward, ModelReward
from cooper_rl.io import DataError
from cooper_rl.models import load_tokenizer
from cooper_rl.rl.checkpoint import RM_DIR, RM_STATE
from cooper_rl.rl.config import RLConfig, check_resume_identity, rm_weights_sha256
from cooper_rl.rl.rollout_speed import bf16_rollout_copy
from cooper_rl.rl.train import build_dataset, build_trainer, run_rl
from cooper_rl.rl.trl_internals import wrap_trainer_method
from cooper_rl.trainer_hooks import ElapsedTime, resolve_checkpoint
from tiny import QUESTIONS, run_cli_until_killed, same, weights


def config(assets, out, reward, **kw):
    base = {
        "policy": str(assets / "policy"),
        "rm": str(assets / "rm"),
        "datasets": [str(assets / "data.jsonl")],
        "num_generations": 4,
        "prompts_per_step": 2,
        "max_completion_length": 12,
        "max_steps": 2,
        "save_steps": 100,
        "learning_rate": 1e-4,
        "rm_learning_rate": 1e-3,
        "output_dir": str(out),
    }
    return RLConfig(reward=reward, **{**base, **kw})


def rows(out):
    return [json.loads(x) for x in (Path(out) / "metrics.jsonl").read_text().splitlines()]


def test_the_tiny_policy_answers_right_and_wrong(assets, one_thread):
    """The fixture's fitted policy, sampled as the RL runs sample it (temperature 1, 12 new tokens), gives the strict
    rule verifier both right and wrong answers often (~40 % right): a few steps of 8 rollouts hold both whatever
    the sampler's random stream (CPU or GPU), which the RM-update tests rely on. With 30 fitting steps (before
    2026-11-26) it was ~11 %: the RM-update tests passed on CPU by their seed and failed on a GPU."""
    from transformers import AutoModelForCausalLM

    from cooper_rl.generation import build_prompt
    from cooper_rl.verify import verify

    tok = load_tokenizer(str(assets / "policy"))
    model = AutoModelForCausalLM.from_pretrained(str(assets / "policy"))
    torch.manual_seed(0)
    right = []
    for q in QUESTIONS:
        ids = torch.tensor([tok(build_prompt(tok, q), add_special_tokens=False)["input_ids"]] * 32)
        out = model.generate(
            ids,
            attention_mask=torch.ones_like(ids),
            do_sample=True,
            temperature=1.0,
            top_p=1.0,
            top_k=0,
            max_new_tokens=12,
            pad_token_id=tok.pad_token_id,
        )
        right += [verify(t, "7") for t in tok.batch_decode(out[:, ids.shape[1] :], skip_special_tokens=True)]
    assert 0.2 < sum(right) / len(right) < 0.8, sum(right) / len(right)


def test_rule_mode_run_rl(assets, tmp_path, one_thread):
    (tmp_path / "metrics.jsonl").write_text(
        '{"step": 0, "stale": 1}\n{"step": 1, "stale": 1}\n'
    )  # a killed earlier run
    (tmp_path / "evals.jsonl").write_text('{"step": 0, "stale": 1}\n')
    summary = run_rl(config(assets, tmp_path, "rule"))
    assert not (tmp_path / "evals.jsonl").read_text()  # a fresh start drops the old run's lines
    assert summary["global_step"] == 2 and summary["n_prompts"] == 4
    import platform

    on_cpu_glibc = platform.libc_ver()[0] == "glibc" and not torch.cuda.is_available()
    assert summary["freed_memory_kept"] == on_cpu_glibc  # keep_freed_memory: CPU runs under glibc
    assert [r["step"] for r in rows(tmp_path)] == [1, 2]
    assert all(0 <= r["rule_accuracy"] <= 1 for r in rows(tmp_path))
    assert (tmp_path / "policy" / "model.safetensors").is_file() and "rm_dir" not in summary
    assert not (tmp_path / "checkpoint-2" / RM_DIR).exists()  # only cooper mode checkpoints an RM
    rollouts = [json.loads(x) for x in (tmp_path / "rollouts.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rollouts] == [1] * 8 + [2] * 8  # every rollout, with what it was rewarded
    assert all(
        r["reward"] == float(r["verdict"]) and r["reference"] == "7" and r["question"] in QUESTIONS for r in rollouts
    )
    timing = [json.loads(x) for x in (tmp_path / "timing.jsonl").read_text().splitlines()]
    assert [t["step"] for t in timing] == [1, 2]
    assert 0.1 < timing[0]["peak_rss_gb"] <= timing[1]["peak_rss_gb"] < 24  # a peak: never falls
    for t in timing:  # every phase measured, none negative, and together they fit in the step
        assert t["generation"] > 0 and t["ref_logprobs"] > 0 and t["policy_update"] > 0 and t["reward"] > 0
        assert t["reward/verify"] > 0 and t["reward/rm_update"] == 0 and 0 < t["completion_tokens"] <= 8 * 12
        assert t["prompt_tokens"] + t["completion_tokens"] <= t["padded_tokens"]
        assert t["generation"] + t["ref_logprobs"] + t["reward"] + t["policy_update"] <= t["step_seconds"]


def test_periodic_evaluation_of_policy_and_rm(assets, tmp_path, one_thread):
    labelled = tmp_path / "rm_eval.jsonl"
    labelled.write_text(
        "".join(
            json.dumps({"question": q, "reference": "7", "completion": c, "label": y}) + "\n"
            for q in QUESTIONS
            for c, y in (("\\boxed{7}", 1), ("\\boxed{8}", 0))
        )
    )
    cfg = config(
        assets,
        tmp_path / "run",
        "model",
        eval_steps=1,
        eval_datasets=[str(assets / "data.jsonl")],
        eval_k=2,
        rm_eval_data=str(labelled),
    )
    run_rl(cfg)
    evals = [json.loads(x) for x in (tmp_path / "run" / "evals.jsonl").read_text().splitlines()]
    assert [e["step"] for e in evals] == [0, 1, 2]
    for e in evals:
        ((name, res),) = e["policy"].items()
        assert res["n_problems"] == 4 and 0 <= res["avg@k_strict"] <= 1
        assert e["rm"]["n"] == 8 and 0 <= e["rm"]["accuracy"] <= 1
        # the per-row scores behind it, in the data's order (paired CIs across evaluations)
        rows = json.loads((tmp_path / "run" / "eval" / f"step-{e['step']}" / "rm_scores.json").read_text())
        assert rows["labels"] == [1, 0] * 4 and len(rows["scores"]) == 8
        right = [(s >= 0.5) == bool(y) for s, y in zip(rows["scores"], rows["labels"])]
        assert sum(right) / 8 == e["rm"]["accuracy"]
    assert (tmp_path / "run" / "eval" / "step-2" / "samples.jsonl").is_file()


def test_step0_policy_evaluation_is_reused_only_when_it_is_the_same(assets, tmp_path, one_thread):
    import gzip
    import shutil

    policy = shutil.copytree(assets / "policy", tmp_path / "policy")  # its weights change at the end
    labelled = tmp_path / "rm_eval.jsonl"
    labelled.write_text(json.dumps({"question": QUESTIONS[0], "reference": "7", "completion": "7", "label": 1}) + "\n")

    def run(name, reward="model", reuse=(), **kw):
        cfg = config(assets, tmp_path / name, reward, eval_steps=100, eval_datasets=[str(assets / "data.jsonl")])
        kw = {"policy": str(policy), "eval_k": 2, "rm_eval_data": str(labelled), **kw}
        for k, v in {**kw, "eval_step0_from": [str(tmp_path / r) for r in reuse]}.items():
            setattr(cfg, k, v)
        run_rl(cfg)
        ev = json.loads((tmp_path / name / "evals.jsonl").read_text().splitlines()[0])
        return ev, (tmp_path / name / "eval" / "step-0" / "samples.jsonl").read_bytes()

    first, first_samples = run("a", reward="rule")
    alone, alone_samples = run("b")  # the premise: another condition, same policy and seed -> the same samples
    assert alone_samples == first_samples and alone["policy"] == first["policy"]
    reused, reused_samples = run("c", reuse=("missing", "a"))
    assert reused["policy_eval_reused_from"] == str(tmp_path / "a")
    assert reused_samples == first_samples and reused["policy"] == first["policy"]
    assert "rm" not in first and reused["rm"] == alone["rm"]  # the RM is evaluated by the run itself
    logs = tmp_path / "committed" / "eval" / "step-0"  # a's logs as committed: step-0 row, summary, gzipped samples
    logs.mkdir(parents=True)
    (logs.parent.parent / "evals.jsonl").write_text((tmp_path / "a" / "evals.jsonl").read_text().splitlines()[0] + "\n")
    shutil.copy(tmp_path / "a" / "eval" / "step-0" / "summary.json", logs)
    (logs / "samples.jsonl.gz").write_bytes(gzip.compress(first_samples))
    from_logs, from_logs_samples = run("c2", reuse=("committed",))
    assert from_logs["policy_eval_reused_from"] == str(tmp_path / "committed")
    assert from_logs_samples == first_samples and from_logs["policy"] == first["policy"]
    assert not list((tmp_path / "c2" / "eval" / "step-0").glob("*.gz"))
    for name, kw in (("d", {"eval_k": 1}), ("e", {"seed": 1})):  # other evaluation settings or seed: evaluated anew
        ev, _ = run(name, reuse=("a",), **kw)
        assert "policy_eval_reused_from" not in ev
    for name, kw in (("f", {"bf16_autocast": True}), ("g", {"rollout_bf16_weights": True})):  # another precision
        ev, _ = run(name, reuse=("a",), **kw)
        assert "policy_eval_reused_from" not in ev
    w = load_file(policy / "model.safetensors")
    save_file({k: v + 1e-3 for k, v in w.items()}, policy / "model.safetensors")  # same path, other weights
    ev, _ = run("h", reuse=("a",))
    assert "policy_eval_reused_from" not in ev


def test_model_mode_keeps_rm_frozen(assets, tmp_path, one_thread):
    trainer, reward, _ = build_trainer(config(assets, tmp_path, "model"))
    assert isinstance(reward, ModelReward) and trainer.beta == 1e-3
    before = weights(reward.rm)
    trainer.train()
    assert same(before, weights(reward.rm))
    assert all("rule_accuracy" in r and "rm_rule_agreement" in r for r in rows(tmp_path))
    logged = [h for h in trainer.state.log_history if "cooper/rule_accuracy" in h]
    assert len(logged) == 2  # reward metrics reach TRL's logs


def autocast_seen(trainer) -> list[tuple[bool, bool]]:
    """(inside rollout generation?, autocast on?) for every policy forward of the training that follows."""
    seen, state = [], {"gen": False}

    def track(generate):
        def tracked(*args, **kwargs):
            state["gen"] = True
            try:
                return generate(*args, **kwargs)
            finally:
                state["gen"] = False

        return tracked

    wrap_trainer_method(trainer, "generate", track)
    trainer.model.model.layers[0].register_forward_hook(
        lambda *_: seen.append((state["gen"], torch.is_autocast_enabled(trainer.accelerator.device.type)))
    )
    return seen


def test_bf16_autocast_keeps_generation_in_fp32(assets, tmp_path, one_thread):
    trainer, _, _ = build_trainer(config(assets, tmp_path, "rule", bf16_autocast=True, max_steps=1))
    seen = autocast_seen(trainer)
    trainer.train()
    assert {autocast for in_generate, autocast in seen if in_generate} == {False}  # rollouts in fp32
    assert {autocast for in_generate, autocast in seen if not in_generate} == {True}  # loss forward in bf16
    assert next(trainer.model.parameters()).dtype == torch.float32


def test_defaults_are_the_papers_on_policy_step(assets, tmp_path):
    args = build_trainer(config(assets, tmp_path, "rule"))[0].args
    assert (args.steps_per_generation, args.num_iterations, args.loss_type, args.beta) == (1, 1, "grpo", 1e-3)
    assert args.scale_rewards == "group"  # GRPO's per-group std; --scale_rewards batch|none is one flag away
    assert build_trainer(config(assets, tmp_path / "b", "rule", scale_rewards="batch"))[0].args.scale_rewards == "batch"
    with pytest.raises(ValueError, match="scale_rewards"):
        config(assets, tmp_path, "rule", scale_rewards="std")
    assert args.generation_batch_size == args.per_device_train_batch_size == 8  # one generation per step


def test_rm_binary_reward_goes_to_the_rm_rewards_only(assets, tmp_path):
    assert build_trainer(config(assets, tmp_path, "model", rm_binary_reward=True))[1].binary
    assert not build_trainer(config(assets, tmp_path / "c", "cooper"))[1].binary  # the paper's default: the score
    with pytest.raises(ValueError, match="rm_binary_reward"):  # at parse, before a run dir is written
        config(assets, tmp_path / "r", "rule", rm_binary_reward=True)


def test_rollout_autocast_and_shared_generation_batches(assets, tmp_path, one_thread):
    """rollout_autocast puts generation (only) under bf16 autocast; steps_per_generation=2 generates 16 rollouts
    at once, scores them in one reward call, and trains 2 optimizer steps on 8 rollouts each."""
    cfg = config(assets, tmp_path, "rule", rollout_autocast=True, steps_per_generation=2, max_steps=2)
    trainer, _, _ = build_trainer(cfg)
    assert trainer.args.generation_batch_size == 16 and trainer.args.per_device_train_batch_size == 8
    seen = autocast_seen(trainer)
    trainer.train()
    assert {autocast for in_generate, autocast in seen if in_generate} == {True}  # rollouts in bf16 autocast
    assert {autocast for in_generate, autocast in seen if not in_generate} == {False}  # loss forwards in fp32
    assert trainer.state.global_step == 2
    assert [r["step"] for r in rows(tmp_path)] == [1]  # one reward call for the shared batch
    rollouts = [json.loads(x) for x in (tmp_path / "rollouts.jsonl").read_text().splitlines()]
    assert len(rollouts) == 16
    timing = [json.loads(x) for x in (tmp_path / "timing.jsonl").read_text().splitlines()]
    assert timing[0]["generation"] > 0 and timing[1]["generation"] == 0  # step 2 reuses step 1's generation


def test_bf16_rollout_copy_generates_with_fresh_bf16_weights(assets, tmp_path, one_thread):
    """Rollouts come from the bf16 copy (never the fp32 policy), whose weights equal the bf16 cast of the master
    weights at the start of every generation batch; its next-token distribution is the fp32 one up to rounding."""
    cfg = config(assets, tmp_path, "rule", steps_per_generation=2, max_steps=4, bf16_autocast=True)
    trainer, _, _ = build_trainer(cfg)
    copy = bf16_rollout_copy(trainer)
    seen = autocast_seen(trainer)  # forwards of the fp32 policy
    synced = []

    def check_sync(module, args):
        if not synced or synced[-1][1] != trainer.state.global_step:  # first forward of a generation batch
            master = [p.detach().to(torch.bfloat16) for p in trainer.model.parameters()]
            synced.append(
                (all(torch.equal(a, b) for a, b in zip(copy.parameters(), master)), trainer.state.global_step)
            )

    copy.model.layers[0].register_forward_pre_hook(check_sync)
    start = weights(trainer.model)
    trainer.train()
    assert [step for _, step in synced] == [0, 2] and all(ok for ok, _ in synced)  # two batches, both fresh
    assert not same(start, weights(trainer.model))  # the refresh mattered: the master moved in between
    assert not [x for x in seen if x[0]]  # the fp32 policy ran no rollout forward
    assert next(copy.parameters()).dtype == torch.bfloat16 and next(trainer.model.parameters()).dtype == torch.float32
    ids = torch.randint(0, trainer.model.config.vocab_size, (2, 10), device=trainer.model.device)
    with torch.no_grad():
        p32 = trainer.model(ids).logits[:, -1].float().softmax(-1)
        p16 = copy(ids).logits[:, -1].float().softmax(-1)
    assert (p32 - p16).abs().sum(-1).max() / 2 < 0.05  # total variation


def test_old_logprobs_from_the_sampler_equal_trls_forward_and_leave_training_unchanged(assets, tmp_path, one_thread):
    """With several optimizer steps per generation batch, the old log-probs recorded while the fp32 policy samples
    equal TRL's second forward over the batch (float rounding only); a seeded run with them trains to the same
    losses and weights as one without, and no batch falls back."""
    from trl import GRPOTrainer

    def run(sampler, out):
        torch.manual_seed(0)
        cfg = config(
            assets, out, "rule", steps_per_generation=2, max_steps=4, sampler_logprobs=sampler, seed=3, temperature=0.7
        )
        trainer, _, _ = build_trainer(cfg)
        diffs, cases = [], []
        if sampler:  # beside every recorded answer, the forward it replaces

            def check(logps):
                def checked(*args, **kwargs):
                    out = logps(*args, **kwargs)
                    model, ids, mask, keep = args[:4]
                    if model is trainer.model and not torch.is_grad_enabled() and not kwargs.get("compute_entropy"):
                        ref = GRPOTrainer._get_per_token_logps_and_entropies(trainer, *args, **kwargs)[0]
                        m = mask[:, -keep:].bool()
                        diffs.append((out[0] - ref)[m].abs().max().item())
                        # the cases alignment could get wrong happened: rollouts that ended early, padded prompts
                        cases.append((bool((~m).any()), bool((mask[:, :-keep] == 0).any())))
                    return out

                return checked

            wrap_trainer_method(trainer, "logps", check)
        trainer.train()
        losses = [h["loss"] for h in trainer.state.log_history if "loss" in h]
        return trainer, losses, diffs, cases

    with_sampler, losses_s, diffs, cases = run(True, tmp_path / "sampler")
    without, losses_f, _, _ = run(False, tmp_path / "forward")
    recorder = [c for c in [getattr(with_sampler, "_cooper_sampler_logprobs", None)] if c]
    assert len(diffs) == 2 and max(diffs) < 1e-4  # two generation batches, both answered from the sampler
    assert all(early and padded for early, padded in cases)
    assert recorder and recorder[0].used == 2 and recorder[0].fallbacks == 0
    assert not hasattr(without, "_cooper_sampler_logprobs")
    assert losses_s == pytest.approx(losses_f, abs=1e-5)
    a, b = with_sampler.model.state_dict(), without.model.state_dict()
    start = weights_of(assets, with_sampler.model.device)
    moved = sum((a[k] - start[k]).square().sum() for k in start).sqrt()
    apart = sum((a[k] - b[k]).square().sum() for k in start).sqrt()
    assert apart < 0.01 * moved  # the same training up to rounding, next to how far training moved the weights


def test_trimmed_padding_gives_trls_log_probs_and_the_same_training(assets, tmp_path, one_thread):
    """Every log-prob call (loss micro-batches with grad, reference log-probs over the generation batch) returns
    TRL's values on the completion mask while computing fewer positions, and a seeded run trains to the same losses
    and weights as one on TRL's padded batches."""
    from trl import GRPOTrainer

    data = tmp_path / "mixed.jsonl"  # prompts of unequal length: some batches pad every prompt on the left
    long = "Tom has 3 red apples in his bag and his friend at school gives him 4 more. How many apples now?"
    data.write_text("".join(json.dumps({"question": q, "answer": "7"}) + "\n" for q in [*QUESTIONS, long] * 2))

    def run(trim, out):
        cfg = config(
            assets,
            out,
            "rule",
            steps_per_generation=2,
            max_steps=4,
            trim_padding=trim,
            sampler_logprobs=False,
            seed=5,
            shared_prefix=False,
        )
        cfg.datasets = [str(data)]
        trainer, _, _ = build_trainer(cfg)
        diffs = []
        if trim:

            def check(logps):
                def checked(*args, **kwargs):
                    out = logps(*args, **kwargs)
                    with torch.no_grad():
                        ref = GRPOTrainer._get_per_token_logps_and_entropies(trainer, *args, **kwargs)
                    m = args[2][:, -args[3] :].bool()
                    assert out[0].shape == ref[0].shape
                    assert torch.equal(out[0].detach()[~m], ref[0][~m])  # TRL's zeros where nothing is scored
                    if ref[1] is not None:  # the loss's entropies too
                        assert torch.allclose(out[1].detach()[m], ref[1][m], atol=1e-4)
                    diffs.append(((out[0] - ref[0])[m].abs().max().item(), torch.is_grad_enabled()))
                    return out

                return checked

            wrap_trainer_method(trainer, "logps", check)
        trainer.train()
        return trainer, [h["loss"] for h in trainer.state.log_history if "loss" in h], diffs

    trimmed, losses_t, diffs = run(True, tmp_path / "trim")
    padded, losses_p, _ = run(False, tmp_path / "pad")
    computed, padded_positions = trimmed._cooper_padding_trimmer.columns
    assert computed < padded_positions  # positions were saved
    # a batch whose chunks pad on both sides: two short and two long prompts, completions of 2 to 6 tokens
    tok = trimmed.processing_class
    prompts = [tok(q, add_special_tokens=False)["input_ids"] for q in (QUESTIONS[0], long, QUESTIONS[1], long)]
    completions = [[11, 12], [13, 14, 15, 16, 17, 18], [19, 20, 21], [22] * 5]
    pw, cw = max(map(len, prompts)), max(map(len, completions))
    pad = tok.pad_token_id
    ids = torch.tensor(
        [[pad] * (pw - len(p)) + p + c + [pad] * (cw - len(c)) for p, c in zip(prompts, completions)],
        device=trimmed.model.device,
    )
    mask = torch.tensor(
        [[0] * (pw - len(p)) + [1] * (len(p) + len(c)) + [0] * (cw - len(c)) for p, c in zip(prompts, completions)],
        device=trimmed.model.device,
    )
    before = dict(trimmed._cooper_padding_trimmer.trimmed_calls)
    with torch.no_grad():
        got = trimmed._get_per_token_logps_and_entropies(trimmed.model, ids, mask, cw, batch_size=2)[0]
        want = GRPOTrainer._get_per_token_logps_and_entropies(trimmed, trimmed.model, ids, mask, cw, batch_size=2)[0]
    m = mask[:, -cw:].bool()
    assert torch.allclose(got[m], want[m], atol=1e-4) and got.shape == want.shape
    after = trimmed._cooper_padding_trimmer.trimmed_calls
    assert after["prompt"] > before["prompt"] and after["completion"] > before["completion"]  # both sides
    assert {grad for _, grad in diffs} == {True, False}  # loss forwards and reference forwards both checked
    assert max(d for d, _ in diffs) < 1e-4
    assert not hasattr(padded, "_cooper_padding_trimmer")
    assert losses_t == pytest.approx(losses_p, abs=1e-5)
    a, b = trimmed.model.state_dict(), padded.model.state_dict()
    start = weights_of(assets, trimmed.model.device)
    moved = sum((a[k] - start[k]).square().sum() for k in start).sqrt()
    apart = sum((a[k] - b[k]).square().sum() for k in start).sqrt()
    assert apart < 0.01 * moved


def test_leading_padding_is_trimmed_only_where_a_position_shift_changes_nothing():
    from types import SimpleNamespace as NS

    from cooper_rl.rl.rollout_speed import install_padding_trimmer, shift_invariant
    from tiny import tiny_llama

    model, _ = tiny_llama()
    assert shift_invariant(model)
    assert not shift_invariant(model.to(torch.bfloat16))  # bf16 cos/sin round differently per position

    def fake(model_type="llama", **rope):
        return NS(
            config=NS(model_type=model_type, rope_parameters=rope or None), parameters=lambda: iter([torch.zeros(1)])
        )

    assert shift_invariant(fake()) and shift_invariant(fake(rope_type="linear", factor=2.0))
    assert not shift_invariant(fake("gpt2"))  # absolute position embeddings
    assert not shift_invariant(fake(rope_type="dynamic", factor=2.0))  # frequencies follow the length
    assert install_padding_trimmer(NS(model=fake(rope_type="longrope"))) is None  # not even trailing trims


def test_sampler_logprobs_only_where_the_sampler_is_the_fp32_policy(assets, tmp_path):
    def installed(**kw):
        return hasattr(build_trainer(config(assets, tmp_path, "rule", **kw))[0], "_cooper_sampler_logprobs")

    assert installed(steps_per_generation=2) and installed(num_iterations=2)
    assert not installed()  # on-policy: TRL computes no old log-probs
    assert not installed(steps_per_generation=2, sampler_logprobs=False)
    assert not installed(steps_per_generation=2, rollout_bf16_weights=True)  # a bf16 sampler: not the same policy
    assert not installed(steps_per_generation=2, bf16_autocast=True)  # old log-probs under autocast differ
    assert not installed(steps_per_generation=2, rollout_autocast=True)  # rollouts under autocast


def weights_of(assets, device="cpu"):
    """The tiny policy's initial weights, on device (the trained model's)."""
    from safetensors.torch import load_file

    return load_file(str(assets / "policy" / "model.safetensors"), device=str(device))


def test_rollout_bf16_weights_flag(assets, tmp_path, one_thread):
    trainer, _, _ = build_trainer(config(assets, tmp_path, "rule", rollout_bf16_weights=True, max_steps=1))
    seen = autocast_seen(trainer)
    trainer.train()
    assert trainer.state.global_step == 1 and seen and not [x for x in seen if x[0]]
    with pytest.raises(ValueError, match="vLLM"):
        build_trainer(config(assets, tmp_path, "rule", rollout_bf16_weights=True, use_vllm=True))


def test_compact_console_prints_one_line_per_step(assets, tmp_path, one_thread, capsys):
    trainer, _, _ = build_trainer(config(assets, tmp_path, "model", max_steps=2))
    trainer.train()
    out = capsys.readouterr().out
    lines = [x for x in out.splitlines() if x.strip()]
    assert "{'loss'" not in out and "cooper/reward_mean" not in out  # no raw TRL dicts
    header = next(i for i, x in enumerate(lines) if x.split()[:3] == ["step", "reward", "rule_acc"])
    rows = [x.split() for x in lines[header + 1 :] if x.split()[0].endswith("/2")]
    assert [r[0] for r in rows] == ["1/2", "2/2"]
    assert all(r[-2] == "warm-up" and float(r[-1]) > 0 for r in rows)  # 2 reward calls < window 20; s/step
    assert lines[header].split()[7:10] == ["0-spread", "info/st", "adv>wrg"]  # the learning signal
    assert 0.0 <= float(rows[0][7]) <= 1.0
    assert 0.0 <= float(rows[0][1]) <= 1.0 and rows[0][4] == "-"  # reward; no pairs in model mode
    with pytest.raises(ValueError, match="console"):
        build_trainer(config(assets, tmp_path, "rule", console="fancy"))


def test_stop_on_hacking_checkpoints_and_stops(assets, tmp_path, one_thread, capsys):
    # a length threshold every step meets: the monitor flags as soon as its window (2 steps) is full
    cfg = config(assets, tmp_path, "cooper", max_steps=5, monitor_window=2, monitor_length_ratio=100.0)
    summary = run_rl(RLConfig(**{**cfg.__dict__, "stop_on_hacking": True}))
    assert summary["global_step"] == 2 and summary["monitor"]["first_flag_step"] == 2
    assert summary["monitor"]["checks"]["length_collapse"] == 1 and summary["monitor"]["stopped_at"] == 2
    assert (tmp_path / "checkpoint-2" / RM_DIR / RM_STATE).is_file()  # the clean stop saved policy and RM
    out = capsys.readouterr().out
    assert "stopping (--stop_on_hacking)" in out and "!len" in out
    assert [r["monitor/length_collapse"] for r in rows(tmp_path)] == [0.0, 1.0]


def test_checkpoints_and_monitor_stops_fall_at_the_ends_of_generation_batches(assets, tmp_path, one_thread):
    # 2 optimizer steps per generation batch: reward calls at steps 1, 3, 5; the monitor (window 2) flags at step 3,
    # inside the batch of steps 3-4, and save_steps 3 also falls inside it: both move to the batch's end, step 4
    cfg = config(
        assets, tmp_path, "rule", max_steps=6, steps_per_generation=2, monitor_window=2, monitor_length_ratio=100.0
    )
    summary = run_rl(RLConfig(**{**cfg.__dict__, "save_steps": 3, "stop_on_hacking": True}))
    assert summary["monitor"]["first_flag_step"] == 3 and summary["monitor"]["stopped_at"] == 4
    assert summary["global_step"] == 4
    assert sorted(p.name for p in tmp_path.glob("checkpoint-*")) == ["checkpoint-4"]


def test_monitor_counts_optimizer_steps_and_survives_resume(assets, tmp_path, one_thread):
    # 2 optimizer steps per generation batch: reward calls at steps 1, 3, 5; the window (2 calls) is full at step 3
    cfg = config(
        assets, tmp_path, "rule", max_steps=4, steps_per_generation=2, monitor_window=2, monitor_length_ratio=100.0
    )
    summary = run_rl(RLConfig(**{**cfg.__dict__, "save_steps": 2}))
    assert summary["monitor"]["first_flag_step"] == 3 and summary["monitor"]["n_flags"] == 1
    saved = json.loads((tmp_path / "checkpoint-2" / "monitor_state.json").read_text())
    assert saved["n_steps"] == 1 and len(saved["baseline"]) == 1  # a rule run checkpoints its monitor too
    assert summary["train_seconds"] <= summary["train_seconds_total"] < summary["train_seconds"] + 1.0  # one process
    at4 = ElapsedTime.recorded(tmp_path / "checkpoint-4")  # the seconds up to step 4
    assert 0 < at4 <= summary["train_seconds_total"]
    resumed = run_rl(
        RLConfig(**{**cfg.__dict__, "max_steps": 6, "resume_from_checkpoint": str(tmp_path / "checkpoint-4")})
    )
    # the time to train counts on from the checkpoint's record, not from this process's start
    assert resumed["train_seconds_total"] - resumed["train_seconds"] == pytest.approx(at4, abs=0.5)
    assert resumed["monitor"]["n_flags"] == 2 and resumed["monitor"]["first_flag_step"] == 3  # baseline kept
    # resuming the run as another experiment is refused before anything in the run dir changes
    before = (tmp_path / "metrics.jsonl").read_text()
    with pytest.raises(DataError, match=r"rl_config.json.*seed: 0 -> 1"):
        run_rl(RLConfig(**{**cfg.__dict__, "max_steps": 8, "seed": 1, "resume_from_checkpoint": "last"}))
    assert (tmp_path / "metrics.jsonl").read_text() == before
    assert json.loads((tmp_path / "rl_config.json").read_text())["seed"] == 0
    with pytest.raises(DataError, match="holds checkpoints of an earlier run"):  # a fresh start over them, too
        run_rl(RLConfig(**{**cfg.__dict__, "max_steps": 8}))
    assert (tmp_path / "metrics.jsonl").read_text() == before


def test_data_seed_fixes_the_builtin_prompts_across_seeds(assets):
    tok = load_tokenizer(str(assets / "policy"))

    def questions(**kw):
        return build_dataset(RLConfig(datasets=["builtin:train:6"], **kw), tok)[0]["question"]

    assert questions(seed=1, data_seed=7) == questions(seed=2, data_seed=7)  # same prompts, other run seed
    assert questions(seed=1) != questions(seed=2)  # by default the run seed draws the problems
    assert questions(seed=7) == questions(seed=1, data_seed=7)


def test_a_resume_must_be_the_same_experiment(tmp_path):
    rm = tmp_path / "rm"
    rm.mkdir()
    (rm / "model.safetensors").write_bytes(b"weights v1")
    first = {**RLConfig(reward="model", rm=str(rm)).__dict__, "rm_sha256": rm_weights_sha256(str(rm))}
    check_resume_identity(first, {**first, "max_steps": 900, "eval_steps": 50}, tmp_path)  # longer, other evals: ok
    (rm / "model.safetensors").write_bytes(b"weights v2")  # the static RM retrained in place
    with pytest.raises(DataError, match="rm_sha256"):
        check_resume_identity(first, {**first, "rm_sha256": rm_weights_sha256(str(rm))}, tmp_path)
    with pytest.raises(DataError, match="negatives"):  # a cooper run's negatives are part of the experiment
        cooper = {**first, "reward": "cooper", "negatives": "corrupt"}
        check_resume_identity(cooper, {**cooper, "negatives": "corrupt,mined"}, tmp_path)
    check_resume_identity({**first, "reward": "rule"}, {**first, "reward": "rule", "rm": "other"}, tmp_path)
    older = {k: v for k, v in first.items() if k not in ("data_seed", "rm_sha256")}  # written before those existed
    check_resume_identity(older, first, tmp_path)
    with pytest.raises(DataError, match="data_seed: None -> 1000"):  # it drew its prompts with the run seed
        check_resume_identity(older, {**first, "data_seed": 1000}, tmp_path)
    assert rm_weights_sha256("minilm-l6") is None


@pytest.fixture(scope="module")
def cooper_run(assets, tmp_path_factory):
    """A 2-step cooper run with a checkpoint after each step; returns (cfg, trainer, reward, initial RM weights)."""
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    cfg = config(assets, tmp_path_factory.mktemp("cooper"), "cooper", save_steps=1)
    trainer, reward, _ = build_trainer(cfg)
    initial = weights(reward.rm)
    trainer.train()
    torch.set_num_threads(n)
    return cfg, trainer, reward, initial


def test_cooper_mode_updates_rm(cooper_run):
    cfg, trainer, reward, initial = cooper_run
    assert isinstance(reward, CooperReward)
    metrics = rows(cfg.output_dir)
    assert len(metrics) == 2 and all("rule_accuracy" in r and "rm/valid_rate" in r for r in metrics)
    assert sum(r["rm/n_valid"] for r in metrics) > 0  # the fitted policy gives some correct rollouts
    assert not same(initial, weights(reward.rm))
    assert any("cooper/rm/valid_rate" in h for h in trainer.state.log_history)


def _state_equal(a, b):
    if isinstance(a, torch.Tensor):  # on one device: a checkpoint loaded on the CPU against a live state on a GPU
        return torch.equal(a.cpu(), b.cpu())
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_state_equal(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(_state_equal(x, y) for x, y in zip(a, b))
    return a == b


def test_checkpoint_holds_the_rm_and_resume_restores_it(cooper_run, one_thread):
    cfg, _, reward, _ = cooper_run
    out = Path(cfg.output_dir)
    last = out / "checkpoint-2" / RM_DIR
    saved = load_file(last / "model.safetensors")
    assert all(torch.equal(saved[k], v.cpu()) for k, v in reward.rm.model.state_dict().items() if k in saved)
    state = torch.load(last / RM_STATE, weights_only=False)
    assert _state_equal(state["optimizer"], reward.rm.optimizer.state_dict())
    assert _state_equal(state["scheduler"], reward.rm.scheduler.state_dict())
    assert state["negatives_rng"] == {"negatives": reward.negatives.rng.getstate()}
    assert not list(out.glob("checkpoint-*/.cooper_rm.tmp-*"))  # no temp dirs left behind

    first = out / "checkpoint-1" / RM_DIR
    cfg1 = RLConfig(**{**cfg.__dict__, "resume_from_checkpoint": str(out / "checkpoint-1")})
    trainer1, reward1, info = build_trainer(cfg1)
    assert info["checkpoint"] == str(out / "checkpoint-1")
    saved1 = load_file(first / "model.safetensors")
    assert all(torch.equal(saved1[k], v.cpu()) for k, v in reward1.rm.model.state_dict().items() if k in saved1)
    assert _state_equal(
        torch.load(first / RM_STATE, weights_only=False)["optimizer"], reward1.rm.optimizer.state_dict()
    )
    assert reward1.rm.scheduler.last_epoch == 1
    assert not same(weights(reward1.rm), weights(reward.rm))  # step 1's RM, not step 2's
    trainer1.train(resume_from_checkpoint=info["checkpoint"])  # one more step: 1 -> 2
    assert trainer1.state.global_step == 2
    assert [r["step"] for r in rows(out)] == [1, 2]  # lines after the checkpoint were dropped, then rewritten
    timing = [json.loads(x) for x in (out / "timing.jsonl").read_text().splitlines()]
    assert [t["step"] for t in timing] == [1, 2]


def test_resume_after_sigkill(assets, tmp_path, one_thread):
    """`cooper rl` SIGKILLed after its 2nd checkpoint: a rerun with --resume_from_checkpoint last restores policy, RM,
    optimizer and scheduler as saved, finishes, and every step appears once in metrics.jsonl."""
    out = tmp_path / "run"
    cfg = config(assets, out, "cooper", save_steps=1, max_steps=30)
    args = ["rl", "--policy", cfg.policy, "--rm", cfg.rm, "--datasets", *cfg.datasets, "--output_dir", str(out)]
    args += ["--num_generations", "4", "--prompts_per_step", "2", "--max_completion_length", "12", "--save_steps", "1"]
    args += ["--learning_rate", "1e-4", "--rm_learning_rate", "1e-3", "--max_steps", "30"]
    run_cli_until_killed(args, ready=lambda: (out / "checkpoint-2" / RM_DIR / RM_STATE).is_file())
    assert (out / "checkpoint-2" / RM_DIR / RM_STATE).is_file(), "no checkpoint-2 before the deadline"
    assert not (out / "rl_summary.json").exists()  # it really was killed mid-run
    broken = out / "checkpoint-999"  # what a kill during a save leaves: no trainer_state.json, no RM state
    broken.mkdir()
    last = Path(resolve_checkpoint(out, "last", require=f"{RM_DIR}/{RM_STATE}"))
    step = int(last.name.split("-")[1])
    saved_w = load_file(last / RM_DIR / "model.safetensors")
    saved_state = torch.load(last / RM_DIR / RM_STATE, weights_only=False)

    resumed = RLConfig(**{**cfg.__dict__, "max_steps": step + 1, "resume_from_checkpoint": "last"})
    trainer, reward, info = build_trainer(resumed)
    assert info["checkpoint"] == str(last)
    assert all(torch.equal(saved_w[k], v.cpu()) for k, v in reward.rm.model.state_dict().items() if k in saved_w)
    assert _state_equal(saved_state["optimizer"], reward.rm.optimizer.state_dict())
    assert _state_equal(saved_state["scheduler"], reward.rm.scheduler.state_dict())
    trainer.train(resume_from_checkpoint=info["checkpoint"])
    assert trainer.state.global_step == step + 1
    assert [r["step"] for r in rows(out)] == list(range(1, step + 2))


def test_monitor_options_default_to_the_monitors_own_thresholds():
    """cooper rl's monitor_* defaults and HackingMonitor's documented thresholds are one set of numbers."""
    import inspect

    from cooper_rl.cooper.monitor import HackingMonitor

    own = {k: p.default for k, p in inspect.signature(HackingMonitor.__init__).parameters.items() if k != "self"}
    cfg = RLConfig()
    assert own == {k: getattr(cfg, f"monitor_{k}") for k in own}


def test_a_signal_checkpoints_at_the_end_of_the_generation_batch_and_resume_finishes(
    assets, tmp_path, one_thread, capsys
):
    """SIGUSR1 during step 1 of a 2-step generation batch: the run says where it will stop, stops after step 2 with
    a checkpoint (policy, RM state), raises TrainingInterrupted, restores the handlers; a resumed run_rl finishes
    the remaining steps."""
    import os
    import signal

    from transformers import TrainerCallback

    from cooper_rl.io import TrainingInterrupted
    from cooper_rl.trainer_hooks import SaveOnSignal, train_until_signal

    class SignalAtStep1(TrainerCallback):
        def on_step_end(self, args, state, control, **kwargs):
            if state.global_step == 1:
                os.kill(os.getpid(), signal.SIGUSR1)

    cfg = config(assets, tmp_path, "cooper", max_steps=6, steps_per_generation=2)
    before = signal.getsignal(signal.SIGUSR1)
    on_signal = SaveOnSignal(every=2)  # before loading, as run_rl does
    trainer, _, _ = build_trainer(cfg)
    trainer.add_callback(SignalAtStep1())
    with pytest.raises(TrainingInterrupted, match="at step 2"):
        train_until_signal(trainer, on_signal)
    assert "first step from this one that is a multiple of 2" in capsys.readouterr().out
    assert signal.getsignal(signal.SIGUSR1) is before
    assert sorted(p.name for p in tmp_path.glob("checkpoint-*")) == ["checkpoint-2"]
    assert (tmp_path / "checkpoint-2" / RM_DIR / RM_STATE).is_file()
    summary = run_rl(RLConfig(**{**cfg.__dict__, "resume_from_checkpoint": "last"}))
    assert summary["global_step"] == 6 and summary["checkpoint"].endswith("checkpoint-2")


def test_reference_positives_reach_the_rm_step_through_trl(assets, tmp_path, one_thread):
    """--reference_positives: the dataset carries each problem's worked solution in the prompt's boxed format, TRL
    hands it to the reward, and prompts without a verified rollout get it as their positive (a tiny policy gets
    almost nothing right, so nearly every prompt's positive is its solution)."""
    tok = load_tokenizer(str(assets / "policy"))
    ds = build_dataset(RLConfig(datasets=["builtin:train:4"], reward="cooper", reference_positives=True), tok)[0]
    assert all(
        s.endswith(f"The answer is $\\boxed{{{r}}}$.") and "<<" not in s
        for s, r in zip(ds["solution"], ds["reference"])
    )
    assert "solution" not in build_dataset(RLConfig(datasets=["builtin:train:4"]), tok)[0].column_names
    cfg = config(
        assets, tmp_path, "cooper", datasets=["builtin:train:8"], reference_positives=True, negatives="corrupt,mined"
    )
    trainer, reward, _ = build_trainer(cfg)
    trainer.train()
    metrics = rows(cfg.output_dir)
    assert sum(m["rm/reference_positives"] for m in metrics) > 0 and sum(m["rm/n_valid"] for m in metrics) > 0
    with pytest.raises(ValueError, match="worked solution"):
        build_dataset(RLConfig(datasets=[str(assets / "data.jsonl")], reward="cooper", reference_positives=True), tok)
    with pytest.raises(ValueError, match="--reward cooper"):
        build_dataset(RLConfig(datasets=["builtin:train:4"], reward="model", reference_positives=True), tok)


def test_every_evaluation_draws_the_same_builtin_problems(tmp_path):
    from cooper_rl.data import load_problems
    from cooper_rl.rl.callbacks import EvalCallback

    def questions(cfg, step):
        e = EvalCallback(cfg, None, None).eval_config(step)
        return [
            p.question
            for p in load_problems(
                "builtin:test:5:1,2", seed=e.data_seed if e.data_seed is not None else e.seed
            ).problems
        ]

    cfg = RLConfig(output_dir=str(tmp_path), seed=1, eval_datasets=["builtin:test:5:1,2"])
    assert EvalCallback(cfg, None, None).eval_config(100).seed == 101  # sampling still varies by step
    assert questions(cfg, 0) == questions(cfg, 100) == questions(RLConfig(output_dir=str(tmp_path), seed=2), 50)
    old = RLConfig(output_dir=str(tmp_path), seed=1, eval_data_seed=None)  # the earlier behaviour, on request
    assert questions(old, 0) != questions(old, 100)


def test_a_run_resumed_at_its_last_checkpoint_is_finished_not_trained_further(assets, tmp_path, one_thread):
    """A cooper run stopped between its last checkpoint (at max_steps) and its final save: the resume saves the
    policy and RM of that checkpoint; the Trainer alone would take a step past max_steps."""
    from safetensors.torch import load_file

    cfg = config(assets, tmp_path, "cooper", save_steps=1, prompts_per_step=1)  # 2 of the epoch's 4 steps
    run_rl(cfg)
    assert (tmp_path / "checkpoint-2" / RM_DIR / RM_STATE).is_file()
    policy, rm = (load_file(tmp_path / d / "model.safetensors") for d in ("policy", "rm"))
    summary = run_rl(RLConfig(**{**cfg.__dict__, "resume_from_checkpoint": "last"}))
    assert summary["global_step"] == 2 and [r["step"] for r in rows(tmp_path)] == [1, 2]
    for before, d in ((policy, "policy"), (rm, "rm")):
        after = load_file(tmp_path / d / "model.safetensors")
        assert after.keys() == before.keys() and all(after[k].equal(before[k]) for k in before), d


def test_a_run_resumed_after_its_first_epoch_trains_on_the_prompts_an_uninterrupted_one_does(
    assets, tmp_path, one_thread
):
    """4 prompts, one per step: epochs of 4 steps. A run stopped at step 6 (inside epoch 2) and resumed to step 12
    sees at every step the prompt of a run that never stopped (TRL's sampler alone replays epoch 1's order there)."""

    def prompts(out):
        seen = {}
        for line in (Path(out) / "rollouts.jsonl").read_text().splitlines():
            r = json.loads(line)
            seen.setdefault(r["step"], r["question"])
        return [seen[s] for s in sorted(seen)]

    kw = {"prompts_per_step": 1, "save_steps": 1, "max_steps": 12}
    run_rl(config(assets, tmp_path / "whole", "rule", **kw))
    whole = prompts(tmp_path / "whole")
    epochs = [tuple(whole[i : i + 4]) for i in range(0, 12, 4)]
    assert all(sorted(e) == sorted(epochs[0]) for e in epochs)
    assert whole[6:8] != whole[2:4]  # epoch 2's order there is not epoch 1's (what TRL's sampler alone would replay)
    run_rl(config(assets, tmp_path / "cut", "rule", **{**kw, "max_steps": 6}))
    run_rl(config(assets, tmp_path / "cut", "rule", **kw, resume_from_checkpoint="last"))
    assert prompts(tmp_path / "cut") == whole


def test_the_epoch_exact_sampler_keeps_trls_uninterrupted_order():
    from trl.trainer.utils import RepeatSampler

    from cooper_rl.rl.trl_internals import EpochExactSampler

    def make():
        return RepeatSampler(list(range(10)), mini_repeat_count=2, batch_size=3, repeat_count=2, seed=5)

    trl_own, ours = make(), EpochExactSampler(make())
    epochs = [list(trl_own) for _ in range(3)]
    assert len({tuple(e) for e in epochs}) == 3
    assert [list(ours) for _ in range(3)] == epochs  # counting epochs by itself
    resumed = EpochExactSampler(make())
    resumed.set_epoch(2)  # a new process, told the epoch (transformers does on resume)
    assert list(resumed) == epochs[2] and len(resumed) == len(make())


def test_a_multi_process_run_resumed_inside_an_epoch_keeps_the_uninterrupted_order():
    """Process 0 of 2: accelerate's skip loader (a resume inside epoch 2) does not forward set_epoch to the sampler
    under its BatchSamplerShard; epoch_exact_sampler's callback tells it the epoch from the trainer state. The loop
    below is transformers' (Trainer._run_epoch: skip_first_batches, then set_epoch on the loader and on the
    shard's batch sampler)."""
    from types import SimpleNamespace

    from accelerate.data_loader import prepare_data_loader, skip_first_batches
    from torch.utils.data import DataLoader
    from trl.trainer.utils import RepeatSampler

    from cooper_rl.rl.trl_internals import epoch_exact_sampler

    def process0(callbacks):
        """A fake GRPOTrainer's prompt loader for process 0 of 2, wrapped by epoch_exact_sampler."""
        trainer = SimpleNamespace(
            _get_train_sampler=lambda: RepeatSampler(list(range(16)), mini_repeat_count=1, batch_size=2, seed=3),
            add_callback=callbacks.append,
        )
        epoch_exact_sampler(trainer)
        dl = DataLoader(list(range(16)), sampler=trainer._get_train_sampler(), batch_size=2)
        return prepare_data_loader(dl, num_processes=2, process_index=0, put_on_device=False)

    def run_epoch(loader, epoch):  # transformers 5's Trainer._run_epoch, as far as the sampler sees it
        loader.set_epoch(epoch)
        inner = getattr(loader.batch_sampler, "batch_sampler", None)
        if hasattr(inner, "set_epoch"):
            inner.set_epoch(epoch)
        return [b.tolist() for b in loader]

    callbacks = []
    loader = process0(callbacks)
    whole = []
    for epoch in range(3):
        callbacks[0].on_epoch_begin(None, SimpleNamespace(epoch=float(epoch)), None)
        whole.append(run_epoch(loader, epoch))
    assert len(whole[2]) == 4 and whole[2][2:] != whole[0][2:]  # the two orders differ where the resume starts

    def resumed(with_callback):
        callbacks = []
        loader = process0(callbacks)
        if with_callback:  # the state of a checkpoint after 2 of epoch 2's 4 steps
            callbacks[0].on_epoch_begin(None, SimpleNamespace(epoch=2.5), None)
        return run_epoch(skip_first_batches(loader, 2), 2)

    assert resumed(with_callback=True) == whole[2][2:]
    assert resumed(with_callback=False) == whole[0][2:]  # what the skip loader alone gives: epoch 0's order


def test_a_deadline_stops_the_run_before_an_evaluation_that_would_overrun_it(assets, tmp_path, one_thread, monkeypatch):
    """--stop_at with periodic evaluations: an evaluation estimated to end after the deadline is not started; the
    run checkpoints at the step before and stops, and the resumed run trains that step and evaluates it."""
    from cooper_rl.io import TrainingInterrupted
    from cooper_rl.rl.callbacks import StopBeforeEvaluation

    cfg = config(
        assets,
        tmp_path,
        "rule",
        max_steps=4,
        save_steps=100,
        eval_steps=2,
        eval_datasets=[str(assets / "data.jsonl")],
        eval_k=1,
        stop_at="+36000",
    )
    monkeypatch.setattr(StopBeforeEvaluation, "eval_estimate", lambda self: 36000.0 * 2)
    with pytest.raises(TrainingInterrupted, match="at step 1"):
        run_rl(cfg)
    assert sorted(p.name for p in tmp_path.glob("checkpoint-*")) == ["checkpoint-1"]
    assert [json.loads(x)["step"] for x in (tmp_path / "evals.jsonl").read_text().splitlines()] == [0]
    monkeypatch.undo()
    summary = run_rl(RLConfig(**{**cfg.__dict__, "resume_from_checkpoint": "last"}))
    assert summary["global_step"] == 4
    assert [json.loads(x)["step"] for x in (tmp_path / "evals.jsonl").read_text().splitlines()] == [0, 2, 4]
