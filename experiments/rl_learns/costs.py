"""Seconds per 1,000 rollouts of two sweep settings, measured side by side with one torch thread each: the pick's
tie-break where the settings within 1 point of the best ran with different thread counts (predictions.md, addendum
of 2026-12-02).

  python experiments/rl_learns/costs.py b64 b64_drgrpo [--rounds 2] [--rollouts 320]

Writes each setting's `cooper rl` config (configs/rl_cpu_small.yaml with settings.yaml's common flags and the setting's
own, less its schedule and evaluation) to runs/rl_learns/costs/NAME.yaml, runs benchmarks/presets.py on the two
(on the prompts the setting trains on, from the warm-up policy; first generation batch not timed; median over
rounds, the order swapped each round; record in benchmarks/results/costs_A_B.json) and appends the pair's medians to
results/costs.json ({"pairs": [{A: seconds per 1,000 rollouts, B: ...}, ...]}), which report.py's pick reads: costs
of one pair compare directly, costs of different pairs only as ratios to a setting both were measured beside. More
than two settings: run it per pair with the same first setting.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(ROOT / "src"))
from cooper_rl.io import atomic_write_json, atomic_write_text  # noqa: E402

sys.path.insert(0, str(HERE))
from run import run_flags  # noqa: E402  (experiments/rl_learns/run.py: the runs' own flags)

# what presets.py sets itself, or what does not change a training step's cost
NOT_COST = {"max_steps", "eval_steps", "save_steps", "save_total_limit", "eval_k", "report_to", "reward"}


def config(settings: dict, name: str) -> dict:
    """The cooper rl config of setting NAME as a benchmark runs it: the small-batch CPU preset (the experiment.s base), common flags, its own flags."""
    if name not in settings["settings"]:
        sys.exit(f"unknown setting {name!r}; settings.yaml has {sorted(settings['settings'])}")
    merged = yaml.safe_load((ROOT / "configs" / "rl_cpu_small.yaml").read_text()) | run_flags(settings, name)
    return {k: v for k, v in merged.items() if k not in NOT_COST}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("settings", nargs=2, help="two settings of settings.yaml")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--rollouts", type=int, default=320, help="rollouts per run (5 steps of 64)")
    args = ap.parse_args()
    settings = yaml.safe_load((HERE / "settings.yaml").read_text())
    work = ROOT / "runs" / "rl_learns" / "costs"
    work.mkdir(parents=True, exist_ok=True)
    paths = []
    for name in args.settings:
        paths.append((work / f"{name}.yaml").relative_to(ROOT))  # presets.py keys its record by this string
        atomic_write_text(ROOT / paths[-1], yaml.safe_dump(config(settings, name), sort_keys=False))
    filtered = {settings["settings"][n]["filtered"] for n in args.settings}
    if len(filtered) > 1:
        sys.exit("one setting trains on the filtered prompts, the other not: their costs are not measured together")
    data = [settings["filter"]["output"]] if filtered == {True} else settings["filter"]["datasets"]
    out = f"costs_{args.settings[0]}_{args.settings[1]}"
    cmd = [sys.executable, str(ROOT / "benchmarks" / "presets.py"), *map(str, paths), "--rounds", str(args.rounds)]
    cmd += ["--rollouts", str(args.rollouts), "--datasets", *data, "--output", out]
    subprocess.run(cmd, cwd=ROOT, check=True)
    med = json.loads((ROOT / "benchmarks" / "results" / f"{out}.json").read_text())["median_seconds_per_1k_rollouts"]
    costs_file = HERE / "results" / "costs.json"
    costs = json.loads(costs_file.read_text()) if costs_file.is_file() else {"pairs": []}
    costs["pairs"].append({name: med[str(p)] for name, p in zip(args.settings, paths)})
    atomic_write_json(costs_file, costs)
    print(json.dumps(costs))


if __name__ == "__main__":
    main()
