"""How closely a rerun of an issue-15 run reproduces the committed logs of the same run made earlier (a lost machine
restarts an unfinished run from step 0: run.sh).

usage: python experiments/reward_hacking/compare_rerun.py OLD_RUN_DIR NEW_RUN_DIR [OUT.json]
       OLD_RUN_DIR: e.g. the committed logs at an earlier commit:
         mkdir -p /tmp/old && git archive 0124287 experiments/reproduce/results_hack/runs/cooper_new-s0 | tar -x -C /tmp/old
         (the experiment's folder then: experiments/reproduce, results in results_hack)
reads  {evals,metrics}.jsonl and eval/step-N/samples.jsonl[.gz] of both
writes OUT.json (default: stdout): per common evaluation whether the policy's results are equal, whether its held-out
       samples are byte-identical and the largest RM metric difference, and over the common reward calls
       how many match (floats to REL relative) before the first that does not, with that call's differences
"""

from __future__ import annotations

import gzip
import hashlib
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from stats import records  # noqa: E402  (experiments/stats.py: the .jsonl/.jsonl.gz reader)

REL = 1e-4  # float rounding differs across CPUs; a sampled token that differs moves these far more
KEYS = ("rule_accuracy", "reward_mean", "completion_length", "rm/n_valid", "rm/rm_loss", "rm_fooled_rate")


def close(a, b) -> bool:
    """Equal, or floats within REL of each other."""
    if isinstance(a, float) and isinstance(b, float):
        return abs(a - b) <= REL * max(1.0, abs(a))
    return a == b


def samples_digest(run: Path, step: int = 0) -> str | None:
    """sha256 of the held-out samples of the step's evaluation (decompressed), None when missing."""
    d = run / "eval" / f"step-{step}"
    for p, opener in ((d / "samples.jsonl", open), (d / "samples.jsonl.gz", gzip.open)):
        if p.is_file():
            with opener(p, "rb") as f:
                return hashlib.sha256(f.read()).hexdigest()
    return None


def compare(old: Path, new: Path) -> dict:
    """The comparison described in the module docstring."""
    evals = []
    for a, b in zip(records(old / "evals.jsonl"), records(new / "evals.jsonl")):
        rm = {k: abs(a["rm"][k] - b["rm"][k]) for k in a.get("rm", {}) if isinstance(a["rm"][k], float)}
        digests = samples_digest(old, a["step"]), samples_digest(new, b["step"])
        evals.append(
            {
                "step": a["step"],
                "policy_equal": a["policy"] == b["policy"],
                "samples_identical": digests[0] is not None and digests[0] == digests[1],
                "rm_max_abs_diff": max(rm.values(), default=None),
            }
        )
    mo, mn = records(old / "metrics.jsonl"), records(new / "metrics.jsonl")
    same, first = 0, None
    for a, b in zip(mo, mn):
        diff = {k: [a.get(k), b.get(k)] for k in KEYS if not close(a.get(k), b.get(k))}
        if diff or a["step"] != b["step"]:
            first = {"step": a["step"], "differences (old, new)": diff}
            break
        same += 1
    digests = samples_digest(old), samples_digest(new)
    return {
        "old": str(old),
        "new": str(new),
        "evaluations": evals,
        "step0_samples_identical": digests[0] is not None and digests[0] == digests[1],
        "reward_calls_compared": min(len(mo), len(mn)),
        "reward_calls_matching_before_first_difference": same,
        "last_matching_step": mo[same - 1]["step"] if same else None,
        "first_difference": first,
        "keys": list(KEYS),
        "relative_tolerance": REL,
    }


if __name__ == "__main__":
    if len(sys.argv) not in (3, 4):
        sys.exit(__doc__)
    out = json.dumps(compare(Path(sys.argv[1]), Path(sys.argv[2])), indent=1)
    if len(sys.argv) == 4:
        Path(sys.argv[3]).write_text(out + "\n")
    print(out)
