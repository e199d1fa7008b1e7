"""Callbacks of ``cooper rl`` around TRL's GRPOTrainer: step timing, the console, checkpoints at generation-batch
ends, the hacking monitor's stop, periodic evaluation.

StepProfiler: where an RL step's time goes, wall-clock seconds per phase, one JSON line per optimizer step
(timing.jsonl). Phases (seconds, summed over the step's micro-batches):

    generation      rollouts (HF generate or vLLM)
    old_logprobs    policy log-probs under no_grad (only when TRL needs them, e.g. several iterations;
                    ~0 when SamplerLogprobs takes them from the sampling step)
    ref_logprobs    reference-model log-probs for the KL term
    reward          the whole reward function, of which (from the reward's metrics)
                      verify      rule verifier on the rollouts
                      rm_score    VerifyRM scoring (model, cooper)
                      negatives   negative generation (cooper)
                      rm_update   RM forward/backward/step on the pairs (cooper)
    policy_update   training_step minus input preparation: policy forward/backward (incl. optimizer step*)
    step            on_step_begin -> on_step_end wall time
    *_tokens        prompt/completion tokens generated this step (real), and batch x padded length

*The Trainer's optimizer.step runs outside training_step; it is in `step` but not in `policy_update`.
The profiler wraps methods of one trainer instance (no TRL subclassing, no change to its results); the
private ones are reached only through trl_internals.

CompactConsole prints one line per step; SaveAtGenerationBoundary moves checkpoints to the ends of generation
batches; HackingCallback reports (and optionally stops on) the monitor's flags; EvalCallback evaluates policy and RM
every N steps; StopBeforeEvaluation stops before an evaluation that would overrun --stop_at. The rollout-speed
wrappers (bf16 rollouts, padding trimming, sampler log-probs) are in rollout_speed.py.
"""

from __future__ import annotations

import functools
import json
import sys
import time
from collections import defaultdict
from pathlib import Path

import torch
from transformers import TrainerCallback

from cooper_rl.io import append_jsonl, atomic_write_json, read_jsonl
from cooper_rl.rl.trl_internals import wrap_trainer_method

TIMED = ("generation", "old_logprobs", "ref_logprobs", "reward")  # measured directly by the wrappers


PHASES = (*TIMED, "policy_update", "other")  # every record's phases (they sum to step_seconds)


REWARD_PHASES = ("verify", "rm_score", "negatives", "rm_update")


class StepProfiler(TrainerCallback):
    """TrainerCallback that times the phases of every GRPO step and appends them to `path` (main process)."""

    def __init__(self, trainer, reward=None, path: str | Path | None = None):
        self.trainer, self.reward = trainer, reward
        self.path = Path(path) if path else None
        self.acc: dict[str, float] = defaultdict(float)
        self._t0 = None
        wrap_trainer_method(
            trainer, "generate", self._timed(lambda *a, **k: "generation", on_result=self._count_tokens)
        )
        wrap_trainer_method(trainer, "calculate_rewards", self._timed(lambda *a, **k: "reward"))
        wrap_trainer_method(trainer, "prepare_inputs", self._timed(lambda *a, **k: "prepare_inputs"))
        wrap_trainer_method(trainer, "logps", self._timed(self._logps_phase))
        trainer.training_step = self._timed(lambda *a, **k: "training_step")(trainer.training_step)  # public

    def _logps_phase(self, model, *args, **kwargs) -> str:
        """Which phase a log-prob call belongs to: the reference model, the policy without or with grad."""
        if model is getattr(self.trainer, "ref_model", None):
            return "ref_logprobs"
        return "policy_logprobs" if torch.is_grad_enabled() else "old_logprobs"

    def _count_tokens(self, result) -> None:
        """Token counts of one generation result (prompt_ids, completion_ids, ...): real and padded."""
        prompt_ids, completion_ids = result[0], result[1]
        self.acc["prompt_tokens"] += sum(len(x) for x in prompt_ids)
        self.acc["completion_tokens"] += sum(len(x) for x in completion_ids)
        if prompt_ids:  # sequences as the log-prob/update forwards see them: padded to the longest
            self.acc["padded_tokens"] += len(prompt_ids) * (
                max(map(len, prompt_ids)) + max(map(len, completion_ids), default=0)
            )

    def _timed(self, phase_of, on_result=None):
        """A wrapper factory: fn -> fn that adds its wall time to the phase ``phase_of(*args)`` names."""

        def wrap(fn):
            @functools.wraps(fn)
            def timed(*args, **kwargs):
                phase = phase_of(*args, **kwargs)
                t = time.perf_counter()
                try:
                    out = fn(*args, **kwargs)
                finally:
                    self.acc[phase] += time.perf_counter() - t
                if on_result is not None:
                    on_result(out)
                return out

            return timed

        return wrap

    def on_step_begin(self, args, state, control, **kwargs):
        """Start the step's clock."""
        self.acc.clear()
        self._t0 = time.perf_counter()

    def on_step_end(self, args, state, control, **kwargs):
        """Close the step: derive policy_update, add the reward's own split, append one record."""
        a = self.acc
        rec = {"step": state.global_step, "step_seconds": time.perf_counter() - self._t0}
        rec.update({k: a.get(k, 0.0) for k in TIMED})
        rec["policy_update"] = a.get("training_step", 0.0) - a.get("prepare_inputs", 0.0)
        metrics = getattr(self.reward, "last_metrics", {}) or {}
        for k in REWARD_PHASES:
            rec[f"reward/{k}"] = float(metrics.get(f"time/{k}", 0.0))
        rec.update({k: int(a.get(k, 0)) for k in ("prompt_tokens", "completion_tokens", "padded_tokens")})
        rec["other"] = rec["step_seconds"] - sum(rec[k] for k in (*TIMED, "policy_update"))
        rec["torch_threads"] = torch.get_num_threads()  # runs side by side get fewer: their steps take longer
        rec["peak_rss_gb"] = peak_rss_gb()  # what two runs side by side need of the machine's memory
        if self.path is not None and state.is_world_process_zero:
            append_jsonl(self.path, [rec])


def peak_rss_gb() -> float | None:
    """This process's peak resident memory so far, in GB (None where the OS does not say)."""
    try:
        import resource
    except ImportError:  # not on Windows
        return None
    kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # kB on Linux (bytes on macOS)
    return round(kb / (1024**3 if sys.platform == "darwin" else 1024**2), 3)


class CompactConsole(TrainerCallback):
    """One console line per logged optimizer step instead of TRL's progress bar and raw log dicts (the numbers
    still reach metrics.jsonl, TensorBoard and the other trackers). Steps that reuse an earlier generation batch
    (steps_per_generation > 1) have no reward metrics of their own: their columns show '-'."""

    COLUMNS = (  # header, log key, format
        ("reward", "cooper/reward_mean", "{:.3f}"),
        ("rule_acc", "cooper/rule_accuracy", "{:.2f}"),
        ("rm~rule", "cooper/rm_rule_agreement", "{:.2f}"),
        ("pairs", "cooper/rm/n_valid", "{:.0f}"),
        ("rm_loss", "cooper/rm/rm_loss", "{:.3f}"),
        ("fooled", "cooper/rm_fooled_rate", "{:.2f}"),
        ("0-spread", "cooper/signal/zero_spread_groups", "{:.2f}"),
        ("info/st", "cooper/signal/informative_groups_per_step", "{:.1f}"),
        ("adv>wrg", "cooper/signal/pos_adv_to_wrong", "{:.2f}"),
        ("len", "completions/mean_length", "{:.0f}"),
    )

    def __init__(self, print_fn=print):
        self.print = print_fn
        self.last_time = self.last_step = None

    def on_train_begin(self, args, state, control, **kwargs):
        """Print the header."""
        if state.is_world_process_zero:
            head = f"{'step':>9} " + " ".join(f"{h:>8}" for h, _, _ in self.COLUMNS) + f" {'monitor':>8} {'s/step':>7}"
            self.print(head)
        self.last_time, self.last_step = time.time(), state.global_step

    def on_log(self, args, state, control, logs=None, **kwargs):
        """One line for a training log (the end-of-training summary log is skipped)."""
        logs = logs or {}
        if not state.is_world_process_zero or "loss" not in logs:
            return
        now = time.time()
        per_step = (now - self.last_time) / max(1, state.global_step - self.last_step)
        self.last_time, self.last_step = now, state.global_step
        cols = []
        for _, key, form in self.COLUMNS:
            v = logs.get(key)
            cols.append(f"{form.format(v) if isinstance(v, (int, float)) else '-':>8}")
        flag = logs.get("cooper/hacking_warning")
        if flag is None:
            flag = "-"
        elif flag > 0:  # which checks fired (cooper/monitor.py), shortened
            fired = [c for c in MONITOR_SHORT if logs.get(f"cooper/monitor/{c}", 0) > 0]
            flag = "!" + ",".join(MONITOR_SHORT[c] for c in fired) if fired else "HACKING"
        elif logs.get("cooper/monitor_ready", 1) == 0:  # fewer reward calls than the monitor's window so far
            flag = "warm-up"
        else:
            flag = "ok"
        self.print(f"{state.global_step:>4}/{state.max_steps:<4} " + " ".join(cols) + f" {flag:>8} {per_step:>7.1f}")


MONITOR_SHORT = {  # console names of the monitor's checks
    "reward_up_acc_down": "rew/acc",
    "rm_fooled": "fooled",
    "rm_disagreement": "disagr",
    "length_collapse": "len",
    "entropy_collapse": "entropy",
    "acc_fall": "acc",
    "wrong_reward": "wrong",
}


class SaveAtGenerationBoundary(TrainerCallback):
    """Moves a scheduled checkpoint to the end of its generation batch (steps that are multiples of ``every``):
    TRL keeps a batch's rollouts in memory only, so a checkpoint inside a batch would resume by generating a new
    batch there (its prompts trained on again, the reward calls renumbered). The last step saves as scheduled."""

    def __init__(self, every: int):
        self.every, self.pending = max(1, every), False

    def on_step_end(self, args, state, control, **kwargs):
        at_boundary = state.global_step % self.every == 0 or state.global_step >= state.max_steps
        if control.should_save and not at_boundary:
            control.should_save, self.pending = False, True
        elif self.pending and at_boundary:
            control.should_save, self.pending = True, False
        return control


class HackingCallback(TrainerCallback):
    """Feeds TRL's logged policy entropy to the reward's hacking monitor and, with stop=True, ends the run
    cleanly (checkpoint saved, the co-optimized RM with it) at the end of the generation batch (``every`` optimizer
    steps) in which the monitor first flagged."""

    def __init__(self, reward, stop: bool = False, every: int = 1):
        self.reward, self.stop, self.every = reward, stop, max(1, every)
        self.flagged_at: int | None = None
        self.stopped_at: int | None = None

    def on_log(self, args, state, control, logs=None, **kwargs):
        """Pass the step's mean token entropy (TRL's 'entropy' log) on to the monitor."""
        monitor = getattr(self.reward, "monitor", None)
        if monitor is not None and logs and isinstance(logs.get("entropy"), (int, float)):
            monitor.observe_entropy(logs["entropy"])

    def on_step_end(self, args, state, control, **kwargs):
        """With stop: once the monitor has flagged, save and stop at the end of that generation batch."""
        monitor = getattr(self.reward, "monitor", None)
        if not self.stop or monitor is None or self.stopped_at is not None:
            return control
        if self.flagged_at is None and monitor.last_flags:
            self.flagged_at, self.flags = state.global_step, list(monitor.last_flags)
        if self.flagged_at is not None and state.global_step % self.every == 0:
            self.stopped_at = state.global_step
            print(
                f"[monitor] step {self.flagged_at}: {', '.join(self.flags)} -> stopping (--stop_on_hacking) at step "
                f"{state.global_step}; checkpoint saved",
                flush=True,
            )
            control.should_save = True
            control.should_training_stop = True
        return control


STEP0_PRECISION = ("bf16", "bf16_autocast", "rollout_autocast", "rollout_bf16_weights")


def step0_fingerprint(cfg) -> str | None:
    """sha256 of what a run's step-0 policy evaluation depends on beyond its EvalConfig: the policy's weights file,
    the evaluation data files and the precision settings (cfg: an RLConfig or anything with its fields). None if
    the policy is not a local safetensors dir."""
    import hashlib

    weights = Path(cfg.policy) / "model.safetensors"
    if not weights.is_file():
        return None
    h = hashlib.sha256()
    for f in (weights, *(Path(d) for d in cfg.eval_datasets if Path(d).is_file())):
        with open(f, "rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 22), b""):
                h.update(chunk)
    h.update(json.dumps({k: getattr(cfg, k, None) for k in STEP0_PRECISION}, sort_keys=True).encode())
    return h.hexdigest()


class EvalCallback(TrainerCallback):
    """Every cfg.eval_steps steps (and before the first): avg@k of the policy on cfg.eval_datasets (T=0.7,
    top-p 0.95) and, with cfg.rm_eval_data, the RM's metrics on that labelled file. One JSON line per
    evaluation in output_dir/evals.jsonl; samples under output_dir/eval/step-N."""

    def __init__(self, cfg, trainer, reward):
        """cfg: the run's RLConfig; trainer: its GRPOTrainer; reward: its reward callable."""
        from cooper_rl.rm.data import load_rm_rows

        self.cfg, self.trainer, self.reward = cfg, trainer, reward
        self.rm_rows = load_rm_rows(cfg.rm_eval_data) if cfg.rm_eval_data else None

    def eval_config(self, step: int):
        """The policy evaluation's EvalConfig at `step`: its sampling seed is cfg.seed + step, its built-in problems
        are drawn with cfg.eval_data_seed (the same problems at every step and in every run)."""
        from cooper_rl.evaluate import EvalConfig

        cfg = self.cfg
        return EvalConfig(
            model=cfg.policy,
            datasets=cfg.eval_datasets,
            k=cfg.eval_k,
            prompt_template=cfg.prompt_template,
            max_new_tokens=cfg.eval_max_new_tokens or cfg.max_completion_length,
            batch_size=cfg.eval_batch_size,
            output_dir=str(Path(cfg.output_dir) / "eval" / f"step-{step}"),
            seed=cfg.seed + step,
            data_seed=cfg.eval_data_seed,
            resume=False,
        )

    def reuse_step0(self, ecfg, fingerprint: str | None) -> tuple[dict, str] | None:
        """The step-0 policy evaluation of the first run dir in cfg.eval_step0_from that finished one with the same
        fingerprint (policy weights, evaluation data, precision) and EvalConfig (sets, k, sampling seed, lengths,
        batch): (its per-dataset metrics, its dir), with its samples copied to ecfg.output_dir. None if none has.
        A dir may also be a committed log of a run (evals.jsonl, eval/step-0/summary.json, samples.jsonl.gz): its
        gzipped files are copied uncompressed, so a run on a new machine reuses the step-0 evaluation committed
        with an earlier one."""
        import gzip
        import shutil
        from dataclasses import asdict

        from cooper_rl.io import read_jsonl

        if fingerprint is None:
            return None
        want = {k: v for k, v in asdict(ecfg).items() if k not in ("output_dir", "resume")}
        for d in map(Path, self.cfg.eval_step0_from):
            src = d / "eval" / "step-0"
            if not (src / "summary.json").is_file() or d.resolve() == Path(self.cfg.output_dir).resolve():
                continue
            try:
                rec = next((r for r in read_jsonl(d / "evals.jsonl", missing_ok=True) if r.get("step") == 0), None)
                done = json.loads((src / "summary.json").read_text())
            except (OSError, ValueError):
                continue
            got = {k: v for k, v in done.get("config", {}).items() if k not in ("output_dir", "resume")}
            if rec is not None and rec.get("step0_fingerprint") == fingerprint and got == want:
                shutil.copytree(src, ecfg.output_dir, dirs_exist_ok=True)
                for gz in Path(ecfg.output_dir).rglob("*.gz"):
                    with gzip.open(gz, "rb") as fin, open(gz.with_suffix(""), "wb") as fout:
                        shutil.copyfileobj(fin, fout)
                    gz.unlink()
                return rec["policy"], str(d)
        return None

    def evaluate(self, step: int) -> dict:
        """Run both evaluations now (at step 0 the policy's may be reused: cfg.eval_step0_from); return (and
        append) the record."""
        from cooper_rl.evaluate import evaluate
        from cooper_rl.rm.evaluate import binary_metrics, labelled_scores

        cfg, out = self.cfg, Path(self.cfg.output_dir)
        ecfg = self.eval_config(step)
        t0 = time.perf_counter()
        fingerprint = step0_fingerprint(cfg) if step == 0 else None
        reused = self.reuse_step0(ecfg, fingerprint) if cfg.eval_step0_from and step == 0 else None
        if reused is None:
            model = self.trainer.accelerator.unwrap_model(self.trainer.model)
            was_training = model.training
            model.eval()
            try:  # evaluate() seeds torch: keep the training RNG streams untouched
                with torch.random.fork_rng(devices=range(torch.cuda.device_count())):
                    summary = evaluate(ecfg, model=model, tokenizer=self.trainer.processing_class)
            finally:
                model.train(was_training)
            keep = ("avg@k_strict", "avg@k_lenient", "pass@k_strict", "answered_rate", "mean_new_tokens", "n_problems")
            policy = {name: {k: v for k, v in d.items() if k in keep} for name, d in summary["per_dataset"].items()}
        else:
            policy = reused[0]
        rec = {"step": step, "eval_seconds": time.perf_counter() - t0, "policy": policy}
        if fingerprint is not None:  # lets a later run of the same policy and seed reuse this evaluation
            rec["step0_fingerprint"] = fingerprint
        if reused is not None:
            rec["policy_eval_reused_from"] = reused[1]
        rm = getattr(self.reward, "rm", None)
        if self.rm_rows is not None and rm is not None:
            scores = labelled_scores(rm, self.rm_rows, batch_size=cfg.rm_batch_size)
            rec["rm"] = binary_metrics([r["label"] for r in self.rm_rows], scores)
            # per row, in rm_eval_data's order: what a CI on the RM's accuracy over training pairs across evaluations
            atomic_write_json(
                out / "eval" / f"step-{step}" / "rm_scores.json",
                {"data": cfg.rm_eval_data, "labels": [r["label"] for r in self.rm_rows], "scores": scores},
                indent=None,
            )
        append_jsonl(out / "evals.jsonl", [rec])
        print(
            json.dumps(
                {
                    "eval_step": step,
                    **{n: round(d["avg@k_strict"], 4) for n, d in rec["policy"].items()},
                    **({"rm_accuracy": round(rec["rm"]["accuracy"], 4)} if "rm" in rec else {}),
                }
            )
        )
        return rec

    def on_train_begin(self, args, state, control, **kwargs):
        """Evaluate the starting policy (not when resuming)."""
        if state.global_step == 0 and state.is_world_process_zero:
            self.evaluate(0)

    def on_step_end(self, args, state, control, **kwargs):
        """Evaluate every eval_steps steps."""
        if state.global_step % self.cfg.eval_steps == 0 and state.is_world_process_zero:
            self.evaluate(state.global_step)


class StopBeforeEvaluation(TrainerCallback):
    """With a deadline (``cooper rl --stop_at``): stop at a checkpoint *before* a periodic evaluation that would not
    finish by then. A stop signal is acted on only after the step's evaluation (EvalCallback runs in on_step_end),
    which can take as long as a quarter of the run; so when the steps up to the next allowed stop (``every``, the
    generation batch) include an evaluation step and now + those steps + the evaluation would pass the deadline, it
    asks ``on_signal`` (the run's SaveOnSignal, added after this callback) to checkpoint and stop at this step. The
    resumed run trains that step and evaluates it. Estimates: the median of this process's step times and
    ``margin`` x the longest evaluation in ``evals_path`` that ran (not reused); with no such evaluation yet it
    cannot estimate and leaves the deadline to the signal."""

    def __init__(
        self,
        on_signal,
        deadline: float,
        eval_steps: int,
        evals_path: str | Path,
        every: int = 1,
        margin: float = 1.25,
        clock=time.time,
    ):
        """deadline: seconds since the epoch (``clock``'s); on_signal: a SaveOnSignal with ``every`` steps."""
        self.on_signal, self.deadline, self.eval_steps = on_signal, deadline, eval_steps
        self.evals_path, self.every, self.margin, self.clock = Path(evals_path), max(1, every), margin, clock
        self.step_seconds: list[float] = []
        self._t = None

    def eval_estimate(self) -> float | None:
        """margin x the longest evaluation that ran in this run dir (seconds; None: none has)."""
        ran = [
            r["eval_seconds"]
            for r in read_jsonl(self.evals_path, missing_ok=True)
            if "policy_eval_reused_from" not in r and "eval_seconds" in r
        ]
        return self.margin * max(ran) if ran else None

    def on_step_begin(self, args, state, control, **kwargs):
        if self._t is None:
            self._t = self.clock()

    def on_step_end(self, args, state, control, **kwargs):
        """At a step where the run may stop: stop here if the next evaluation would not finish by the deadline."""
        now = self.clock()
        if self._t is not None:
            self.step_seconds.append(now - self._t)
        self._t = now
        step = state.global_step
        if step % self.every or step >= state.max_steps or self.on_signal.requested:
            return control
        ahead = range(step + 1, min(step + self.every, state.max_steps) + 1)
        if not any(s % self.eval_steps == 0 for s in ahead):
            return control
        evaluation = self.eval_estimate()
        if evaluation is None or not self.step_seconds:
            return control
        per_step = sorted(self.step_seconds)[len(self.step_seconds) // 2]
        need = len(ahead) * per_step + evaluation
        if now + need > self.deadline:
            self.on_signal.request(
                f"[stop_at] the evaluation at step {ahead[-1]} would end after the deadline (about {need / 60:.0f} "
                f"min needed, {max(0.0, self.deadline - now) / 60:.0f} min left)"
            )
        return control
