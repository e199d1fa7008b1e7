"""rm_replay.py: an arm changes which kinds of negative the RM learns from and nothing else (a kind's generator is
the run's, with the run's seed; at the first call, while every arm's RM is the starting one, a kind's pairs are the
same in every arm that has it), it refuses an RM the run did not start from, and its report judges the
pre-registered predictions only on the whole design."""

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
    """A copy of cooper_new-s0's config, metrics and its first two reward calls' rollouts, a labelled set of 8 rows and a
    tiny RM (the real RM takes minutes per call)."""
    d = tmp_path_factory.mktemp("replay")
    rows = [json.loads(x) for x in gzip.open(RUN / "rollouts.jsonl.gz", "rt")]
    first = sorted({r["step"] for r in rows})[:2]
    with gzip.open(d / "rollouts.jsonl.gz", "wt") as f:
        f.writelines(json.dumps(r) + "\n" for r in rows if r["step"] in first)
    shutil.copy(RUN / "metrics.jsonl", d)
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


def test_an_arms_negatives_are_the_runs(run):
    d, _ = run
    cfg = json.loads((d / "rl_config.json").read_text())
    calls = rr.reward_calls(d)
    pos = [x for x in calls[0] if x["verdict"]][:3]
    q, r, p = ([x[k] for x in pos] for k in ("question", "reference", "completion"))
    assert len(pos) == 3
    from cooper_rl.cooper.negatives import make_negative_generator

    # the run's own mix (cooper rl: make_negative_generator of its `negatives` and seed), kind-major
    runs = make_negative_generator(cfg["negatives"], seed=cfg["seed"])(q, r, p, groups=[[]] * 3)[0]
    assert rr.arm_negatives("all", cfg)(q, r, p, groups=[[]] * 3)[0] == runs
    for i, kind in enumerate(cfg["negatives"].split(",")):
        got = rr.arm_negatives(f"only:{kind}", cfg)(q, r, p, groups=[[]] * 3)[0]
        assert got == runs[3 * i : 3 * i + 3], kind
    assert runs[:3] != rr.arm_negatives("only:corrupt", cfg | {"seed": 1})(q, r, p)[0]  # the seed matters


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
    assert evals[2]["rm"]["mean_p_correct_rows"] != evals[0]["rm"]["mean_p_correct_rows"]  # the updates moved it
    # the run's own record of each call rides along (for the fidelity check): its pairs per kind, from metrics.jsonl
    assert calls["all"][0]["run"]["valid/corrupt"] == 6 and calls["all"][0]["score_gap_to_run"] > 0


def test_main_reuses_the_start_and_refuses_a_shorter_replay(run, tmp_path, monkeypatch, one_thread):
    d, rm = run
    monkeypatch.setattr(rr, "RUNS", d.parent)
    args = ["--runs", d.name, "--arms", "all", "only:truncate", "--calls", "1", "--rm", rm, "--out", str(tmp_path)]
    monkeypatch.setattr("sys.argv", ["rm_replay.py", *args])
    rr.main()
    logs = {f.name: [json.loads(x) for x in f.read_text().splitlines()] for f in tmp_path.glob("*.jsonl")}
    assert sorted(logs) == [f"{d.name}.all.jsonl", f"{d.name}.only_truncate.jsonl"]
    assert logs[f"{d.name}.all.jsonl"][0] == logs[f"{d.name}.only_truncate.jsonl"][0] | {"arm": "all"}
    assert (tmp_path / "table.md").is_file()
    monkeypatch.setattr("sys.argv", ["rm_replay.py", *args[:-6], "--calls", "2", *args[-4:]])
    with pytest.raises(SystemExit, match="replayed 1 calls, not 2"):
        rr.main()


def test_fidelity_compares_with_the_runs_log():
    calls = [
        {"call": 1, "n_valid": 3, "valid/a": 3, "score_gap_to_run": 1e-6, "run": {"n_valid": 3, "valid/a": 3}},
        {"call": 2, "n_valid": 2, "valid/a": 2, "score_gap_to_run": 3e-2, "run": {"n_valid": 3, "valid/a": 3}},
    ]
    f = rr.fidelity(calls)
    assert f["first_call_pairs_match"] and f["calls_with_the_runs_pairs"] == 1 and f["calls"] == 2
    assert f["score_gap_first_call"] == 1e-6 and abs(f["score_gap_mean"] - 0.0150005) < 1e-9
    assert not rr.fidelity(calls[1:])["first_call_pairs_match"]


def test_refuses_another_rm(run, tmp_path):
    d, rm = run
    other = tmp_path / "run"
    shutil.copytree(d, other)
    cfg = json.loads((other / "rl_config.json").read_text()) | {"rm_sha256": "0" * 64}
    (other / "rl_config.json").write_text(json.dumps(cfg))
    with pytest.raises(SystemExit, match="is not the RM"):
        rr.replay(other, "all", rm, calls=1, eval_every=1)


def test_accepts_an_rm_equal_within_float_rounding_and_says_so(run, tmp_path):
    """An RM rebuilt on another CPU (another sha256) is the run's if check_artifacts' criterion holds on the run's
    step-0 RM evaluation; one whose thresholded metrics differ is refused, naming them."""
    d, rm = run
    other = tmp_path / "run"
    shutil.copytree(d, other)
    cfg = json.loads((other / "rl_config.json").read_text()) | {"rm_sha256": "0" * 64}
    (other / "rl_config.json").write_text(json.dumps(cfg))
    step0 = rr.rm_metrics(rm, cfg["rm_eval_data"], cfg["rm_batch_size"], cfg["rm_max_length"])
    (other / "evals.jsonl").write_text(json.dumps({"step": 0, "rm": step0 | {"auroc": step0["auroc"] + 5e-5}}) + "\n")
    log = rr.replay(other, "all", rm, calls=1, eval_every=1)
    assert log[0]["rm_equal_within_rounding"]["run_sha256"] == "0" * 64
    (other / "evals.jsonl").write_text(json.dumps({"step": 0, "rm": step0 | {"accuracy": 0.01}}) + "\n")
    with pytest.raises(SystemExit, match="is not the RM.*accuracy"):
        rr.replay(other, "all", rm, calls=1, eval_every=1)


def test_report_judges_the_predictions_on_the_complete_design(tmp_path):
    drops = {  # accuracy lost by call 25, per arm: answer-less negatives did it
        "all": 0.30, "only:corrupt": 0.02, "only:mined": 0.05, "only:truncate": 0.20, "only:masterkey": 0.10,
        "only:corrupt+mined": 0.04, "only:truncate+masterkey": 0.28,
    }  # fmt: skip

    def write(arm, run, drop, ppr_end):
        calls = [
            {"kind": "call", "call": c, "n_valid": 4, "score_gap_to_run": 0.0, "run": {"n_valid": 4}}
            for c in range(1, 26)
        ]
        evals = [
            {"kind": "eval", "call": c, "arm": arm, "rm": {"accuracy": 0.84 - drop * c / 25, "predicted_positive_rate": p,
             "mean_p_correct_rows": 0.6, "mean_p_wrong_rows": 0.3 + drop}}
            for c, p in ((0, 0.26), (25, ppr_end))
        ]  # fmt: skip
        name = f"{run}.{arm.replace(':', '_').replace('+', '-')}.jsonl"
        (tmp_path / name).write_text("".join(json.dumps(e) + "\n" for e in [evals[0], *calls, evals[1]]))

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
    for r in range(3):  # negatives with an answer drop half of all's too: prediction 1 fails
        write("only:corrupt+mined", f"cooper_new-s{r}", 0.15, 0.56)
    assert rr.report(tmp_path)["predictions"]["1_answerless_negatives_did_it"] is False
    for r in range(3):  # ... and that arm's scores did not rise together: prediction 2 fails
        write("only:corrupt+mined", f"cooper_new-s{r}", 0.15, 0.30)
    assert rr.report(tmp_path)["predictions"]["2_scores_up_together"] is False
    for r in range(3):  # the replay misses the drop: the rest decides nothing
        write("all", f"cooper_new-s{r}", 0.10, 0.46)
    s = rr.report(tmp_path)
    assert s["predictions"]["0_replay_reproduces_the_drop"] is False
    assert [s["predictions"][k] for k in list(s["predictions"])[1:]] == [None, None, None]
    assert "undecided" in (tmp_path / "table.md").read_text()
    write("all", "cooper_new-s0", 0.30, 0.86)  # a run not at call 25 (or an arm missing): not judged at all
    (tmp_path / "cooper_new-s0.all.jsonl").write_text(
        "\n".join((tmp_path / "cooper_new-s0.all.jsonl").read_text().splitlines()[:-1] + [json.dumps(
            {"kind": "eval", "call": 20, "arm": "all", "rm": {"accuracy": 0.6, "predicted_positive_rate": 0.5,
             "mean_p_correct_rows": 0.6, "mean_p_wrong_rows": 0.5}})]) + "\n"
    )  # fmt: skip
    assert "predictions" not in rr.report(tmp_path)
