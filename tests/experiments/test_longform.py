import json

from tests.experiments import EXPERIMENTS, load_script

lf = load_script("longform", EXPERIMENTS / "verifyrm")
SUITE = EXPERIMENTS / "verifyrm" / "v4" / "latex_heldout.jsonl"
ROBUST = EXPERIMENTS / "verifyrm" / "v3" / "robustness.jsonl"


def _rows(path, n):
    return [json.loads(x) for x in path.read_text().splitlines()[:n]]


def test_a_long_row_ends_in_its_short_rows_answer_and_keeps_its_label():
    rows = _rows(SUITE, 300) + _rows(ROBUST, 300)
    long = lf.make_long(rows, "train", per_problem=2, seed=0)
    assert len(long) > 100 and {r["label"] for r in long} == {0, 1}
    short = {(r["question"], r["answer_type"], r["label"]): r for r in rows}
    for r in long:
        base = short[(r["question"], r["answer_type"].removeprefix("long:"), r["label"])]
        kept = (
            lf.answer_part(base["completion"])
            if base["answer_type"].startswith("latex")
            else base["completion"].strip().split("\n")[-1]
        )
        assert kept in r["completion"] and len(r["completion"]) > len(base["completion"])
        tail = r["completion"][r["completion"].rindex(kept) + len(kept) :]
        assert "\\boxed" not in tail and "$" not in tail  # nothing after the answer but an answer-free closing line
    assert lf.make_long(rows, "train", 2, 0) == long  # seeded


def test_the_check_bank_shares_no_sentence_with_the_training_bank():
    for kind, phrases in lf.BANKS["check"].items():
        assert not set(phrases) & set(lf.BANKS["train"][kind]) - {""}, kind
