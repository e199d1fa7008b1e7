"""Issue 67 §6: the hacking monitor retuned on the committed runs, by the rule predictions.md fixed before the
comparison's remaining runs ("Retuning the monitor"), and both monitors' record on the runs that finish later.

  python experiments/rl_learns/monitor_retune.py    # writes results/monitor_retune.json and results/monitor_retune.md

Tuning runs: every committed run of issue 15 (experiments/reward_hacking/results/runs) and the runs of this
experiment listed in TUNING (its finished runs when this script was committed). Test runs: this experiment's runs that
finished since. Every run is replayed (`cooper_rl.cooper.monitor`) from its logs with the frozen thresholds
(monitor.yaml) and with each setting of GRID (the rest as frozen).
  collapsed   the last evaluation's held-out mean (over the evaluation sets) >= COLLAPSE points below step 0
  in time     the first flag at or before the first evaluation that far below step 0
"""

from __future__ import annotations

import itertools
import logging
import sys
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE))
from rundirs import collapse, finished_run, heldout_means  # noqa: E402

from cooper_rl.cooper.monitor import HackingMonitor, logged_signals  # noqa: E402
from cooper_rl.io import atomic_write_json, atomic_write_text, read_jsonl  # noqa: E402

OFF = float("inf")
ISSUE15 = ROOT / "experiments/reward_hacking/results/runs"
OWN = HERE / "results/runs"
# this experiment's finished runs when the script was committed (predictions.md: the tuning runs)
TUNING = [
    "b32_g8-s0",
    "b64-s0",
    "b64_beta0-s0",
    "b64_drgrpo-s0",
    "b64_g16-s0",
    "b64_long-s0",
    "b64_lr3e-5-s0",
    "b64_lr3e-6-s0",
    "b64_t07-s0",
    "b64_t07-s1",
    "b64_t07-s2",
    "b64_unfiltered-s0",
    "cooper_paper-s0",
    "cooper_paper_noscale-s0",
    "cooper_ref_bin-s0",
    "i15_filter-s0",
    "model-s0",
    "model_strong-s0",
    "model_strong-s1",
]
# monitor parameter -> the values tried (predictions.md); the first is the frozen one
GRID = {
    "window": (6, 12),
    "wrong_reward_rise": (0.05, 0.1, 0.15, OFF),
    "entropy_ratio": (0.5, 0.3, 0.0),  # 0: off (entropy is never <= 0)
    "acc_fall": (0.15, 0.25),
    "fooled_rise": (0.2, 0.4),
}


def frozen() -> dict:
    """The thresholds every run of this experiment logs with (monitor.yaml), as HackingMonitor parameters."""
    cfg = yaml.safe_load((HERE / "monitor.yaml").read_text())
    return {k.removeprefix("monitor_"): v for k, v in cfg.items()}


def heldout(run: Path) -> dict[int, float]:
    """{step: held-out mean over the evaluation sets, %} of a run's committed evaluations."""
    return heldout_means(read_jsonl(run / "evals.jsonl", missing_ok=True))


def flags(calls: list[dict], params: dict) -> list[int]:
    """The steps a monitor with these parameters flags, replaying a run's logged reward calls (as monitor.replay)."""
    m = HackingMonitor(**params)
    out = []
    for c in calls:
        if m.update(**{k: v for k, v in c.items() if k != "step"}, step=c["step"]):
            out.append(c["step"])
    return out


def record(runs: dict, params: dict) -> dict:
    """One setting over a set of runs: collapsed runs flagged in time, non-collapsed runs flagged, their flagged calls,
    recall (collapses flagged in time / collapses) and precision (flagged runs that collapsed / flagged runs), and
    per run the first flag."""
    first, caught, false_runs, false_calls = {}, [], [], 0
    for name, r in runs.items():
        f = flags(r["calls"], params)
        first[name] = f[0] if f else None
        if r["collapsed"]:
            bad = r["first_bad_eval"]
            if f and bad is not None and f[0] <= bad:
                caught.append(name)
        elif f:
            false_runs.append(name)
            false_calls += len(f)
    collapsed = [n for n, r in runs.items() if r["collapsed"]]
    flagged_collapsed = sum(first[n] is not None for n in collapsed)  # at any step, in time or not
    return {
        "collapsed": len(collapsed),
        "in_time": len(caught),
        "recall": len(caught) / len(collapsed) if collapsed else None,  # collapses flagged in time / collapses
        "precision": (  # flagged runs that collapsed / flagged runs
            flagged_collapsed / (flagged_collapsed + len(false_runs)) if flagged_collapsed + len(false_runs) else None
        ),
        "missed": sorted(set(collapsed) - set(caught)),
        "not_collapsed": len(runs) - len(collapsed),
        "false_flagged": len(false_runs),
        "false_runs": sorted(false_runs),
        "false_calls": false_calls,
        "first_flag": first,
    }


def load(dirs: list[Path], skipped: list[str]) -> dict:
    """{run name (issue 15's prefixed 'i15:'): {calls, collapsed, first_bad_eval}}; a run without a step-0 evaluation
    and a later one cannot be judged: it is left out and its name appended to `skipped`."""
    out = {}
    for d in dirs:
        name = f"i15:{d.name}" if d.parent == ISSUE15 else d.name
        ev = heldout(d)
        if 0 not in ev or len(ev) < 2:
            skipped.append(name)
            continue
        out[name] = {"calls": logged_signals(d), **collapse(ev)}
    return out


def choose(settings: list[dict]) -> dict | None:
    """predictions.md's rule: among the settings whose record on the tuning runs misses no collapse, the fewest
    non-collapsed runs flagged, then the fewest of their reward calls flagged, then the fewest thresholds changed;
    a tie beyond that goes to the earlier setting in GRID's order (not pre-registered). None if every setting misses
    a collapse."""
    return min((s for s in settings if not s["tuning"]["missed"]), key=_key, default=None)


def main() -> None:
    logging.getLogger("cooper_rl.cooper.monitor").setLevel(logging.ERROR)  # the replay's per-flag warnings
    issue15 = sorted(ISSUE15.glob("*-s*"))  # a run load() cannot judge is named in skipped_runs
    own = sorted(d for d in OWN.glob("*-s*") if (d / "rl_config.json").is_file() and finished_run(d))
    skipped: list[str] = []
    tuning = load(issue15 + [d for d in own if d.name in TUNING], skipped)
    test = load([d for d in own if d.name not in TUNING], skipped)
    base = frozen()
    settings = []
    for values in itertools.product(*GRID.values()):
        change = {k: v for k, v in zip(GRID, values) if v != base[k]}
        settings.append({"change": change, "tuning": record(tuning, base | change)})
    pick = choose(settings)
    ok = sorted((s for s in settings if not s["tuning"]["missed"]), key=_key)  # the report's best few
    frozen_rec = next(s for s in settings if not s["change"])
    chosen = base | (pick["change"] if pick else {})
    result = {
        "frozen": base,
        "grid": {k: [_off(k, v) for v in vs] for k, vs in GRID.items()},
        "tuning_runs": sorted(tuning),
        "test_runs": sorted(test),
        "frozen_on_tuning": frozen_rec["tuning"],
        "pick": {"change": _named(pick["change"]), "tuning": pick["tuning"]} if pick else None,
        "settings_keeping_every_collapse": len(ok),
        "settings": len(settings),
        "skipped_runs": skipped,
        # every setting's record on the tuning runs (without the per-run first flags)
        "grid_records": [
            {"change": _named(x["change"]), **{k: v for k, v in x["tuning"].items() if k != "first_flag"}}
            for x in settings
        ],
        "test": {"frozen": record(test, base), "retuned": record(test, chosen)} if test else None,
    }
    atomic_write_json(HERE / "results/monitor_retune.json", _jsonable(result))
    md = markdown(result, ok[:8])
    atomic_write_text(HERE / "results/monitor_retune.md", md)
    print(md)


def _jsonable(x):
    """inf (a check switched off) as the string 'off', for JSON."""
    if isinstance(x, dict):
        return {k: _jsonable(v) for k, v in x.items()}
    if isinstance(x, list):
        return [_jsonable(v) for v in x]
    return "off" if x == OFF else x


def _key(s: dict) -> tuple:
    """choose's order: non-collapsed runs flagged, their flagged calls, thresholds changed."""
    t = s["tuning"]
    return t["false_flagged"], t["false_calls"], len(s["change"])


def _off(k: str, v):
    """A threshold as the report names it: 'off' for a check switched off (inf; an entropy ratio of 0, since the
    entropy is never <= 0)."""
    return "off" if v == OFF or (k == "entropy_ratio" and v == 0.0) else v


def _named(c: dict) -> dict:
    return {k: _off(k, v) for k, v in c.items()}


def _change(c: dict) -> str:
    return ", ".join(f"{k} {_off(k, v)}" for k, v in c.items()) or "frozen"


def _ratio(x: float | None) -> str:
    return "-" if x is None else f"{x:.2f}"


def markdown(r: dict, best: list[dict]) -> str:
    """The report: the frozen and the best settings on the tuning runs, the pick, both on the test runs."""
    f = r["frozen_on_tuning"]
    lines = [
        "# The monitor retuned (issue 67 §6; the rule: predictions.md, 'Retuning the monitor')",
        "",
        f"Tuning runs: {len(r['tuning_runs'])} (issue 15's and this experiment's finished at the script's commit); "
        f"{f['collapsed']} collapsed. Grid: {r['settings']} settings "
        f"({', '.join(f'{k} {v}' for k, v in r['grid'].items())}); {r['settings_keeping_every_collapse']} flag every "
        "collapsed tuning run in time.",
        "",
        "| setting | collapsed runs flagged in time | runs not collapsed flagged | their flagged calls |",
        "|---|---|---|---|",
        f"| frozen (monitor.yaml) | {f['in_time']} of {f['collapsed']} | {f['false_flagged']} of {f['not_collapsed']} "
        f"| {f['false_calls']} |",
    ]
    for s in best:
        t = s["tuning"]
        lines.append(
            f"| {_change(s['change'])} | {t['in_time']} of {t['collapsed']} | {t['false_flagged']} of "
            f"{t['not_collapsed']} | {t['false_calls']} |"
        )
    p = r["pick"]
    lines += ["", f"**Pick**: {_change(p['change']) if p else 'none keeps every collapse in time: frozen stays'}."]
    tied = [s for s in best if p and s is not best[0] and _key(s) == _key(best[0])]
    if tied:
        lines.append(
            f"Tied with it on every pre-registered key: {'; '.join(_change(s['change']) for s in tied)} (the grid's order "
            "broke the tie; the rule did not)."
        )
    if r["skipped_runs"]:
        lines.append(f"Left out (no step-0 evaluation and a later one): {', '.join(r['skipped_runs'])}.")
    if p:
        lines.append(f"Runs it still flags that did not collapse: {', '.join(p['tuning']['false_runs']) or 'none'}.")
    lines += ["", "## Test runs (finished after the script's commit)", ""]
    if not r["test"]:
        lines.append("None yet.")
    else:
        lines += [
            "| monitor | collapsed runs flagged in time | runs not collapsed flagged | recall | precision |",
            "|---|---|---|---|---|",
        ]
        for k in ("frozen", "retuned"):
            t = r["test"][k]
            lines.append(
                f"| {k} | {t['in_time']} of {t['collapsed']} | {t['false_flagged']} of {t['not_collapsed']} | "
                f"{_ratio(t['recall'])} | {_ratio(t['precision'])} |"
            )
        lines.append(
            "\nRecall: collapses flagged in time / collapses; precision: flagged runs that collapsed / flagged runs."
        )
        lines += ["", f"Test runs: {', '.join(r['test_runs'])}."]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
