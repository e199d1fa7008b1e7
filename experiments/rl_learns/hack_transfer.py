"""Would the co-optimized RMs pay for the static RM's hack, and do they still verify text from outside their run?
(predictions.md, exploratory, 2026-12-05; issue 106 §2's "also measured")

  python experiments/rl_learns/hack_transfer.py     # ~15 min per RM on 2 cores; resumable (one eval-rm per RM and set)

The rollouts of every finished `model` seed's last quarter of steps (the static weaker RM's hack: long completions,
most without a final answer), labelled by the strict rule's verdict, are scored by `cooper eval-rm` with the weaker
RM as every run starts from it, with the shipped RM (`verifyrm`) once a run from it has finished (predictions.md,
2026-12-07), and with each co-optimized RM at its run's end: a full model where this machine holds it
(runs/rl_learns/<run>/rm; not committed), an adapter from its committed copy (results/runs/<run>/rm) where this
machine does not. Each RM also scores the shipped RM's suites (SUITES: integer answers in many forms and traps; LaTeX answers). Writes results/hack_transfer.json
(per RM: the share of rule-wrong rollouts it accepts, by whether the rule reads an answer, its AUROC, and per suite
its accuracy, wrong rows accepted, right rows rejected and AUROC) and each RM's per-row scores of the rollouts beside
it (results/hack_transfer/<rm>.scores.jsonl.gz). An RM scored before that this machine no longer holds (a replaced
machine) keeps its committed entry, marked `held_here: false`, with the sha256 of the rollouts it scored.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import yaml

from cooper_rl.io import atomic_write_json, file_sha256, read_jsonl, weights_sha256, write_jsonl
from cooper_rl.rm.data import load_rm_rows

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(HERE))
from rundirs import SEEDS, finished_run, name_seed  # noqa: E402
from runlogs import answer_kind  # noqa: E402

RESULTS = HERE / "results"
# the RMs predictions.md's prediction names (with the weaker RM at its start); any other this machine holds is scored
# too, marked outside the prediction
PREDICTED = ("cooper_paper-s1", "cooper_paper_noscale-s1", "cooper_ref_bin-s1")
# predictions.md, "Co-optimizing the shipped RM" (2026-12-07): the runs from the shipped RM, with it at their start
PREDICTED_SHIPPED = ("cooper_paper_shipped-s0", "cooper_recal_shipped-s0", "cooper_rehearsal_shipped-s0")
WORK = ROOT / "runs" / "rl_learns" / "hack_transfer"
SUITES = {  # the shipped RM's suites (docs/VERIFYRM.md), text none of the runs trained or were evaluated on
    "robustness": ROOT / "experiments" / "verifyrm" / "v3" / "robustness.jsonl",
    "latex": ROOT / "experiments" / "verifyrm" / "v4" / "latex_heldout.jsonl",
}


def hacked_rollouts() -> list[dict]:
    """Every finished `model` seed's rollouts of its last quarter of steps, as eval-rm rows (label: the strict rule's
    verdict; answer_type: rule-right, or rule-wrong with or without a final answer the rule reads)."""
    rows = []
    for d in sorted((RESULTS / "runs").glob("model-s*")):
        if name_seed(d.name)[1] not in SEEDS:  # the prediction's set: seeds added for the headline do not change it
            continue
        cfg = json.loads((d / "rl_config.json").read_text())
        if not finished_run(d):
            continue
        first = cfg["max_steps"] - cfg["max_steps"] // 4  # 50 steps: 38-50, as predictions.md has it
        for r in read_jsonl(d / "rollouts.jsonl.gz"):
            if r["step"] < first:
                continue
            kind = "rule-right" if r["verdict"] else f"rule-wrong, {answer_kind(r['completion'])}"
            rows.append(
                {
                    "question": r["question"],
                    "reference": r["reference"],
                    "completion": r["completion"],
                    "label": int(r["verdict"]),
                    "answer_type": kind,
                    "run": d.name,
                    "step": r["step"],
                    "training_reward": r["reward"],
                }
            )
    if not rows:
        raise SystemExit(f"no finished model-s* run with rollouts in {RESULTS / 'runs'}")
    return rows


def rms(settings: dict) -> dict[str, Path]:
    """{name: RM dir}: the weaker RM every `model` and Cooper run starts from, then each co-optimized RM at its
    finished run's end that this machine holds; the shipped RM at the start when a run from it has finished."""
    out = {"weak (start)": ROOT / settings["rms"]["weak"]["path"]}
    ends = {}
    for cond, c in settings["conditions"].items():
        if c["flags"].get("reward") != "cooper":
            continue
        for d in sorted((ROOT / "runs" / "rl_learns").glob(f"{cond}-s*")):
            if (d / "rm" / "cooper_rm.json").is_file() and finished_run(d):
                ends[f"{d.name} (end)"] = (d / "rm", c["rm"])
        for d in sorted((RESULTS / "runs").glob(f"{cond}-s*")):  # an adapter RM committed beside its run's logs
            if f"{d.name} (end)" not in ends and (d / "rm" / "cooper_rm.json").is_file() and finished_run(d):
                ends[f"{d.name} (end)"] = (d / "rm", c["rm"])
    if any(kind == "shipped" for _, kind in ends.values()):
        path, record = ROOT / settings["rms"]["shipped"]["path"], RESULTS / "rms.json"
        ran = json.loads(record.read_text()).get("shipped", {}).get("sha256") if record.is_file() else None
        if ran and weights_sha256(path) != ran:  # e.g. a new shipped RM since: not the start of these runs
            raise SystemExit(f"{path} is not the shipped RM the runs started from ({ran[:12]}..., {record})")
        out["shipped (start)"] = path
    return out | {name: rm for name, (rm, _) in ends.items()}


def score(name: str, rm: Path, data: Path) -> dict:
    """`cooper eval-rm`'s report for `rm` on `data`, run once (kept in WORK; a report on another data file or RM
    is redone)."""
    tag = name.split()[0]
    out, per_row = WORK / f"{tag}.json", WORK / f"{tag}.scores.jsonl.gz"
    offset = json.loads((rm / "cooper_rm.json").read_text()).get("logit_offset", 0.0)  # a recalibrated threshold
    want = {"data_sha256": file_sha256(data), "rm_sha256": weights_sha256(rm), "rm_offset": offset}  # full or adapter
    if out.is_file() and per_row.is_file():
        report = json.loads(out.read_text())
        if all(report.get(k, 0.0 if k == "rm_offset" else None) == v for k, v in want.items()):  # (older: no offset)
            return report
    cmd = [sys.executable, "-m", "cooper_rl.cli", "eval-rm", "--rm", str(rm), "--data", str(data)]
    cmd += ["--output", str(out), "--scores", str(per_row), "--device", "cpu", "--batch_size", "16"]
    subprocess.run(cmd, check=True, cwd=ROOT)
    report = json.loads(out.read_text()) | {"rm_sha256": want["rm_sha256"], "rm_offset": offset}
    atomic_write_json(out, report)
    return report


def suite_entry(name: str, rm: Path, suite: str, path: Path) -> dict:
    """The RM on one of SUITES: accuracy, wrong rows accepted, right rows rejected (%, at 0.5) and AUROC."""
    tag = f"{name.split()[0]}.{suite}"
    report = score(tag, rm, path)
    labels = [r["label"] for r in load_rm_rows(str(path))]
    probs = [x["rm"] for x in read_jsonl(WORK / f"{tag}.scores.jsonl.gz")]
    wrong = [p for p, y in zip(probs, labels, strict=True) if not y]
    right = [p for p, y in zip(probs, labels, strict=True) if y]
    return {
        "rows": len(labels),
        "accuracy": 100 * report["judges"]["rm"]["accuracy"],
        "wrong_accepted": 100 * sum(p >= 0.5 for p in wrong) / len(wrong),
        "right_rejected": 100 * sum(p < 0.5 for p in right) / len(right),
        "auroc": report["judges"]["rm"]["auroc"],
        "data_sha256": report["data_sha256"],
    }


def main():
    settings = yaml.safe_load((HERE / "settings.yaml").read_text())
    WORK.mkdir(parents=True, exist_ok=True)
    rows = hacked_rollouts()
    data = WORK / "rollouts.jsonl"
    write_jsonl(data, rows)
    summary = {
        "what": "the last quarter of every finished `model` seed's rollouts scored by the weaker RM at its start, the "
        "shipped RM where runs started from it, and each co-optimized RM at its run's end (predictions.md, 2026-12-05 "
        "and 2026-12-07)",
        "runs": sorted({r["run"] for r in rows}),
        "rollouts": {k: sum(r["answer_type"] == k for r in rows) for k in sorted({r["answer_type"] for r in rows})},
        "rms": {},
    }
    (RESULTS / "hack_transfer").mkdir(exist_ok=True)
    committed = RESULTS / "hack_transfer.json"
    before = json.loads(committed.read_text())["rms"] if committed.is_file() else {}
    rollouts_sha256 = file_sha256(data)
    for name, rm in rms(settings).items():
        report = score(name, rm, data)
        probs = [x["rm"] for x in read_jsonl(WORK / f"{name.split()[0]}.scores.jsonl.gz")]
        wrong = [(p, r["answer_type"]) for p, r in zip(probs, rows, strict=True) if not r["label"]]
        right = [p for p, r in zip(probs, rows, strict=True) if r["label"]]
        entry = {
            "rm": str(rm.relative_to(ROOT)),
            "rm_sha256": report["rm_sha256"],
            "in_prediction": name.endswith("(start)") or name.split()[0] in PREDICTED + PREDICTED_SHIPPED,
            "wrong_accepted": 100 * sum(p >= 0.5 for p, _ in wrong) / len(wrong),
            "wrong_accepted_by_kind": {
                k: 100 * sum(p >= 0.5 for p, t in wrong if t == k) / n
                for k, n in summary["rollouts"].items()
                if k != "rule-right"
            },
            "wrong_accepted_by_run": {
                run: 100
                * sum(p >= 0.5 for p, r in zip(probs, rows, strict=True) if r["run"] == run and not r["label"])
                / sum(r["run"] == run and not r["label"] for r in rows)
                for run in summary["runs"]
            },
            "right_accepted": 100 * sum(p >= 0.5 for p in right) / len(right) if right else None,
            "mean_score_wrong": sum(p for p, _ in wrong) / len(wrong),
            "auroc": report["judges"]["rm"]["auroc"],  # rule-right against rule-wrong rollouts
            "rollouts_sha256": rollouts_sha256,
            "held_here": True,
            "suites": {suite: suite_entry(name, rm, suite, path) for suite, path in SUITES.items()},
        }
        if name.startswith("weak"):  # the same RM paid these rewards in training: the rescoring must agree
            diff = {
                run: max(abs(p - r["training_reward"]) for p, r in zip(probs, rows) if r["run"] == run)
                for run in summary["runs"]
            }
            entry["max_abs_diff_to_training_reward"] = diff  # by run: s0 trained with the other build of this RM
            print(f"weak RM rescored against its training rewards, max |difference| by run: {diff}")
        summary["rms"][name] = entry
        kept = [
            {"run": r["run"], "step": r["step"], "label": r["label"], "rm": p} for p, r in zip(probs, rows, strict=True)
        ]
        write_jsonl(RESULTS / "hack_transfer" / f"{name.split()[0]}.scores.jsonl.gz", kept)
    for name, e in before.items():  # scored on an earlier machine: its entry stays, marked
        if name not in summary["rms"] and not name.endswith("(start)"):
            summary["rms"][name] = e | {"held_here": False}
    atomic_write_json(committed, summary)
    for name, e in summary["rms"].items():
        kinds = ", ".join(f"{k}: {v:.1f}" for k, v in e["wrong_accepted_by_kind"].items())
        mark = "" if e["in_prediction"] else " (outside the prediction)"
        print(f"{name:32s}{mark} accepts {e['wrong_accepted']:5.1f} % of rule-wrong ({kinds}); AUROC {e['auroc']:.3f}")
        for suite, x in (e.get("suites") or {}).items():
            print(f"{'':32s}{suite}: accuracy {x['accuracy']:.1f}, wrong accepted {x['wrong_accepted']:.1f}, "
                  f"right rejected {x['right_rejected']:.1f}, AUROC {x['auroc']:.3f}")  # fmt: skip


if __name__ == "__main__":
    main()
