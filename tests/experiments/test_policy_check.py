"""experiments/verifyrm/shipped/policy_check.py: its committed rows are what the script draws from the committed
evaluation samples, and the hand spot-check names rows of them with the rule's labels."""

import json

from tests.experiments import EXPERIMENTS, load_script

check = load_script("policy_check", EXPERIMENTS / "verifyrm" / "shipped")


def test_the_committed_policy_samples_are_the_scripts_draw():
    committed = [json.loads(x) for x in (check.HERE / "policy_samples.jsonl").read_text().splitlines()]
    assert check.policy_samples() == committed
    by = {}
    for r in committed:  # per set and label at most PER_LABEL, each (question, completion) once
        by.setdefault(r["answer_type"], set()).add((r["question"], r["completion"]))
    assert set(by) == {f"{s}: {k}" for s in check.SETS.values() for k in ("correct", "wrong")}
    assert all(len(v) <= check.PER_LABEL for v in by.values()) and sum(map(len, by.values())) == len(committed)


def test_the_hand_spot_check_reads_rows_of_the_file():
    rows = [json.loads(x) for x in (check.HERE / "policy_samples.jsonl").read_text().splitlines()]
    marks = [json.loads(x) for x in check.HAND.read_text().splitlines()]
    assert len(marks) == len({m["row"] for m in marks}) >= 40
    for m in marks:
        assert rows[m["row"]]["answer_type"].startswith(m["set"]) and m["note"]
