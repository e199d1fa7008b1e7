"""Verifier throughput and latency: GSM8K-style numeric answers and LaTeX answers, one process vs the sandbox
pool, and the time to give up on adversarial inputs.

  python benchmarks/verifier.py [--shared ../shared/data] [--repeats 5]

numeric  completions = GSM8K test solutions (answer after ####), references = their answers (and, for half,
         a wrong reference), or built-in solutions when ../shared is absent: all take the in-process fast path.
latex    MATH-style answers in \\boxed{} vs equivalent/non-equivalent LaTeX references: these go to
         Math-Verify in the sandbox server(s).
Per-check latency: verify() called one at a time (p50/p99). Throughput: verify_batch over the whole set with
workers=1 vs workers=2 (alternated, median of repeats). Adversarial: the 60 inputs of tests/test_verify.py,
wall time of each check (must stay below timeout + margin).
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parent.parent / "tests"))
from common import median, pct, write_result  # noqa: E402
from cooper_rl import verify  # noqa: E402

LATEX = [  # (boxed answer, reference, equivalent?)
    ("\\frac{\\sqrt{3}}{2}", "\\frac{\\sqrt3}{2}", True),
    ("\\frac{1}{2}", "0.5", True),
    ("x^2+2x+1", "(x+1)^2", True),
    ("(1, 2)", "(1,2)", True),
    ("\\pi/4", "\\frac{\\pi}{4}", True),
    ("2\\sqrt{2}", "\\sqrt{8}", True),
    ("\\{1,2,3\\}", "\\{3,2,1\\}", True),
    ("[0, 1)", "[0,1)", True),
    ("\\dfrac{3}{4}", "\\frac34", True),
    ("2^{10}", "1024", True),
    ("\\frac{\\sqrt{3}}{3}", "\\frac{1}{\\sqrt{3}}", True),
    ("x^2-1", "(x-1)(x+1)", True),
    ("\\frac{\\sqrt{2}}{2}", "\\frac{\\sqrt3}{2}", False),
    ("x^2+1", "(x+1)^2", False),
    ("(1, 3)", "(1,2)", False),
    ("\\pi/3", "\\frac{\\pi}{4}", False),
    ("3\\sqrt{2}", "\\sqrt{8}", False),
    ("\\{1,2\\}", "\\{3,2,1\\}", False),
]


def numeric_set(shared: Path, n: int = 1319) -> tuple[list[str], list[str]]:
    """(completions, references): GSM8K test solutions, or built-in ones when the shared data is absent."""
    rng = random.Random(0)
    path = shared / "gsm8k" / "test.jsonl"
    if path.is_file():
        from cooper_rl.data import load_problems

        probs = load_problems(str(path)).problems[:n]
    else:
        from cooper_rl.tasks import generate_problems

        probs = generate_problems(n, split="test")
    comps = [p.solution for p in probs]
    refs = [p.answer if rng.random() < 0.5 else str(int(float(p.answer.replace(",", ""))) + 1) for p in probs]
    return comps, refs


def latex_set(reps: int = 10) -> tuple[list[str], list[str], list[bool]]:
    """(completions, references, expected) from LATEX, repeated."""
    comps = [f"Thus the answer is $\\boxed{{{a}}}$." for a, _, _ in LATEX] * reps
    refs = [r for _, r, _ in LATEX] * reps
    return comps, refs, [e for *_, e in LATEX] * reps


def latencies(comps, refs, timeout) -> list[float]:
    """Seconds per single verify() call."""
    out = []
    for c, r in zip(comps, refs):
        t = time.perf_counter()
        verify.verify(c, r, "strict", timeout)
        out.append(time.perf_counter() - t)
    return out


def throughput(comps, refs, workers, timeout) -> float:
    """Checks per second of one verify_batch call."""
    t = time.perf_counter()
    verify.verify_batch(comps, refs, "strict", timeout, workers=workers)
    return len(comps) / (time.perf_counter() - t)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shared", default=str(Path(__file__).parent.parent.parent / "shared" / "data"))
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--timeout", type=float, default=verify.DEFAULT_TIMEOUT)
    args = ap.parse_args()
    verify.verify_batch(["\\boxed{x^2}"], ["x^2"], workers=2)  # start both sandbox servers (once per process)

    result = {"timeout_s": args.timeout, "repeats": args.repeats, "sets": {}}
    lat_comps, lat_refs, expected = latex_set()
    got = verify.verify_batch(lat_comps, lat_refs)
    assert got == expected, [(c, r) for c, r, g, e in zip(lat_comps, lat_refs, got, expected) if g != e][:5]
    for name, (comps, refs) in {"numeric": numeric_set(Path(args.shared)), "latex": (lat_comps, lat_refs)}.items():
        lat = latencies(comps, refs, args.timeout)
        tp = {1: [], 2: []}
        for _ in range(args.repeats):  # alternate the configurations
            for w in (1, 2):
                tp[w].append(throughput(comps, refs, w, args.timeout))
        result["sets"][name] = {
            "n": len(comps),
            "latency_p50_ms": 1e3 * pct(lat, 50),
            "latency_p99_ms": 1e3 * pct(lat, 99),
            "latency_max_ms": 1e3 * max(lat),
            "checks_per_s_workers1": median(tp[1]),
            "checks_per_s_workers2": median(tp[2]),
            "pool_speedup": median([b / a for a, b in zip(tp[1], tp[2])]),
        }
        print(name, result["sets"][name])
    from test_verify import ADVERSARIAL

    adv = latencies([c for c, _ in ADVERSARIAL], [r for _, r in ADVERSARIAL], args.timeout)
    result["adversarial"] = {
        "n": len(adv),
        "p50_ms": 1e3 * pct(adv, 50),
        "p99_ms": 1e3 * pct(adv, 99),
        "max_s": max(adv),
        "bounded_by_timeout": max(adv) <= args.timeout + verify.REPLY_GRACE + 0.5,
    }
    print("adversarial", result["adversarial"])
    result["targets"] = {
        "numeric >= 1000 checks/s": {
            "measured": result["sets"]["numeric"]["checks_per_s_workers1"],
            "met": result["sets"]["numeric"]["checks_per_s_workers1"] >= 1000,
        },
        "p99 bounded by timeout": {"measured_max_s": max(adv), "met": result["adversarial"]["bounded_by_timeout"]},
    }
    write_result("verifier", result)


if __name__ == "__main__":
    main()
