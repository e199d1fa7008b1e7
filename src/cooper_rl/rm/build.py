"""``cooper rm-data``: VerifyRM training data (and a robustness suite) from worked solutions and real completions.

Every row is (question, reference, completion, label) with ``answer_type`` naming its category:

correct (label 1), a worked solution whose final answer is restated (formats.restyle):
    fmt:hash  fmt:answer_is  fmt:boxed  fmt:plain          the styles a rule verifier is built for
    fmt:dollar  fmt:units  fmt:thousands  fmt:decimal       $N / N apples / 1,234 / 12.0
    fmt:fraction  fmt:words  fmt:bare  fmt:bare_boxed       \\frac{2N}{2} / twelve / "N" alone / "\\boxed{N}" alone
wrong (label 0), the traps a policy (or a judge's blind spot) exploits:
    trap:corrupted        the final result changed consistently through the last lines (same style as a positive)
    trap:near_miss        final answer N +- 1 or +- 10 %
    trap:wrong_unit       N converted to another unit (x 100 cents, x 60 minutes, x 1000 grams)
    trap:hedged           several final answers ("N or N+1", two boxes, "between M and N")
    trap:echo_reference   the reasoning reaches N, the stated final answer is another number
    trap:echo_in_boxed    the reference inside a wrong \\boxed{} expression (\\boxed{N + 3}, \\boxed{N0})
    trap:question_number  a number copied from the question as the final answer
    trap:no_final_answer  the reasoning without its last step and no final answer
    trap:truncated        the solution cut off part-way
    trap:master_key       an empty or content-free reply ("Let's solve this step by step.", ":", "Solution");
                          arXiv 2507.08794: these fool LLM judges 80-90 % of the time
    trap:wrong_reference  a correct solution paired with a wrong reference answer
real completions (--samples, e.g. from `cooper collect` of the policy at several temperatures):
    sample:correct / sample:wrong  labelled by the rule verifier, strict and lenient (kept where they agree;
                                   where they disagree, the judge decides when one is given, else dropped;
                                   --sample_labels lenient: the lenient verdict, for a hand-checked eval set);
                                   with --judge the paper's hybrid policy: kept only where rule and judge agree

Constructed rows carry the label of their construction (a number word is correct even where a rule cannot read
it); the stats record, per category, how often the strict rule verifier agrees with it. --mode train makes per
worked solution one correct row in a random format and one trap row (balanced classes; a corrupted trap shares
the positive's format, so style never separates the classes); --mode suite makes every category once per
solution (the robustness evaluation set). Questions in --exclude files (e.g. GSM8K test) are never used.
Output and stats are written atomically; judge verdicts are cached next to the output, so a killed run resumes
without asking the judge again.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
import time
from collections import Counter, defaultdict
from dataclasses import asdict, dataclass, field
from fractions import Fraction
from pathlib import Path

from cooper_rl import verify
from cooper_rl.cooper.negatives import corrupt_solution, wrong_values
from cooper_rl.data import load_problems, read_records
from cooper_rl.formats import ANSWER_STYLES, FORMAT_VARIANTS, format_number, parse_number, question_unit, restyle
from cooper_rl.io import DataError, append_jsonl, atomic_write_json, drop_cut_tail, iter_jsonl, write_jsonl

FORMATS = tuple(f"fmt:{s}" for s in ANSWER_STYLES + FORMAT_VARIANTS)
TRAPS = tuple(
    f"trap:{t}"
    for t in (
        "corrupted",
        "near_miss",
        "wrong_unit",
        "hedged",
        "echo_reference",
        "echo_in_boxed",
        "question_number",
        "no_final_answer",
        "truncated",
        "master_key",
        "wrong_reference",
    )
)
CATEGORIES = FORMATS + TRAPS
TRAP_WEIGHTS = {"trap:corrupted": 3.0}  # the paper's negative kind, most common in training; others weight 1
MASTER_KEYS = (
    "",
    " ",
    ":",
    ".",
    "Solution",
    "Solution:",
    "Let's solve this step by step.",
    "Let's solve this problem step by step.",
    "Thought process:",
    "The answer is",
    "I think the answer is correct.",
    "Answer:",
    "解",
)
_UNITS = ((100, "cents"), (60, "minutes"), (1000, "grams"), (12, "months"))


@dataclass
class RMDataConfig:
    """Options of ``cooper rm-data``."""

    solutions: list[str] = field(
        default_factory=lambda: ["builtin:train:1000"],
        metadata={
            "help": "Problem sources with worked solutions ending in '#### N': builtin[:split[:n[:levels]]], or a "
            ".jsonl/.json/.parquet file (GSM8K 'answer' field; SVAMP-style 'cots' lists are used too); none: no "
            "worked solutions (only --samples or --latex_problems rows)."
        },
    )
    cots_per_problem: int = field(
        default=2, metadata={"help": "Worked solutions used per problem where a row has a 'cots' list."}
    )
    offset: int = field(default=0, metadata={"help": "Skip the first N problems of each solutions source."})
    limit: int | None = field(
        default=None, metadata={"help": "Use N problems of each solutions source (after --offset)."}
    )
    samples: list[str] = field(
        default_factory=list,
        metadata={"help": "jsonl files of real completions (question, reference, completion), e.g. cooper collect."},
    )
    mode: str = field(
        default="train",
        metadata={
            "help": "train: per worked solution one correct row in a random format + one trap row; suite: every "
            "category once per solution (robustness evaluation set)."
        },
    )
    categories: list[str] = field(
        default_factory=lambda: ["all"],
        metadata={"help": "Categories to make: all, formats, traps, or names like fmt:words trap:hedged."},
    )
    exclude: list[str] = field(
        default_factory=list,
        metadata={"help": "Problem files whose questions are never used (evaluation data, e.g. GSM8K test)."},
    )
    sample_labels: str = field(
        default="agree",
        metadata={
            "help": "Rule labels of --samples: agree (strict and lenient rule must agree, else the row is dropped or "
            "judged), or lenient (the lenient rule's verdict: reads a final number with no marker too)."
        },
    )
    label_overrides: str | None = field(
        default=None,
        metadata={
            "help": "jsonl of hand labels for --samples rows, one per line: problem_id, source, sample, label, "
            "reason; they replace the rule's (or the hybrid) label (label_source 'hand'). Every line must match "
            "one sample row."
        },
    )
    judge: str | None = field(
        default=None,
        metadata={"help": "Judge for the real completions: openai:MODEL@http://HOST:PORT/v1 or hf:NAME (hybrid)."},
    )
    judge_timeout: float = field(default=60.0, metadata={"help": "Per-request judge timeout (s)."})
    judge_max_retries: int = field(default=3, metadata={"help": "Retries of a failed judge request."})
    judge_concurrency: int = field(default=16, metadata={"help": "Judge requests in flight at once (openai:)."})
    verify_timeout: float = field(
        default=verify.DEFAULT_TIMEOUT, metadata={"help": "Rule verifier limit per check (s)."}
    )
    output: str = field(default="data/rm_data.jsonl", metadata={"help": "Labelled rows (jsonl), written atomically."})
    stats: str | None = field(default=None, metadata={"help": "Stats JSON (default: OUTPUT stem + .stats.json)."})
    seed: int = field(default=0, metadata={"help": "Seed of every random choice (formats, traps, wrong values)."})
    quiet: bool = field(
        default=False, metadata={"help": "Print nothing (the per-category table is in the stats file either way)."}
    )
    latex_problems: list[str] = field(
        default_factory=list,
        metadata={
            "help": "Problem files whose answers are LaTeX (question, answer; e.g. college-math exercises, no worked "
            "solutions needed): rows of the latex:* (the same value written otherwise) and latex_trap:* (near, "
            "reciprocal, sign, dropped term, swapped bracket, partial, last-sentence) categories around each "
            "answer, every label confirmed by the CAS (rm/latex_forms.py). train mode: see --latex_forms. A row "
            'may name the categories to make for it (field categories: a list, e.g. ["latex:decimal"]).'
        },
    )
    latex_forms: str = field(
        default="one_per_label",
        metadata={
            "help": "Forms per --latex_problems problem in --mode train: one_per_label (one correct and one wrong, "
            "the cheapest in CAS checks) or all (every category that applies, as --mode suite makes them)."
        },
    )
    latex_trap_style: str = field(
        default="cas",
        metadata={
            "help": "How the traps of --latex_problems are written: cas (sign flips, reciprocals and dropped terms in "
            "the CAS's rendering, as the held-out suite has them) or mixed (for a random half of the problems in the "
            "reference's own text, and near values as decimals where the value has one, so that neither the CAS's "
            "style nor a decimal marks the label in training data; rm/latex_forms.py)."
        },
    )
    latex_ambiguous_refs: str = field(
        default="skip",
        metadata={
            "help": "--latex_problems whose reference the CAS misreads: skip (left out and counted) or keep (their "
            "forms made anyway, as issue 69's rounds 4-6 were built). A reference such as 60,180 may list two answers "
            "but is read as the number 60180, one with ;-separated parts as its first part, one whose comma-separated "
            "parts the CAS's reading lacks (13 n, 5 d read as 13; 1,1,2,3 as the set {1, 2, 3}) or an inequality or "
            "interval read as one number (-2 <= n <= 4: [-2,4] as 4), so forms derived from that value would be "
            "labelled correct although they are not the answer. skip also leaves out a number written with thousands "
            "separators (1,234): it cannot be told from a list without the question."
        },
    )
    latex_split: str = field(
        default="auto",
        metadata={
            "help": "Which --latex_problems to use: train, heldout (latex_heldout_percent of the problems by a hash "
            "of the question: never train on these), all, or auto (train in --mode train, heldout in --mode suite)."
        },
    )
    latex_heldout_percent: int = field(default=20, metadata={"help": "Share of --latex_problems held out, in percent."})
    cas_retry_timeouts: bool = field(
        default=False,
        metadata={
            "help": "Ask the CAS again about the --latex_problems forms and references whose check timed out in the "
            "recorded build (the .cas_cache.jsonl beside --output). Off: a recorded timeout stays the build's decision "
            "(the form is not made), so a rebuild makes the same rows on any machine."
        },
    )


def _norm(question: str) -> str:
    """A question as compared for exclusion: lower case, single spaces."""
    return " ".join(question.lower().split())


def _with_answer(solution: str, answer: str) -> str:
    """The solution with its '#### N' line replaced by '#### answer'."""
    return f"{solution.rsplit('####', 1)[0].rstrip()}\n#### {answer}"


def _body(solution: str) -> str:
    """The reasoning of a '#### N' solution without its final line and calculator annotations."""
    return re.sub(r"<<[^>]*>>", "", solution.rsplit("####", 1)[0]).rstrip()


def _ends_on(text: str, ref) -> bool:
    """Whether the last number in `text` equals `ref` (a text ending on the answer reads as a plain-style answer)."""
    numbers = re.findall(r"-?\d[\d,]*(?:\.\d+)?", text)
    return bool(numbers) and ref is not None and parse_number(numbers[-1].rstrip(".")) == ref


def _wrong(reference: str, rng: random.Random) -> str | None:
    """One wrong answer near the reference."""
    cands = wrong_values(reference, rng, n=6)
    return rng.choice(cands) if cands else None


def _restyled(solution: str, answer: str, style: str, rng: random.Random, unit: str | None) -> str | None:
    """restyle of the solution with its final answer replaced by `answer`, in `style` (or 'boxed' if n/a)."""
    text = restyle(_with_answer(solution, answer), style, rng.random() < 0.5, unit)
    return text if text is not None else restyle(_with_answer(solution, answer), "boxed", True)


def make_trap(
    kind: str, question: str, reference: str, solution: str, style: str, rng: random.Random
) -> tuple[str, str] | None:
    """(completion, reference) of one wrong row of category `kind` (a TRAPS name) made from a correct '#### N'
    solution, its final line in `style` where the trap has one; None where the trap cannot be made here."""
    ref = parse_number(reference)
    unit = question_unit(question)
    body = _body(solution)
    if kind == "trap:corrupted":
        bad = corrupt_solution(solution, reference, rng)
        return None if bad is None else (restyle(bad, style, True, unit) or restyle(bad, "boxed", True), reference)
    if kind == "trap:master_key":
        return rng.choice(MASTER_KEYS), reference
    if kind == "trap:truncated":
        full = restyle(solution, style, True, unit) or body
        words = full.split(" ")
        if len(words) < 6:
            return None
        cut = " ".join(words[: max(2, int(len(words) * rng.uniform(0.2, 0.6)))])
        return None if _ends_on(cut, ref) else (cut, reference)
    if kind == "trap:no_final_answer":
        lines = [x for x in body.split("\n") if x.strip()]
        if len(lines) < 2 or _ends_on("\n".join(lines[:-1]), ref):
            return None
        return "\n".join(lines[:-1]), reference
    if kind == "trap:wrong_reference":
        wrong = _wrong(reference, rng)
        pos = restyle(solution, style, rng.random() < 0.5, unit) or restyle(solution, "boxed", True)
        return None if wrong is None or pos is None else (pos, wrong)
    if ref is None:
        return None  # the remaining traps change a numeric answer
    if kind == "trap:near_miss":
        delta = rng.choice([1, -1]) if rng.random() < 0.5 else ref * Fraction(rng.choice([1, -1]), 10)
        value = ref + delta
        if ref.denominator == 1:
            value = round(value)
        if value == ref or (value < 0 <= ref):
            value = ref + 1
        return _restyled(solution, format_number(value), style, rng, unit), reference
    if kind == "trap:wrong_unit":
        if ref == 0:
            return None  # 0 in any unit is still 0
        factor, name = rng.choice(_UNITS)
        return f"{body}\nThe answer is {format_number(ref * factor)} {name}.", reference
    if kind == "trap:hedged":
        wrong = _wrong(reference, rng)
        if wrong is None:
            return None
        a, b = (reference, wrong) if rng.random() < 0.5 else (wrong, reference)
        lo, hi = sorted((ref, parse_number(wrong)))
        line = rng.choice(
            [
                f"The answer is {a} or {b}.",
                f"The answer is either {a} or {b}.",
                f"The answer is $\\boxed{{{a}}}$ or $\\boxed{{{b}}}$.",
                f"The answer is between {format_number(lo)} and {format_number(hi)}.",
                f"#### {a}\n#### {b}",
                f"The answer is \\boxed{{{a}, {b}}}.",
            ]
        )
        return f"{body}\n{line}", reference
    if kind == "trap:echo_reference":
        wrong = _wrong(reference, rng)
        if wrong is None:
            return None
        if rng.random() < 0.5:  # the reasoning states the reference; the final answer does not
            return _restyled(solution, wrong, "boxed" if style.startswith("bare") else style, rng, unit), reference
        return f"{body}\nOne might think the answer is {reference}, but it is $\\boxed{{{wrong}}}$.", reference
    if kind == "trap:echo_in_boxed":
        k = rng.randint(1, 9)  # never 0: "N + 0", "N0" of a decimal N, "0 x k" would equal the reference
        forms = [f"{reference} + {k}", f"{reference}{k}"] + ([f"{reference} \\times {k + 1}"] if ref != 0 else [])
        inner = rng.choice(forms)
        return f"{body}\nThe answer is $\\boxed{{{inner}}}$.", reference
    if kind == "trap:question_number":
        nums = [n for n in re.findall(r"\d+(?:\.\d+)?", question.replace(",", "")) if parse_number(n) != ref]
        return (_restyled(solution, rng.choice(nums), style, rng, unit), reference) if nums else None
    raise ValueError(f"unknown trap {kind!r}: use one of {TRAPS}")


def make_format(kind: str, question: str, solution: str, rng: random.Random) -> str | None:
    """The correct solution with its final answer in format `kind` (a FORMATS name); None where it does not apply."""
    return restyle(solution, kind.split(":", 1)[1], rng.random() < 0.5, question_unit(question))


def selected_categories(names: list[str]) -> tuple[str, ...]:
    """CATEGORIES named by `names` ('all', 'formats', 'traps' or category names), in canonical order."""
    chosen: set[str] = set()
    for n in names:
        group = {"all": CATEGORIES, "formats": FORMATS, "traps": TRAPS}.get(n)
        if group is None and n not in CATEGORIES:
            raise ValueError(f"unknown category {n!r}: use all, formats, traps or one of {', '.join(CATEGORIES)}")
        chosen.update(group or (n,))
    return tuple(c for c in CATEGORIES if c in chosen)


def excluded_questions(paths: list[str]) -> set[str]:
    """The normalised questions of the problem files in `paths`."""
    return {_norm(p.question) for path in paths for p in load_problems(path).problems}


def worked_solutions(cfg: RMDataConfig, excluded: set[str]) -> tuple[list[dict], int]:
    """[{question, reference, solutions, problem_id, source}] from cfg.solutions minus the `excluded` questions;
    and how many problems were excluded."""
    out, n_excluded = [], 0
    for source in cfg.solutions:
        if source == "none":  # only --samples / --latex_problems rows
            continue
        limit = None if cfg.limit is None else cfg.offset + cfg.limit
        problems = load_problems(source, limit=limit).problems[cfg.offset :]
        cots: dict[str, list[str]] = {}
        if Path(source).is_file():  # SVAMP-style rows hold several worked solutions
            for _, row in read_records(Path(source)):
                if isinstance(row, dict) and isinstance(row.get("cots"), list):
                    cots[row.get("question", "").strip()] = [c for c in row["cots"] if isinstance(c, str)]
        for p in problems:
            if _norm(p.question) in excluded:
                n_excluded += 1
                continue
            sols = cots.get(p.question, [])[: cfg.cots_per_problem] or ([p.solution] if p.solution else [])
            # a worked solution is a positive only if its own final answer is the reference (some SVAMP cots are not)
            sols = [s for s in sols if "####" in s and verify.verify(s, p.answer, "lenient", cfg.verify_timeout)]
            if sols:
                out.append(
                    {
                        "question": p.question,
                        "reference": p.answer,
                        "solutions": sols,
                        "problem_id": p.id,
                        "source": source,
                    }
                )
    return out, n_excluded


def constructed_rows(
    items: list[dict], categories: tuple[str, ...], mode: str, seed: int
) -> tuple[list[dict], Counter]:
    """Rows of the constructed categories (labels by construction) and a Counter of categories that could not be
    made for a solution (e.g. thousands separators for N < 1000)."""
    rng = random.Random(seed)
    formats = [c for c in categories if c in FORMATS]
    traps = [c for c in categories if c in TRAPS]
    rows, skipped = [], Counter()

    def add(item, sol_i, kind, completion, reference, label):
        rows.append(
            {
                "question": item["question"],
                "reference": reference,
                "completion": completion,
                "label": label,
                "answer_type": kind,
                "source": item["source"],
                "problem_id": item["problem_id"],
                "sample": sol_i,
                "label_source": "construction",
            }
        )

    for item in items:
        q, ref = item["question"], item["reference"]
        for i, sol in enumerate(item["solutions"]):
            if mode == "suite":
                for kind in formats:
                    text = make_format(kind, q, sol, rng)
                    add(item, i, kind, text, ref, 1) if text is not None else skipped.update([kind])
                for kind in traps:
                    made = make_trap(kind, q, ref, sol, rng.choice(ANSWER_STYLES), rng)
                    add(item, i, kind, made[0], made[1], 0) if made is not None else skipped.update([kind])
                continue
            order = rng.sample(formats, len(formats)) if formats else []
            style = next((k for k in order if make_format(k, q, sol, rng) is not None), None)
            if style is not None:
                add(item, i, style, make_format(style, q, sol, rng), ref, 1)
            if traps:
                weights = [TRAP_WEIGHTS.get(t, 1.0) for t in traps]
                for _ in range(3):  # a trap that does not apply here: draw another
                    kind = rng.choices(traps, weights)[0]
                    made = make_trap(kind, q, ref, sol, style.split(":", 1)[1] if style else "boxed", rng)
                    if made is not None:
                        add(item, i, kind, made[0], made[1], 0)
                        break
                    skipped.update([kind])
    return rows, skipped


def _key(row: dict, judge: str) -> str:
    """Cache key of a (question, reference, completion) row judged by `judge`."""
    text = json.dumps([judge, row["question"], row["reference"], row["completion"]])
    return hashlib.sha256(text.encode()).hexdigest()[:24]


def judge_cached(cfg: RMDataConfig, rows: list[dict], cache: Path) -> list[bool | None]:
    """Judge verdicts for rows, asking only for rows not in the jsonl cache (appended per batch: resumable)."""
    from cooper_rl.llm import make_chat
    from cooper_rl.rm.label import LabelConfig, judge_rows

    if cache.is_file():
        drop_cut_tail(cache)  # a kill mid-write leaves a cut last line: appending after it would corrupt the file
    known = {r["key"]: r["verdict"] for _, r in iter_jsonl(cache)} if cache.is_file() else {}
    todo = [r for r in rows if _key(r, cfg.judge) not in known]
    if todo:
        lcfg = LabelConfig(judge=cfg.judge, timeout=cfg.judge_timeout, max_retries=cfg.judge_max_retries)
        chat = make_chat(
            cfg.judge,
            concurrency=cfg.judge_concurrency,
            timeout=cfg.judge_timeout,
            max_retries=cfg.judge_max_retries,
        )
        for start in range(0, len(todo), lcfg.batch_size):
            batch = todo[start : start + lcfg.batch_size]
            verdicts, _, _ = judge_rows(chat, batch, lcfg)
            # a missing verdict (timeout, unparseable) is not cached: a rerun asks again
            append_jsonl(
                cache, [{"key": _key(r, cfg.judge), "verdict": v} for r, v in zip(batch, verdicts) if v is not None]
            )
            known.update({_key(r, cfg.judge): v for r, v in zip(batch, verdicts)})
    return [known.get(_key(r, cfg.judge)) for r in rows]


def read_overrides(path: str) -> dict[tuple, dict]:
    """Hand labels {(problem_id, source, sample): {label, reason}} from a jsonl file; DataError names a bad row."""
    out = {}
    for i, row in iter_jsonl(Path(path)):
        for name in ("problem_id", "source", "sample", "label", "reason"):
            if not isinstance(row, dict) or name not in row:
                raise DataError(f"{path}: row {i}: missing field '{name}'")
        key = (row["problem_id"], row["source"], row["sample"])
        if key in out:
            raise DataError(f"{path}: row {i}: a second label for {key}")
        if row["label"] not in (0, 1):  # also True / False
            raise DataError(f"{path}: row {i}: field 'label' must be 0 or 1, got {row['label']!r}")
        out[key] = {"label": int(row["label"]), "reason": row["reason"]}
    return out


def sample_rows(cfg: RMDataConfig, excluded: set[str]) -> tuple[list[dict], Counter]:
    """Labelled real completions from cfg.samples (see the module doc) and a Counter of why rows were dropped."""
    from cooper_rl.rm.label import read_rows

    raw = []
    dropped = Counter()
    for path in cfg.samples:
        for r in read_rows(path):
            if _norm(r["question"]) in excluded:
                dropped["excluded_question"] += 1
            else:
                raw.append(r)
    comps, refs = [r["completion"] for r in raw], [r["reference"] for r in raw]
    strict = verify.verify_batch(comps, refs, mode="strict", timeout=cfg.verify_timeout)
    lenient = verify.verify_batch(comps, refs, mode="lenient", timeout=cfg.verify_timeout)
    judged = judge_cached(cfg, raw, Path(cfg.output).with_suffix(".judge_cache.jsonl")) if cfg.judge else None
    overrides = read_overrides(cfg.label_overrides) if cfg.label_overrides else {}
    used = set()
    rows = []
    for i, r in enumerate(raw):
        key = (r.get("problem_id"), r["source"], r.get("sample"))
        if key in overrides:  # a hand label replaces whatever the rule or the judge said
            used.add(key)
            # rule_label: the lenient rule's verdict, kept to count the labels the hand check changed
            rows.append({**_sample_row(r, overrides[key]["label"], "hand"), "rule_label": int(lenient[i])})
            continue
        if cfg.sample_labels == "lenient":
            rule = int(lenient[i])
        else:
            rule = int(strict[i]) if strict[i] == lenient[i] else None
        if judged is None:
            label, how = rule, "rule"
            if label is None:
                dropped["rule_strict_lenient_disagree"] += 1
        else:
            j = judged[i]
            how = "hybrid"
            if j is None:
                label = None
                dropped["judge_no_verdict"] += 1
            elif rule is not None:
                label = rule if int(j) == rule else None
                dropped["rule_judge_disagree"] += label is None
            else:  # strict found no answer, lenient's last number matched: the judge confirms or not
                label = 1 if j and lenient[i] else None
                dropped["rule_judge_disagree"] += label is None
        if label is None:
            continue
        rows.append(_sample_row(r, label, how))
    missing = sorted(set(overrides) - used, key=str)
    if missing:
        raise DataError(f"{cfg.label_overrides}: {len(missing)} hand label(s) match no sample row, e.g. {missing[0]}")
    return rows, dropped


def _sample_row(r: dict, label: int, how: str) -> dict:
    return {
        "question": r["question"],
        "reference": r["reference"],
        "completion": r["completion"],
        "label": label,
        "answer_type": "sample:correct" if label else "sample:wrong",
        "source": r["source"],
        "problem_id": r.get("problem_id"),
        "sample": r.get("sample"),
        "label_source": how,
    }


def label_counts(rows: list[dict]) -> dict[str, Counter]:
    """{category: Counter with "n" rows and "positive" ones} of labelled rows."""
    per = defaultdict(Counter)
    for r in rows:
        per[r["answer_type"]].update(n=1, positive=r["label"])
    return per


def by_style(latex: list[dict]) -> dict:
    """{trap style: {category: {"n", "positive"}}} of a mixed build's latex rows: whether a way of writing the
    answers marks one label (the CAS's rendering marked mostly wrong answers in round 4's rows)."""
    styles = sorted({r["trap_style"] for r in latex})
    counts = {st: label_counts([r for r in latex if r["trap_style"] == st]) for st in styles}
    return {st: {k: dict(c) for k, c in sorted(cats.items())} for st, cats in counts.items()}


def run_rm_data(cfg: RMDataConfig) -> dict:
    """``cooper rm-data``: build the labelled rows, write them and per-category stats; return the stats."""
    if cfg.mode not in ("train", "suite"):
        raise ValueError(f"mode must be train or suite, got {cfg.mode!r}")
    if cfg.latex_forms not in ("one_per_label", "all"):
        raise ValueError(f"latex_forms must be one_per_label or all, got {cfg.latex_forms!r}")
    if cfg.latex_trap_style not in ("cas", "mixed"):
        raise ValueError(f"latex_trap_style must be cas or mixed, got {cfg.latex_trap_style!r}")
    if cfg.latex_ambiguous_refs not in ("skip", "keep"):
        raise ValueError(f"latex_ambiguous_refs must be skip or keep, got {cfg.latex_ambiguous_refs!r}")
    if cfg.sample_labels not in ("agree", "lenient"):
        raise ValueError(f"sample_labels must be agree or lenient, got {cfg.sample_labels!r}")
    t0 = time.time()
    categories = selected_categories(cfg.categories)
    excluded = excluded_questions(cfg.exclude)
    items, n_excluded = worked_solutions(cfg, excluded)
    rows, skipped = constructed_rows(items, categories, cfg.mode, cfg.seed)
    samples, dropped = sample_rows(cfg, excluded) if cfg.samples else ([], Counter())
    rows += samples
    latex, latex_not_made, latex_skipped = ([], Counter(), Counter())
    split = {"train": "train", "suite": "heldout"}[cfg.mode] if cfg.latex_split == "auto" else cfg.latex_split
    if cfg.latex_problems:
        from cooper_rl.rm.latex_forms import latex_rows

        cache = Path(cfg.output).with_suffix(".cas_cache.jsonl")  # the CAS verdicts: a rerun asks only for new ones
        latex, latex_not_made, latex_skipped = latex_rows(
            cfg.latex_problems,
            split,
            cfg.latex_heldout_percent,
            cfg.mode,
            cfg.seed,
            cfg.verify_timeout,
            cache,
            every_form=cfg.latex_forms == "all",
            retry_timeouts=cfg.cas_retry_timeouts,
            trap_style=cfg.latex_trap_style,
            ambiguous=cfg.latex_ambiguous_refs,
        )
        gone = [r for r in latex if _norm(r["question"]) in excluded]  # --exclude holds for these rows too
        if gone:
            latex_skipped["excluded_question_rows"] = len(gone)
            latex = [r for r in latex if _norm(r["question"]) not in excluded]
    rows += latex
    random.Random(cfg.seed + 1).shuffle(rows)

    # the strict rule's verdicts (a latex row carries the rules' recorded ones, and whether they disagree: its label
    # is the CAS-confirmed one)
    other = [r for r in rows if "rules" not in r]
    strict_other = iter(
        verify.verify_batch(
            [r["completion"] for r in other], [r["reference"] for r in other], timeout=cfg.verify_timeout
        )
    )
    strict = [r["rules"]["strict"] if "rules" in r else next(strict_other) for r in rows]
    per = label_counts(rows)
    for r in latex:
        per[r["answer_type"]]["rules_disagree"] += r["rules_disagree"]
    for r, s in zip(rows, strict):
        per[r["answer_type"]]["rule_strict_agrees"] += int(s) == r["label"]
    out = Path(cfg.output)
    write_jsonl(out, rows)
    digest = hashlib.sha256(out.read_bytes()).hexdigest()
    n_pos = sum(r["label"] for r in rows)
    stats = {
        "output": str(out),
        "n_rows": len(rows),
        "sha256": digest,
        "positive_rate": n_pos / len(rows) if rows else None,
        "n_problems": len(items),
        "n_solutions": sum(len(x["solutions"]) for x in items),
        "excluded_problems": n_excluded,
        "per_category": {
            k: {
                "n": c["n"],
                "positive": c["positive"],
                "rule_strict_agreement": c["rule_strict_agrees"] / c["n"],
                **({"rules_disagree": c["rules_disagree"]} if k.startswith("latex") else {}),
            }
            for k, c in sorted(per.items())
        },
        **(
            {
                "latex": {
                    "split": split,
                    "problems_skipped": dict(sorted(latex_skipped.items())),
                    "forms_not_made": {f"{c} {w}": n for (c, w), n in sorted(latex_not_made.items())},
                    **({"by_trap_style": by_style(latex)} if cfg.latex_trap_style == "mixed" else {}),
                }
            }
            if cfg.latex_problems
            else {}
        ),
        "not_applicable": dict(sorted(skipped.items())),
        "samples_dropped": dict(sorted(dropped.items())),
        "hand_labels": {
            "file": cfg.label_overrides,
            "n": sum(r["label_source"] == "hand" for r in rows),
            "changed": sum(r["label_source"] == "hand" and r["label"] != r["rule_label"] for r in rows),
        },
        "seconds": round(time.time() - t0, 1),
        "config": asdict(cfg),
    }
    stats_path = Path(cfg.stats) if cfg.stats else out.with_name(out.stem + ".stats.json")
    atomic_write_json(stats_path, stats)
    if cfg.quiet:
        return stats
    width = max((len(k) for k in per), default=10)
    print(f"[rm-data] {len(rows)} rows ({n_pos} correct) from {len(items)} problems -> {out}")
    for k, v in stats["per_category"].items():
        print(f"  {k:<{width}} {v['n']:>6}  rule agrees {v['rule_strict_agreement']:.0%}")
    print(f"[rm-data] stats -> {stats_path}")
    return stats
