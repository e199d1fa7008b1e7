"""Issue 67, "RL that learns": build what the runs need, run NAME:SEED runs (two at a time), keep their logs.

  python experiments/rl_learns/run.py b64:0 i15_filter:0 ...   # these runs, in order, --jobs at a time
  python experiments/rl_learns/run.py --sweep                  # every setting of settings.yaml, seed 0
  python experiments/rl_learns/run.py cooper_paper:0 model:0   # comparison conditions (in settings.yaml's regime)
  python experiments/rl_learns/run.py --compare                # rule (= REGIME:S) and every condition but the
                                                               # shipped RM's (--shipped), seeds 0-2
  python experiments/rl_learns/run.py --shipped                # issue 106 §2: from the shipped RM, as its decision says
  python experiments/rl_learns/run.py --headline               # issue 106 §3: seeds 3-4 of settings.yaml's `headline`
  python experiments/rl_learns/run.py --report-only            # copy the run dirs' logs, write the report

Steps, each skipped when its output exists (a fresh clone rebuilds what it lacks; everything is resumable):
1. the warm-up policy, runs/sft-builtin100 (issue 15's: experiments/reward_hacking/run.sh builds it the same way,
   pinned kernels, so it comes out bit-identical; check_artifacts.py checks it against the committed runs);
2. the evaluation sets, runs/rl_learns/eval/{svamp_heldout,gsm8k_test}.jsonl (issue 15's, byte-identical);
3. the filtered prompts (cooper filter, settings.yaml `filter`), committed under experiments/rl_learns/data/, when a
   planned run trains on them (a job beside the runs on unfiltered prompts; the others wait for it); likewise the
   RMs of planned comparison conditions (settings.yaml `rms`: their own scripts, resumable, pinned kernels);
4. the runs: `cooper rl` per NAME:SEED into runs/rl_learns/NAME-sSEED (resumed from its last checkpoint), with
   one torch thread each when two run side by side. While they run, their logs (metrics, evaluations, timing,
   rollouts, per-problem evaluation samples) are copied to experiments/rl_learns/results/runs/NAME-sSEED/ every
   minute: commit them as each evaluation lands. A run whose committed logs went further than its run dir (a lost
   machine) is left to the committed logs until the rerun catches up. A run dir made with another max_steps or
   eval_steps (e.g. before `regime` changed) is an error, not resumed. Every run of a condition starts from the same
   RM: the first one's sha256 is recorded in results/rms.json (commit it) and later runs must match it (or a build
   settings.yaml's `rms` accepts: rebuilds equal within float rounding).
Kernels: native (not the AVX2/non-Intel-MKL pinning of issue 15; benchmarks/pinning.py measured the cost and
docs say why): fp32 runs reproduce within their seed spread, not bit for bit, across CPUs.
"""

from __future__ import annotations

import argparse
import fcntl
import gzip
import hashlib
import json
import logging
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import yaml

from cooper_rl.io import atomic_dir
from cooper_rl.trainer_hooks import seconds_until

sys.path.insert(0, str(Path(__file__).resolve().parent))
from rundirs import HEADLINE_SEEDS, SEEDS, finished_run, run_name  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
RUNS = ROOT / "runs" / "rl_learns"
SFT = ROOT / "runs" / "sft-builtin100"
EVAL_DIR = RUNS / "eval"
# issue 15's warm-up; pinned kernels rebuild it bit-identical on AMD and Intel CPUs (docs/RESULTS.md)
WARMUP_SHA256 = "dd71158a6d5c1cf2c750e815ff717386e2949b01b6502891a8a455f02f5355cf"
SHARED = Path(os.environ.get("SHARED", ROOT.parent / "shared" / "data"))
COOPER = str(ROOT / ".venv" / "bin" / "cooper")
PY = str(ROOT / ".venv" / "bin" / "python")


def sh(cmd: str) -> None:
    """Run a bash command in the repo root with experiments/common.sh's environment (set-up, pinned kernels)."""
    subprocess.run(["bash", "-c", f"source experiments/common.sh; {cmd}"], cwd=ROOT, check=True)


def ensure_inputs() -> None:
    """Steps 1-2 of the module docstring."""
    if not (SFT / "sft_summary.json").is_file():
        print(f"[rl_learns] building the warm-up {SFT} (issue 15's, ~20 min)", flush=True)
        resume = "--resume_from_checkpoint last" if list(SFT.glob("checkpoint-*")) else ""
        sh(
            f"$C sft --datasets builtin:train:2000:1,2 --max_steps 100 --output_dir {SFT} --bf16_autocast false "
            f"--seed 0 --save_steps 10 {resume} >> {SFT}.log 2>&1"
        )
    got = hashlib.sha256((SFT / "policy" / "model.safetensors").read_bytes()).hexdigest()
    if got != WARMUP_SHA256:  # every run of the experiment starts from the same weights, on any machine
        sys.exit(f"{SFT}/policy is not issue 15's warm-up (sha256 {got[:12]}..., want {WARMUP_SHA256[:12]}...)")
    if not (EVAL_DIR / "gsm8k_test.jsonl").is_file():
        if not (ROOT / "experiments/verifyrm/data/svamp_heldout.jsonl").is_file():
            sh(f"{PY} experiments/verifyrm/prepare.py {SHARED}")
        from cooper_rl.data import load_problems, save_problems

        EVAL_DIR.mkdir(parents=True, exist_ok=True)
        save_problems(load_problems(f"{SHARED}/gsm8k/test.jsonl").problems[:100], EVAL_DIR / "gsm8k_test.jsonl")
        svamp = load_problems(str(ROOT / "experiments/verifyrm/data/svamp_heldout.jsonl")).problems[:100]
        save_problems(svamp, EVAL_DIR / "svamp_heldout.jsonl")


def filter_command(settings: dict) -> list[str]:
    """The `cooper filter` command of settings.yaml's `filter` (step 3)."""
    f = settings["filter"]
    args = [x for k, v in f.items() for x in (f"--{k}", *(map(str, v) if isinstance(v, list) else [str(v)]))]
    return [COOPER, "filter", "--policy", f"{SFT}/policy", *args]


def native_env(threads: int | None = None) -> dict:
    """The runs' environment: offline, torch's and MKL's own kernels for this CPU, `threads` threads if given."""
    env = {k: v for k, v in os.environ.items() if k not in ("ATEN_CPU_CAPABILITY", "LD_PRELOAD")}
    env |= {"HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    if threads:
        env |= {"OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads)}
    return env


def parse_run(settings: dict, text: str) -> tuple[str, int]:
    """(NAME, SEED) of a NAME:SEED argument; `rule:S` is the regime's own run REGIME:S (settings.yaml)."""
    name, _, seed = text.partition(":")
    if not seed.isdigit():
        sys.exit(f"a run is NAME:SEED (e.g. b64:0 or cooper_paper:1), not {text!r}")
    if name == "rule":
        if settings.get("regime") not in settings["settings"]:
            sys.exit(f"rule:{seed} is the regime's run, but settings.yaml's regime is {settings.get('regime')!r}")
        name = settings["regime"]
    return name, int(seed)


def compare_plan(settings: dict, seeds=SEEDS) -> list[tuple[str, int]]:
    """The comparison (issue 67 §4/§5): rule (REGIME:S) and every condition from the weaker or strong RM, seed by
    seed (the runs from the shipped RM: shipped_plan)."""
    conds = {n: c for n, c in settings.get("conditions", {}).items() if c.get("rm") != "shipped"}
    return [(n, s) for s in seeds for n in ("rule", *conds)]


def issue106_decision(results: Path = RESULTS) -> dict:
    """Issue 106's pre-registered judgement as report.py last wrote it (summary.json: comparison.decisions.issue106)."""
    path = results / "summary.json"
    decision = json.loads(path.read_text()).get("comparison", {}).get("decisions", {}).get("issue106") if path.is_file() else None  # fmt: skip
    if not decision or decision.get("default") not in (None, "cooper_rehearsal", "cooper_recal"):
        said = decision.get("default") if decision else "no decision"
        sys.exit(f"issue 106's variants are not judged yet in {path} ({said}): finish their seeds 0-2, run report.py")
    return decision


def headline_plan(settings: dict, decision: dict) -> list[tuple[str, int]]:
    """Issue 106 §3: the headline's conditions (settings.yaml `headline`, `rule` = the regime's runs), and a variant
    that met its targets (predictions.md: it is brought to seeds 0-4), at the seeds beyond the comparison's (3, 4),
    seed by seed."""
    names = list(settings.get("headline", []))
    names += [v for v in ("cooper_rehearsal", "cooper_recal") if decision[v]["all_targets_met"] and v not in names]
    return [(n, s) for s in HEADLINE_SEEDS if s not in SEEDS for n in names]


def shipped_plan(settings: dict, decision: dict) -> list[tuple[str, int]]:
    """Issue 106 §2 from the shipped RM (predictions.md, "Co-optimizing the shipped RM"): cooper_paper_shipped and one
    variant, the one the decision made the default; if neither met its targets, the one with the lower mean share of
    wrong rows accepted at step 50; at the seeds settings.yaml gives them (0)."""
    variants = ("cooper_rehearsal", "cooper_recal")
    pick = decision["default"] if decision["default"] in variants else None
    if pick is None:
        ends = {v: decision[v]["predictions"]["wrong_accepted_end_mean"] for v in variants}
        if None in ends.values():
            early = [v for v in variants if decision[v].get("missed_before_3_seeds")]
            sys.exit(
                f"issue 106's tie-break (neither variant met its targets) needs both variants' mean wrong rows accepted "
                f"at step 50: {ends}"
                + (f"; finish seeds 0-2 of {', '.join(early)} and rerun report.py" if early else "")
            )
        pick = min(variants, key=lambda v: ends[v])
    names = ("cooper_paper_shipped", f"{pick}_shipped")
    return [(n, s) for n in names for s in settings["conditions"][n]["seeds"]]


def spec(settings: dict, name: str) -> dict:
    """Run NAME's setting ({filtered, flags[, rm]}): a sweep setting, or a comparison condition = the regime's
    setting with the condition's flags, its RM, the RM's evaluation set and an evaluation at the middle."""
    if name in settings["settings"]:
        return settings["settings"][name]
    cond = settings.get("conditions", {}).get(name)
    if cond is None:
        known = sorted(settings["settings"]) + sorted(settings.get("conditions", {}))
        sys.exit(f"unknown setting or condition {name!r}; settings.yaml has {known}")
    regime = settings.get("regime")
    if regime not in settings["settings"]:
        sys.exit(f"{name} is a comparison condition, but settings.yaml's regime is {regime!r}: the sweep picks it")
    base = settings["settings"][regime]
    flags = base["flags"] | {"eval_steps": base["flags"]["max_steps"] // 2, "save_total_limit": 2} | cond["flags"]
    flags |= {"rm": settings["rms"][cond["rm"]]["path"], "rm_eval_data": settings["rm_eval_data"]}
    return {"filtered": base["filtered"], "flags": flags, "rm": cond["rm"]}


def prereqs(settings: dict, name: str) -> list[str]:
    """The jobs run NAME needs finished first: "filter" (its filtered prompts), "rm:KIND" (its RM)."""
    s = spec(settings, name)
    return (["filter"] if s["filtered"] else []) + ([f"rm:{s['rm']}"] if s.get("rm") else [])


def prereq_done(settings: dict, job: str) -> bool:
    """Whether a prerequisite job's output exists."""
    if job == "filter":
        return (ROOT / settings["filter"]["output"]).is_file()
    return (ROOT / settings["rms"][job[3:]]["path"] / "cooper_rm.json").is_file()


def check_rm(settings: dict, kind: str) -> str | None:
    """Why the RM of `kind` is not the one the comparison's runs start from (None if it is): the sha256 recorded in
    results/rms.json by its first run (recorded now if none), or one settings.yaml's rms.KIND.also_accept lists."""
    from cooper_rl.io import atomic_write_json, weights_sha256

    rm = settings["rms"][kind]
    got = weights_sha256(ROOT / rm["path"])
    if got is None:
        return f"{rm['path']} has no model.safetensors: rebuild it ({rm['build']})"
    path = RESULTS / "rms.json"
    record = json.loads(path.read_text()) if path.is_file() else {}
    if kind not in record:
        record[kind] = {
            "sha256": got,
            "path": rm["path"],
            "recorded": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        }
        atomic_write_json(path, record)
        print(f"[rl_learns] rm:{kind} is {got[:12]}...: recorded in {path.relative_to(ROOT)} (commit it)", flush=True)
    elif got not in (record[kind]["sha256"], *rm.get("also_accept", [])):
        return (
            f"{rm['path']} (sha256 {got[:12]}...) is not the rm:{kind} the comparison's runs used "
            f"({record[kind]['sha256'][:12]}..., {path.relative_to(ROOT)}): rebuild it ({rm['build']}), or, if it is "
            "equal within float rounding (experiments/reward_hacking/check_artifacts.py), list it in settings.yaml's "
            f"rms.{kind}.also_accept"
        )


def check_inputs(settings: dict, name: str) -> str | None:
    """Why a condition's uncommitted input files (settings.yaml `inputs`: {path: sha256}, e.g. an RM's own training
    rows to rehearse) do not let its run start (None if they do): missing, or not the build its sha256 names."""
    from cooper_rl.io import file_sha256

    cond = settings.get("conditions", {}).get(name, {})
    for path, want in (cond.get("inputs") or {}).items():
        f = ROOT / path
        got = file_sha256(f) if f.is_file() else None
        if got != want:
            state = "missing" if got is None else f"sha256 {got[:12]}..., not {want[:12]}..."
            return f"{path} is {state}: build it ({cond.get('inputs_build', 'see settings.yaml')})"
    return None


def check_schedule(settings: dict, name: str, seed: int) -> None:
    """Exit if run NAME:SEED's dir was made with another max_steps or eval_steps than its setting has now (a
    resume would silently extend or re-time it, e.g. after `regime` changed)."""
    made = RUNS / run_name(name, seed) / "rl_config.json"
    if not made.is_file():
        return
    cfg, want = json.loads(made.read_text()), spec(settings, name)["flags"]
    diff = {k: (cfg.get(k), want[k]) for k in ("max_steps", "eval_steps") if k in want and cfg.get(k) != want[k]}
    if diff:
        sys.exit(
            f"{made.parent} was made with {', '.join(f'{k} {a} (now {b})' for k, (a, b) in diff.items())}: "
            "move it aside to rerun it, or restore settings.yaml"
        )


def prereq_outcome(settings: dict, job: str, proc, stopped: bool) -> str:
    """What became of a prerequisite job that ended: "done" (its output is there), "stopped" (by this driver's
    deadline: the next driver resumes it), "retry" (another process built it, Foreign, and left no output: stopped
    or failed there; the builds are resumable, so this driver builds it) or "failed" (this driver's process exited
    with an error or left no output)."""
    if prereq_done(settings, job) and not proc.returncode:
        return "done"
    if stopped:
        return "stopped"
    return "retry" if isinstance(proc, Foreign) else "failed"


def prereq_command(settings: dict, job: str) -> list[str]:
    """The command of a prerequisite job (the RM scripts pin their kernels themselves: issue 15's RMs, rebuilt
    bit-identical)."""
    return filter_command(settings) if job == "filter" else ["bash", "-c", settings["rms"][job[3:]]["build"]]


def run_flags(settings: dict, name: str) -> dict:
    """The cooper rl flags of run NAME on top of configs/rl_cpu_small.yaml: the common ones, the frozen monitor's, its own."""
    return settings["common"] | yaml.safe_load((HERE / "monitor.yaml").read_text()) | spec(settings, name)["flags"]


def command(settings: dict, name: str, seed: int) -> list[str]:
    """The `cooper rl` command of run NAME:SEED."""
    s = spec(settings, name)
    f = settings["filter"]
    data = [f["output"]] if s["filtered"] else f["datasets"]
    flags = run_flags(settings, name)
    out = RUNS / run_name(name, seed)
    cmd = [COOPER, "rl", "--config", "configs/rl_cpu_small.yaml", "--policy", f"{SFT}/policy", "--datasets", *data]
    cmd += ["--data_seed", str(f["data_seed"]), "--seed", str(seed), "--output_dir", str(out)]
    cmd += [
        "--eval_datasets",
        "builtin:test:300:1,2",
        f"{EVAL_DIR}/svamp_heldout.jsonl",
        f"{EVAL_DIR}/gsm8k_test.jsonl",
    ]
    for k, v in flags.items():
        cmd += [f"--{k}", str(v).lower() if isinstance(v, bool) else str(v)]
    step0 = [str(d) for d in sorted(RUNS.glob(f"*-s{seed}")) if d.is_dir() and d != out]
    step0 += [str(d) for d in sorted((RESULTS / "runs").glob(f"*-s{seed}"))]  # committed (a lost machine)
    if step0:
        cmd += ["--eval_step0_from", *step0]
    if list(out.glob("checkpoint-*")):
        cmd += ["--resume_from_checkpoint", "last"]
    return cmd


def steps_logged(d: Path) -> tuple[int, int]:
    """(last evaluated step, last logged step) of a run's logs."""

    def last(f):
        try:
            lines = (d / f).read_text().splitlines()
            return json.loads(lines[-1])["step"] if lines else -1
        except (OSError, ValueError, KeyError):
            return -1

    return last("evals.jsonl"), last("metrics.jsonl")


def whole_lines(path: Path) -> bytes:
    """A log's bytes up to its last newline: a line the run is writing right now is left for the next copy."""
    data = path.read_bytes()
    return data[: data.rfind(b"\n") + 1]


def copy_logs(out: Path) -> None:
    """Copy a run dir's logs to results/runs/NAME, atomically (unless the committed ones went further: a lost
    machine); jsonl logs up to their last whole line, the bulky ones gzipped."""
    dst = RESULTS / "runs" / out.name
    if not (out / "evals.jsonl").is_file() or steps_logged(dst) > steps_logged(out):
        return
    with atomic_dir(dst) as tmp:
        for f in ("metrics.jsonl", "evals.jsonl", "timing.jsonl"):
            if (out / f).is_file():
                (tmp / f).write_bytes(whole_lines(out / f))
        for f in ("rl_config.json", "rl_summary.json"):
            if (out / f).is_file():
                shutil.copy(out / f, tmp / f)
        trainer_log(out, tmp, previous=dst / "trainer_log.jsonl")
        for f in ("rollouts.jsonl", "rm_pairs.jsonl"):  # rm_pairs: a Cooper run's RM training pairs
            if (out / f).is_file():
                (tmp / f"{f}.gz").write_bytes(gzip.compress(whole_lines(out / f), mtime=0))
        copy_final_rm(out, tmp)
        for e in sorted((out / "eval").glob("step-*")):
            if (e / "summary.json").is_file():  # a finished evaluation (its samples are complete)
                (tmp / "eval" / e.name).mkdir(parents=True)
                samples = gzip.compress((e / "samples.jsonl").read_bytes(), mtime=0)
                (tmp / "eval" / e.name / "samples.jsonl.gz").write_bytes(samples)
                shutil.copy(e / "summary.json", tmp / "eval" / e.name / "summary.json")
                if (e / "rm_scores.json").is_file():  # the RM's per-row scores on rm_eval_data
                    shutil.copy(e / "rm_scores.json", tmp / "eval" / e.name / "rm_scores.json")


RM_FILES = ("adapter_config.json", "adapter_model.safetensors", "cooper_rm.json")
RM_MAX_BYTES = 25_000_000  # issue 104 §5: an RM the project can commit (a LoRA adapter + score head)


def copy_final_rm(out: Path, dst: Path) -> bool:
    """A finished run's final RM into dst/rm with its SHA256SUMS, when it is an adapter small enough to commit (a Cooper
    run from a LoRA RM such as the shipped verifyrm: the online update moved the adapter and the head only); a full
    model (e.g. the weaker RM, ~0.5 GB) stays in the run dir, rebuildable by its script. True if copied."""
    rm = out / "rm"
    if not (out / "rl_summary.json").is_file() or not all((rm / f).is_file() for f in RM_FILES):
        return False
    if (size := sum((rm / f).stat().st_size for f in RM_FILES)) > RM_MAX_BYTES:
        print(f"[rl_learns] {rm}: {size / 1e6:.1f} MB, above {RM_MAX_BYTES / 1e6:.0f} MB: not committed", flush=True)
        return False
    from cooper_rl.io import file_sha256

    (dst / "rm").mkdir(parents=True, exist_ok=True)
    sums = []
    for f in RM_FILES:
        shutil.copy(rm / f, dst / "rm" / f)
        sums.append(f"{file_sha256(rm / f)}  {f}\n")
    (dst / "rm" / "SHA256SUMS").write_text("".join(sums))
    return True


TRAINER_LOG_KEYS = ("step", "kl", "entropy", "grad_norm", "loss", "learning_rate", "reward_std", "frac_reward_zero_std")


def trainer_log(out: Path, dst: Path, previous: Path | None = None) -> None:
    """TRL's own per-step log (KL to the reference, entropy, gradient norm, ...) from the run's newest checkpoint, as
    dst/trainer_log.jsonl (the run dir keeps it only inside checkpoints); without a readable checkpoint, `previous`
    (the last copy) is kept."""

    from cooper_rl.trainer_hooks import log as hooks_log
    from cooper_rl.trainer_hooks import resolve_checkpoint  # the newest complete checkpoint, as a resume takes it

    level = hooks_log.level
    hooks_log.setLevel(logging.ERROR)  # a checkpoint being written is normal here: no warning every minute
    try:
        ckpt = Path(resolve_checkpoint(out, "last"))
        history = json.loads((ckpt / "trainer_state.json").read_text())["log_history"]
    except (OSError, ValueError, KeyError):  # none yet, or one being written: the last copy stays
        history = None
    finally:
        hooks_log.setLevel(level)
    if history is not None:
        rows = [{k: h[k] for k in TRAINER_LOG_KEYS if k in h} for h in history if "step" in h and "loss" in h]
        (dst / "trainer_log.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
        return
    if previous is not None and previous.is_file():
        shutil.copy(previous, dst / "trainer_log.jsonl")


def take_lock(path: Path) -> int | None:
    """An fd holding an exclusive lock on `path` (passed to the job's process, so the lock lives as long as the job,
    even past this driver), or None if another process holds it."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    return fd


class Foreign:
    """A run another process (a previous driver's job) is running: counts as one of this driver's jobs until the
    lock on its run dir is free; poll() as subprocess.Popen's."""

    def __init__(self, lock_path: Path):
        self.lock_path, self.returncode = lock_path, None

    def poll(self) -> int | None:
        fd = take_lock(self.lock_path)
        if fd is None:
            return None
        os.close(fd)
        self.returncode = 0
        return 0


def jobs_now(default: int) -> int:
    """Jobs side by side: runs/rl_learns/jobs if it holds a number (change it while the driver runs, e.g. 1 to free a
    core for another experiment: running jobs finish, no new one starts beyond it), else --jobs."""
    try:
        return max(0, int((RUNS / "jobs").read_text().strip()))
    except (OSError, ValueError):
        return default


def job_env(threads: int | None, default_jobs: int) -> dict:
    """A job's environment as it starts: `threads` torch threads, else cores / jobs_now() (the jobs file may change
    while the driver runs), else torch's own default (all cores) for one job."""
    jobs = jobs_now(default_jobs)
    return native_env(threads or (max(1, (os.cpu_count() or 2) // jobs) if jobs > 1 else None))


def sharing(limit: int, running: int, waiting: int) -> int:
    """How many jobs share the cores once one more starts: those running, it, and those waiting to start, at most
    ``limit`` (--jobs): a run planned alone gets every core, not 1 / --jobs of them."""
    return max(1, min(limit, running + 1 + waiting))


def step0_pending(name: str, seed: int) -> bool:
    """Whether run NAME:SEED has not finished its step-0 evaluation yet."""
    return not (RUNS / run_name(name, seed) / "eval" / "step-0" / "summary.json").is_file()


def finished(settings: dict, name: str, seed: int) -> bool:
    """Whether NAME:SEED reached its max_steps (here or in the committed logs)."""
    want = spec(settings, name)["flags"]["max_steps"]
    return any(finished_run(d, want) for d in (RUNS / run_name(name, seed), RESULTS / "runs" / run_name(name, seed)))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("runs", nargs="*", help="NAME:SEED, in order")
    ap.add_argument("--sweep", action="store_true", help="every setting, seed 0")
    ap.add_argument(
        "--compare",
        action="store_true",
        help="rule (REGIME:S) and every condition but the shipped RM's (--shipped), seeds 0-2 (§4/§5)",
    )
    ap.add_argument(
        "--headline",
        action="store_true",
        help="settings.yaml's `headline` conditions and a variant that met its targets, seeds 3-4 (issue 106 §3)",
    )
    ap.add_argument(
        "--shipped",
        action="store_true",
        help="cooper_paper and the variant issue 106's decision names, from the shipped RM, seed 0 (issue 106 §2)",
    )
    ap.add_argument(
        "--jobs", type=int, default=2, help="runs (and prerequisites) side by side; runs/rl_learns/jobs overrides it"
    )
    ap.add_argument(
        "--threads",
        type=int,
        default=None,
        help="torch threads per job (default: cores / jobs, the jobs file's number where it has one)",
    )
    ap.add_argument("--report-only", action="store_true")
    ap.add_argument(
        "--stop-at",
        default=None,
        help="HH:MM (UTC), ISO time or +SECONDS: every run checkpoints and stops by then (cooper rl --stop_at), the "
        "filter is stopped (it resumes), no new job starts",
    )
    args = ap.parse_args()
    deadline = time.time() + seconds_until(args.stop_at) if args.stop_at else None
    settings = yaml.safe_load((HERE / "settings.yaml").read_text())
    RUNS.mkdir(parents=True, exist_ok=True)
    RESULTS.mkdir(parents=True, exist_ok=True)
    plan = [parse_run(settings, r) for r in args.runs]
    if args.sweep:
        plan += [(n, 0) for n in settings["settings"]]
    if args.compare:
        plan += [parse_run(settings, f"{n}:{s}") for n, s in compare_plan(settings)]
    if args.shipped:
        plan += shipped_plan(settings, issue106_decision())
    if args.headline:
        plan += [parse_run(settings, f"{n}:{s}") for n, s in headline_plan(settings, issue106_decision())]
    for name, seed in plan:
        spec(settings, name)  # unknown names and conditions without a regime fail here, before anything starts
        check_schedule(settings, name, seed)
    if not args.report_only:
        ensure_inputs()

    todo = [] if args.report_only else [(n, s) for n, s in plan if not finished(settings, n, s)]
    running: dict = {}
    failed = []
    # prerequisites (the filter pre-pass, the RMs) are jobs of their own: runs that do not need them go on meanwhile
    wanted = sorted({j for n, _ in todo for j in prereqs(settings, n) if not prereq_done(settings, j)})
    for r in list(todo):  # runs an earlier driver still runs count as jobs from the start (a restarted driver)
        fd = take_lock(RUNS / f"{run_name(*r)}.lock")
        if fd is None:
            print(f"[rl_learns] {r[0]}:{r[1]} is running in another process: waiting for it", flush=True)
            running[r] = Foreign(RUNS / f"{run_name(*r)}.lock")
            todo.remove(r)
        else:
            os.close(fd)
    while todo or running:
        if deadline and time.time() >= deadline:
            todo, wanted = [], []
            for key, p in list(running.items()):
                if isinstance(key, str) and isinstance(p, Foreign):
                    del running[key]  # another driver's build: not this driver's to wait for any more
                elif isinstance(key, str) and p.poll() is None:
                    os.killpg(p.pid, signal.SIGTERM)  # finished work is kept: the next driver resumes it
        while todo and len(running) < jobs_now(args.jobs):
            job = next((j for j in wanted if j not in running and not prereq_done(settings, j)), None)
            if job is not None:
                wanted.remove(job)
                lock = take_lock(RUNS / f"{job.replace(':', '-')}.lock")
                if lock is None:  # another process builds it: awaited (and a failure there fails its runs here)
                    running[job] = Foreign(RUNS / f"{job.replace(':', '-')}.lock")
                else:
                    print(f"[rl_learns] {job} ({time.strftime('%H:%M:%S')})", flush=True)
                    log = open(RUNS / f"{job.replace(':', '-')}.log", "a")
                    running[job] = subprocess.Popen(prereq_command(settings, job), cwd=ROOT, env=job_env(args.threads, sharing(args.jobs, len(running), len(todo))), stdout=log, stderr=subprocess.STDOUT, pass_fds=(lock,), start_new_session=True)  # fmt: skip
                    os.close(lock)
                continue
            # a seed's step-0 evaluation is computed once: its other runs wait for the first to finish it; runs wait
            # for their prerequisites
            ready = [
                r
                for r in todo
                if all(prereq_done(settings, j) for j in prereqs(settings, r[0]))
                and not any(not isinstance(key, str) and key[1] == r[1] and step0_pending(*key) for key in running)
            ]
            if not ready:
                break
            name, seed = ready[0]
            todo.remove(ready[0])
            why = check_rm(settings, spec(settings, name)["rm"]) if spec(settings, name).get("rm") else None
            why = why or check_inputs(settings, name)
            if why:
                print(f"[rl_learns] {name}:{seed} not started: {why}", flush=True)
                failed.append((name, seed))
                continue
            out = RUNS / run_name(name, seed)
            lock = take_lock(Path(f"{out}.lock"))  # held by the run's process: one writer per run dir
            if lock is None:  # a job of an earlier driver: this one waits for it (and copies its logs)
                print(f"[rl_learns] {name}:{seed} is running in another process: waiting for it", flush=True)
                running[(name, seed)] = Foreign(Path(f"{out}.lock"))
                continue
            cmd = command(settings, name, seed) + (["--stop_at", f"+{deadline - time.time():.0f}"] if deadline else [])
            with open(RESULTS / "commands.txt", "a") as f:
                f.write(
                    f"{time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())} {' '.join(cmd).replace(str(ROOT) + '/', '')}\n"
                )
            print(f"[rl_learns] {name}:{seed} -> {out} ({time.strftime('%H:%M:%S')})", flush=True)
            running[(name, seed)] = subprocess.Popen(cmd, cwd=ROOT, env=job_env(args.threads, sharing(args.jobs, len(running), len(todo))), stdout=open(f"{out}.log", "a"), stderr=subprocess.STDOUT, pass_fds=(lock,))  # fmt: skip
            os.close(lock)
        time.sleep(60)
        for key, p in list(running.items()):
            if isinstance(key, str):  # a prerequisite
                if p.poll() is not None:
                    del running[key]
                    outcome = prereq_outcome(settings, key, p, stopped=bool(deadline and time.time() >= deadline))
                    if outcome == "retry":
                        print(f"[rl_learns] {key}: another process stopped building it; building it here", flush=True)
                        wanted.append(key)
                    elif outcome == "failed":
                        todo = [r for r in todo if key not in prereqs(settings, r[0])]
                        failed.append(key)
                        print(f"[rl_learns] {key} failed ({p.returncode}): see {RUNS}/{key.replace(':', '-')}.log", flush=True)  # fmt: skip
                continue
            copy_logs(RUNS / run_name(*key))
            if p.poll() is not None:
                del running[key]
                print(
                    f"[rl_learns] {key[0]}:{key[1]} ended with {p.returncode} ({time.strftime('%H:%M:%S')})", flush=True
                )
                if p.returncode not in (0, 143):
                    failed.append(key)
                elif (
                    isinstance(p, Foreign)
                    and not finished(settings, *key)
                    and not (deadline and time.time() >= deadline)
                ):
                    todo.insert(0, key)  # stopped by the other driver's deadline: this one resumes it
    for d in sorted(RUNS.glob("*-s*")):
        if d.is_dir():
            copy_logs(d)
    subprocess.run([PY, str(HERE / "report.py")], cwd=ROOT, check=False)
    if failed:
        sys.exit(f"failed: {failed} (see runs/rl_learns/NAME-sSEED.log)")


if __name__ == "__main__":
    main()
