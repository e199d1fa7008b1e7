import json
import sys

from tests.experiments import EXPERIMENTS, load_script

ru = load_script("reverify_units", EXPERIMENTS / "verifyrm")


def test_only_verdicts_on_misread_references_are_asked_again_and_appended(tmp_path, monkeypatch):
    ref = "y=\\frac{2}{3} \\cos 16 t-\\frac{1}{4} \\sin 16 t \\mathrm{ft}"  # read as ... sin 16 with the stripping
    misread_form = "y = \\frac{2 \\cos{\\left(16 t \\right)}}{3} - \\frac{\\sin{\\left(16 \\right)}}{4}"
    lines = [
        {"key": json.dumps([misread_form, ref]), "verdict": True},  # recorded by the old reading: wrong
        {"key": json.dumps(["y=\\dfrac{2}{3} \\cos 16 t-\\dfrac{1}{4} \\sin 16 t \\mathrm{ft}", ref]), "verdict": True},
        {"key": json.dumps(["0.5", "\\frac{1}{2}"]), "verdict": False},  # wrong too, but not the fix's to change
        {"key": json.dumps(["parsed", ref, None]), "verdict": True},
    ]
    record = tmp_path / "record.jsonl"
    record.write_text("".join(json.dumps(x) + "\n" for x in lines))
    monkeypatch.setattr(sys, "argv", ["reverify_units.py", "--append", str(record)])
    ru.main()
    out = [json.loads(x) for x in record.read_text().splitlines()]
    assert out[: len(lines)] == lines  # history kept
    assert out[len(lines) :] == [{"key": lines[0]["key"], "verdict": False}]
