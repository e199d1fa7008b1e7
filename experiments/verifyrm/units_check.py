"""The rule verifier's verdicts before and after the units fix (2026-12-04), side by side on the same completions.

Math-Verify strips trailing units, single letters among them; since the fix the sandbox keeps them against a
reference with a letter (src/cooper_rl/verify/sandbox.py, `Units`). This reruns the strict and the lenient rule with
the sandbox as it was (`git show BEFORE:src/cooper_rl/verify/sandbox.py`) and as it is, on the rollouts of issue 67's
runs (every STRIDE-th run, committed) and the VerifyRM evaluation sets (v3 held-out and robustness, v4 LaTeX
held-out), and writes how many verdicts differ, with each one, to results/units_check.json.

    python experiments/verifyrm/units_check.py [--before 77d0791] [--stride 3]
"""

import argparse
import glob
import gzip
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SETS = ["experiments/verifyrm/v3/heldout.jsonl", "experiments/verifyrm/v3/robustness.jsonl",
        "experiments/verifyrm/v4/latex_heldout.jsonl"]  # fmt: skip


def pairs(stride: int) -> tuple[list[str], list[str], list[str]]:
    """(completions, references, sources) of the runs' rollouts and the evaluation sets."""
    comps, refs, srcs = [], [], []
    for f in sorted(glob.glob(str(ROOT / "experiments/rl_learns/results/runs/*/rollouts.jsonl.gz")))[::stride]:
        for line in gzip.open(f, "rt"):
            r = json.loads(line)
            comps.append(r["completion"]), refs.append(r["reference"]), srcs.append(Path(f).parent.name)
    for f in SETS:
        for line in open(ROOT / f):
            r = json.loads(line)
            comps.append(r["completion"]), refs.append(r["reference"]), srcs.append(Path(f).name)
    return comps, refs, srcs


def verdicts(sandbox: str | None, stride: int) -> dict:
    """{mode: [verdict]} with the sandbox file `sandbox` (None: the current one), in a process of its own."""
    code = (
        "import json, runpy, sys; from cooper_rl import verify; pairs = runpy.run_path(sys.argv[3])['pairs']; "
        "sys.argv[1] != '-' and verify._SANDBOX_CMD.__setitem__(-1, sys.argv[1]); c, r, _ = pairs(int(sys.argv[2])); "
        "print(json.dumps({m: verify.verify_batch(c, r, mode=m, workers=1) for m in ('strict', 'lenient')}))"
    )
    out = subprocess.run([sys.executable, "-c", code, sandbox or "-", str(stride), __file__], check=True,
                         capture_output=True, text=True, cwd=ROOT).stdout  # fmt: skip
    return json.loads(out.splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--before", default="77d0791", help="a commit with the sandbox as it was before the fix")
    ap.add_argument("--stride", type=int, default=3, help="every STRIDE-th run's rollouts")
    args = ap.parse_args()
    old_src = subprocess.run(["git", "show", f"{args.before}:src/cooper_rl/verify/sandbox.py"], cwd=ROOT,
                             check=True, capture_output=True, text=True).stdout  # fmt: skip
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
        f.write(old_src)
    before, after = verdicts(f.name, args.stride), verdicts(None, args.stride)
    comps, refs, srcs = pairs(args.stride)
    diff = [
        {"mode": m, "source": srcs[i], "reference": refs[i], "completion": comps[i][-300:], "before": b, "after": a}
        for m in before for i, (b, a) in enumerate(zip(before[m], after[m])) if a != b
    ]  # fmt: skip
    out = {"n": len(comps), "sources": sorted(set(srcs)), "before": args.before, "n_differ": len(diff), "differ": diff}
    path = ROOT / "experiments/verifyrm/results/units_check.json"
    path.write_text(json.dumps(out, indent=1) + "\n")
    print(f"{len(comps)} completions x 2 modes: {len(diff)} verdicts differ -> {path.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
