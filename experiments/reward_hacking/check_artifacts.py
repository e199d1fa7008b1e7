"""Are this machine's warm-up policy and VerifyRMs the ones the committed runs of an experiment used?

run.sh rebuilds both where they are missing (a new machine). fp32 training is not bit-reproducible across
CPUs (torch's and MKL's kernels differ in the last bits from one CPU to another, and Adam turns that into other
weights: docs/RESULTS.md, "Machines and precision"), so a rebuild is checked before a new run joins the committed
ones: an RM by the sha256 of its weights against each committed run's rl_config.json (`rm_sha256`), the policy by
the step-0 evaluation fingerprint each committed run stored (sha256 of the policy weights, the evaluation data and
the precision: `cooper_rl.rl.callbacks.step0_fingerprint`). An RM not on this machine yet is not checked
(run.sh calls this again once it has built it).

An RM whose weights differ only by float rounding passes: where the sha256 differs, the RM is scored on the labelled
set every committed run evaluated it on at step 0 (as `EvalCallback` does), and it passes if every thresholded
metric (accuracy, precision, recall, ...) is equal and AUROC and ECE are within AUROC_TOL / ECE_TOL. One swapped pair
of scores moves AUROC by 1 / (positives x negatives), 1.2e-5 on the 600-row set; the runs themselves are not
bit-reproducible (one or two torch threads change float sums; reruns with the same RM part by step ~65).

  python experiments/reward_hacking/check_artifacts.py [RESULTS_DIR]   # exit 1 on a mismatch
  (default: experiments/reward_hacking/results, this experiment's committed runs)
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from types import SimpleNamespace

from cooper_rl.io import read_jsonl
from cooper_rl.rl.callbacks import STEP0_PRECISION, step0_fingerprint
from cooper_rl.rl.config import rm_weights_sha256

AUROC_TOL = 1e-4  # ~8 swapped pairs of 80,591 on the 600-row labelled set
ECE_TOL = 1e-5
EXACT = ("n", "positive_rate", "predicted_positive_rate", "accuracy", "precision", "recall", "f1")


def rm_metrics(rm: str, data: str, batch_size: int, max_length: int | None = None, sha: str | None = None) -> dict:
    """The RM's metrics on a labelled file, computed as a run's step-0 evaluation computes them; cached next to the
    RM's weights (rm_check.json, keyed by their sha256, given as sha if known, and the file)."""
    from cooper_rl.cooper.reward_model import VerifyRM
    from cooper_rl.rm.data import load_rm_rows
    from cooper_rl.rm.evaluate import labelled_metrics

    cache, key = Path(rm) / "rm_check.json", f"{sha or rm_weights_sha256(rm)} {data} {batch_size} {max_length}"
    done = json.loads(cache.read_text()) if cache.is_file() else {}
    if key not in done:
        model = VerifyRM.from_pretrained(rm, max_length=max_length, device="cpu")
        done[key] = labelled_metrics(model, load_rm_rows(data), batch_size=batch_size)
        cache.write_text(json.dumps(done, indent=1))
    return done[key]


def rm_differences(got: dict, want: dict) -> list[str]:
    """Where an RM's labelled-set metrics (got) differ from a committed run's step-0 ones (want) by more than float
    rounding: [] when equivalent."""
    out = [f"{k} {got.get(k)} vs {want[k]}" for k in EXACT if k in want and got.get(k) != want[k]]
    for k, tol in (("auroc", AUROC_TOL), ("ece", ECE_TOL)):
        if k in want and (got.get(k) is None or abs(got[k] - want[k]) > tol):
            out.append(f"{k} {got.get(k)} vs {want[k]} (tolerance {tol})")
    return out


def mismatches(results: str | Path) -> list[str]:
    """One line per committed run (results/runs/*/) whose RM or warm-up policy differs from this machine's file at
    the same path; [] when all that can be checked here matches."""
    bad: list[str] = []
    rm_here: dict[str, str | None] = {}
    fingerprint_here: dict[str, str | None] = {}
    told: set[str] = set()  # RMs equal within rounding, said once
    for cfg_file in sorted(Path(results).glob("runs/*/rl_config.json")):
        run, cfg = cfg_file.parent.name, json.loads(cfg_file.read_text())
        row = next((r for r in read_jsonl(cfg_file.parent / "evals.jsonl", missing_ok=True) if r.get("step") == 0), {})
        rm, want = cfg.get("rm"), cfg.get("rm_sha256")
        if rm and want:
            if rm not in rm_here:
                rm_here[rm] = rm_weights_sha256(rm)
            if rm_here[rm] is not None and rm_here[rm] != want:
                diff = ["no step-0 RM evaluation to compare"]
                if "rm" in row and cfg.get("rm_eval_data"):
                    args = (cfg["rm_eval_data"], cfg.get("rm_batch_size", 64), cfg.get("rm_max_length"), rm_here[rm])
                    got = rm_metrics(rm, *args)
                    diff = rm_differences(got, row["rm"])
                    if not diff and rm not in told:
                        told.add(rm)
                        print(
                            f"[check_artifacts] {run}: RM {rm} sha256 {want[:12]}..., here {rm_here[rm][:12]}...: equal "
                            f"within float rounding on {cfg['rm_eval_data']} (auroc {got['auroc']:.10f} vs "
                            f"{row['rm']['auroc']:.10f}, ece {got['ece']:.10f} vs {row['rm']['ece']:.10f})",
                            file=sys.stderr,
                        )
                if diff:
                    bad.append(
                        f"{run}: RM {rm} had sha256 {want[:12]}..., here {rm_here[rm][:12]}...: {'; '.join(diff)}"
                    )
        want = row.get("step0_fingerprint")
        if want:
            key = json.dumps({k: cfg.get(k) for k in ("policy", "eval_datasets", *STEP0_PRECISION)})
            if key not in fingerprint_here:
                fingerprint_here[key] = step0_fingerprint(SimpleNamespace(**cfg))
            got = fingerprint_here[key]
            if got != want:
                bad.append(
                    f"{run}: warm-up policy {cfg['policy']} (with its evaluation data) had step-0 fingerprint "
                    f"{want[:12]}..., here {(got or 'missing')[:12]}..."
                )
    return bad


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument(
        "results",
        nargs="?",
        default=str(Path(__file__).resolve().parent / "results"),
        help="an experiment's results dir (its committed runs under runs/*/; default: this experiment's)",
    )
    bad = mismatches(p.parse_args(argv).results)
    for line in bad:
        print(f"[check_artifacts] {line}", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
