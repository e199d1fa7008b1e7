"""rm_replay.py: an arm changes which kinds of negative the RM learns from and nothing else (the pairs of a kind are
the same in every arm that has it), and it refuses an RM the run did not start from."""

import gzip
import json
import shutil
from pathlib import Path

import pytest
from tests.experiments import load_script

from tiny import save_tiny_bert

ROOT = Path(__file__).resolve().parents[2]
rr = load_script("rm_replay")
RUN = ROOT / "experiments/reward_hacking/results/runs/cooper_new-s0"  # committed logs of the run replayed


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """A copy of cooper_new-s0's config and its first two reward calls' rollouts, a labelled set of 8 rows and a
    tiny RM (the real RM takes minutes per call)."""
    d = tmp_path_factory.mktemp("replay")
    rows = [json.loads(x) for x in gzip.open(RUN / "rollouts.jsonl.gz", "rt")]
    first = sorted({r["step"] for r in rows})[:2]
    with gzip.open(d / "rollouts.jsonl.gz", "wt") as f:
        f.writelines(json.dumps(r) + "\n" for r in rows if r["step"] in first)
    labelled = (ROOT / "experiments/verifyrm/v3/heldout.jsonl").read_text().splitlines()[:8]
    (d / "labelled.jsonl").write_text("\n".join(labelled) + "\n")
    cfg = json.loads((RUN / "rl_config.json").read_text())
    cfg |= {"rm_sha256": None, "rm_eval_data": str(d / "labelled.jsonl"), "rm_batch_size": 8, "rm_max_length": 128}
    (d / "rl_config.json").write_text(json.dumps(cfg))
    return d, save_tiny_bert(d / "rm")


def test_arms_name_kinds():
    kinds = ["corrupt", "mined", "truncate", "masterkey"]
    assert rr.arm_kinds("all", kinds) == kinds
    assert rr.arm_kinds("only:mined", kinds) == ["mined"]
    assert rr.arm_kinds("without:mined", kinds) == ["corrupt", "truncate", "masterkey"]
    assert rr.arm_kinds("only:masterkey+corrupt", kinds) == ["corrupt", "masterkey"]  # the run's order
    for bad in ("only:api", "some:mined", "mined", "only:mined+mined", "only:mined+api"):
        with pytest.raises(ValueError, match="arm"):
            rr.arm_kinds(bad, kinds)


def test_an_arm_changes_only_the_kinds(run, one_thread):
    d, rm = run
    logs = {arm: rr.replay(d, arm, rm, calls=2, eval_every=1) for arm in ("all", "only:truncate", "without:truncate")}
    calls = {arm: [x for x in log if x["kind"] == "call"] for arm, log in logs.items()}
    assert [c["call"] for c in calls["all"]] == [1, 2]
    first = {arm: c[0] for arm, c in calls.items()}  # the first call: every arm's RM is still the starting one
    assert {k for k in first["only:truncate"] if k.startswith("valid/")} == {"valid/truncate"}
    assert "valid/truncate" not in first["without:truncate"]
    for k, v in first["all"].items():
        if k.startswith("valid/"):
            assert v == (first["only:truncate"] if k == "valid/truncate" else first["without:truncate"])[k]
    assert first["all"]["n_valid"] == first["only:truncate"]["n_valid"] + first["without:truncate"]["n_valid"] > 0
    evals = [x for x in logs["all"] if x["kind"] == "eval"]
    assert [e["call"] for e in evals] == [0, 1, 2] and evals[0]["rm"]["n"] == 8
    assert evals[0]["rm"] == [x for x in logs["only:truncate"] if x["kind"] == "eval"][0]["rm"]  # same start
    assert evals[2]["rm"]["mean_p_correct_rows"] != evals[0]["rm"]["mean_p_correct_rows"]  # the updates moved it


def test_refuses_another_rm(run, tmp_path):
    d, rm = run
    other = tmp_path / "run"
    shutil.copytree(d, other)
    cfg = json.loads((other / "rl_config.json").read_text()) | {"rm_sha256": "0" * 64}
    (other / "rl_config.json").write_text(json.dumps(cfg))
    with pytest.raises(SystemExit, match="is not the RM"):
        rr.replay(other, "all", rm, calls=1, eval_every=1)


def test_report_judges_the_predictions_on_the_complete_design(tmp_path):
    drops = {  # accuracy lost by call 25, per arm: answer-less negatives did it
        "all": 0.30, "only:corrupt": 0.02, "only:mined": 0.05, "only:truncate": 0.20, "only:masterkey": 0.10,
        "only:corrupt+mined": 0.04, "only:truncate+masterkey": 0.28,
    }  # fmt: skip

    def write(arm, run, drop, ppr_end):
        evals = [
            {"kind": "eval", "call": c, "arm": arm, "rm": {"accuracy": 0.84 - drop * c / 25, "predicted_positive_rate": p,
             "mean_p_correct_rows": 0.6, "mean_p_wrong_rows": 0.3 + drop}}
            for c, p in ((0, 0.26), (25, ppr_end))
        ]  # fmt: skip
        name = f"{run}.{arm.replace(':', '_').replace('+', '-')}.jsonl"
        (tmp_path / name).write_text("".join(json.dumps(e) + "\n" for e in evals))

    for arm, d in drops.items():
        for s in range(2):
            write(arm, f"cooper_new-s{s}", d, 0.26 + 2 * d)
    assert "predictions" not in rr.report(tmp_path)  # two runs of three: not judged
    for arm, d in drops.items():
        write(arm, "cooper_new-s2", d, 0.26 + 2 * d)
    s = rr.report(tmp_path)
    assert abs(s["arms"]["all"]["drop"]["mean"] - 0.30) < 1e-9
    assert s["predictions"] == {
        "0_replay_reproduces_the_drop": True,
        "1_answerless_negatives_did_it": True,
        "2_scores_up_together": True,  # the arms that dropped >= half of all's: ppr rose 0.4-0.6
        "3_one_answerless_kind_alone": True,
    }
    assert "| `all` | 3 | 84.0 → 54.0 | 30.0 ± 0.0 | 1.00 |" in (tmp_path / "table.md").read_text()
    write("only:truncate", "cooper_new-s2", 0.0, 0.26)  # one run of an arm changes: the mean and the verdicts follow
    s = rr.report(tmp_path)
    assert not s["predictions"]["3_one_answerless_kind_alone"]
