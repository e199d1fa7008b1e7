import json
import random

from tests.experiments import EXPERIMENTS, load_script

from cooper_rl.verify import verify

r8 = load_script("round8_data", EXPERIMENTS / "verifyrm" / "shipped")
ROBUST = EXPERIMENTS / "verifyrm" / "v3" / "robustness.jsonl"


def _row(completion, reference="126"):
    return {"question": "q?", "reference": reference, "completion": completion, "label": 1, "answer_type": "fmt:hash"}


def test_a_prefix_trap_cuts_the_final_answer_to_a_proper_prefix_and_is_wrong():
    rng = random.Random(0)
    t = r8.prefix_trap(_row("So 100 + 26 = 126 dollars.\n#### 126"), rng)
    assert t["label"] == 0 and t["answer_type"] == "trap:prefix"
    assert t["completion"].startswith("So 100 + 26 = 126 dollars.\n#### ")  # only the last line's answer changes
    assert t["completion"].rsplit(" ", 1)[-1] in ("12", "1")
    assert r8.prefix_trap(_row("#### 7", "7"), rng) is None  # one digit: no proper prefix
    assert r8.prefix_trap(_row("#### 1,260", "1260"), rng) is None  # not written as the reference
    assert r8.prefix_trap(_row("The answer is 1260.", "126"), rng) is None  # inside a longer number


def test_prefix_traps_of_the_suites_correct_rows_are_wrong_by_the_rule_verifier():
    rows = [json.loads(x) for x in ROBUST.read_text().splitlines()]
    rows = [r for r in rows if r["label"] == 1 and r["answer_type"].startswith("fmt:")][:300]
    rng = random.Random(1)
    traps = [t for r in rows if (t := r8.prefix_trap(r, rng))]
    assert len(traps) > 100
    assert not any(verify(t["completion"], t["reference"]) for t in traps)


def test_build_adds_the_rows_asked_for_and_is_seeded():
    rows = [json.loads(x) for x in ROBUST.read_text().splitlines()][:600]
    out, kinds = r8.build(rows, n_long=40, n_prefix=10, seed=0)
    assert len(out) == 600 + 40 + 10 and kinds == {"long": 40, "trap": 10}
    assert sum(r["answer_type"].startswith("long:") and r["label"] for r in out) == 20
    assert r8.build(rows, 40, 10, 0)[0] == out
