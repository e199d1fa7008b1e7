"""Are this machine's warm-up policy and VerifyRMs the ones the committed runs of an experiment used?

run_hack.sh rebuilds both where they are missing (a new machine). fp32 training is not bit-reproducible across
CPUs (torch's and MKL's kernels differ in the last bits from one CPU to another, and Adam turns that into other
weights: docs/RESULTS.md, "Machines and precision"), so a rebuild is checked before a new run joins the committed
ones: an RM by the sha256 of its weights against each committed run's rl_config.json (`rm_sha256`), the policy by
the step-0 evaluation fingerprint each committed run stored (sha256 of the policy weights, the evaluation data and
the precision: `cooper_rl.rl.callbacks.step0_fingerprint`). An RM not on this machine yet is not checked
(run_hack.sh calls this again once it has built it).

  python experiments/reproduce/check_artifacts.py experiments/reproduce/results_hack   # exit 1 on a mismatch
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from types import SimpleNamespace

from cooper_rl.io import read_jsonl
from cooper_rl.rl.callbacks import STEP0_PRECISION, step0_fingerprint
from cooper_rl.rl.train import rm_weights_sha256


def mismatches(results: str | Path) -> list[str]:
    """One line per committed run (results/runs/*/) whose RM or warm-up policy differs from this machine's file at
    the same path; [] when all that can be checked here matches."""
    bad: list[str] = []
    rm_here: dict[str, str | None] = {}
    fingerprint_here: dict[str, str | None] = {}
    for cfg_file in sorted(Path(results).glob("runs/*/rl_config.json")):
        run, cfg = cfg_file.parent.name, json.loads(cfg_file.read_text())
        rm, want = cfg.get("rm"), cfg.get("rm_sha256")
        if rm and want:
            if rm not in rm_here:
                rm_here[rm] = rm_weights_sha256(rm)
            if rm_here[rm] is not None and rm_here[rm] != want:
                bad.append(f"{run}: RM {rm} had sha256 {want[:12]}..., here {rm_here[rm][:12]}...")
        row = next((r for r in read_jsonl(cfg_file.parent / "evals.jsonl", missing_ok=True) if r.get("step") == 0), {})
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
    p.add_argument("results", help="an experiment's results dir (its committed runs under runs/*/)")
    bad = mismatches(p.parse_args(argv).results)
    for line in bad:
        print(f"[check_artifacts] {line}", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
