"""check_artifacts.py: a rebuilt RM or warm-up policy that differs by one byte from what a committed run used is
named; the same files pass; an RM not built here yet is not a mismatch."""

import json
from pathlib import Path
from types import SimpleNamespace

from tests.experiments import load_script

from cooper_rl.rl.callbacks import STEP0_PRECISION, step0_fingerprint
from cooper_rl.rl.config import rm_weights_sha256

ROOT = Path(__file__).resolve().parents[2]
ca = load_script("check_artifacts")


def committed_run(tmp_path, monkeypatch):
    """A results dir with one committed run of an RM-rewarded condition, its RM and policy files here."""
    monkeypatch.chdir(tmp_path)
    for d, data in (("rm", b"rm weights"), ("sft/policy", b"policy weights")):
        Path(d).mkdir(parents=True)
        Path(d, "model.safetensors").write_bytes(data)
    Path("heldout.jsonl").write_text('{"question": "1+1?", "answer": "2"}\n')
    cfg = {"rm": "rm", "policy": "sft/policy", "eval_datasets": ["builtin:test:100:1,2", "heldout.jsonl"]}
    cfg |= {k: False for k in STEP0_PRECISION}
    cfg["rm_sha256"] = rm_weights_sha256("rm")
    run = Path("results/runs/model-s0")
    run.mkdir(parents=True)
    (run / "rl_config.json").write_text(json.dumps(cfg))
    fp = step0_fingerprint(SimpleNamespace(**cfg))
    (run / "evals.jsonl").write_text(json.dumps({"step": 0, "step0_fingerprint": fp}) + "\n")
    return Path("results")


def test_the_same_files_pass(tmp_path, monkeypatch):
    results = committed_run(tmp_path, monkeypatch)
    assert ca.mismatches(results) == []
    assert ca.main([str(results)]) == 0


def test_a_different_rm_is_named(tmp_path, monkeypatch):
    results = committed_run(tmp_path, monkeypatch)
    Path("rm/model.safetensors").write_bytes(b"rm weightz")
    bad = ca.mismatches(results)
    assert len(bad) == 1 and bad[0].startswith("model-s0: RM rm had sha256")
    assert ca.main([str(results)]) == 1


def test_a_different_policy_or_eval_data_is_named(tmp_path, monkeypatch):
    results = committed_run(tmp_path, monkeypatch)
    Path("sft/policy/model.safetensors").write_bytes(b"policy weightz")
    assert [b.split(" (")[0] for b in ca.mismatches(results)] == ["model-s0: warm-up policy sft/policy"]
    Path("sft/policy/model.safetensors").write_bytes(b"policy weights")
    Path("heldout.jsonl").write_text('{"question": "1+1?", "answer": "3"}\n')
    assert len(ca.mismatches(results)) == 1


def test_an_rm_not_built_here_is_not_a_mismatch(tmp_path, monkeypatch):
    results = committed_run(tmp_path, monkeypatch)
    Path("rm/model.safetensors").unlink()
    assert ca.mismatches(results) == []


def test_the_committed_experiment_has_one_rm_and_one_warm_up():
    """The committed seed-0 runs agree among themselves (what a rebuild is checked against): one warm-up, and one
    weaker RM up to float rounding (the AMD build and the Intel rebuild: docs/RESULTS.md, 'Machines and precision')."""
    runs = ROOT / "experiments/reward_hacking/results/runs"
    weak = {}  # sha256 -> the step-0 labelled-set metrics of a run that used it
    for f in runs.glob("*/rl_config.json"):
        evals = f.parent / "evals.jsonl"  # reward_hacking/run.sh's report copies a run only once it has its step-0 row
        assert evals.is_file() and evals.stat().st_size, f"{evals}: missing or empty"
        cfg, row = json.loads(f.read_text()), json.loads(evals.read_text().splitlines()[0])
        if cfg.get("rm") == "runs/verifyrm-weak":
            weak.setdefault(cfg["rm_sha256"], row["rm"])
    assert 1 <= len(weak) <= 2
    first, *other = weak.values()
    assert all(ca.rm_differences(m, first) == [] for m in other)
    fps = {json.loads(f.read_text().splitlines()[0]).get("step0_fingerprint") for f in runs.glob("*-s0/evals.jsonl")}
    assert len(fps - {None}) == 1


STEP0_RM = {"n": 600, "accuracy": 0.8383333333333334, "recall": 0.6403940886699507, "auroc": 0.8954721991289349}
STEP0_RM |= {"ece": 0.21726167050500714}


def test_rm_differences_allow_float_rounding_only():
    one_swapped_pair = {**STEP0_RM, "auroc": STEP0_RM["auroc"] + 1 / (203 * 397), "ece": STEP0_RM["ece"] - 2e-7}
    assert ca.rm_differences(one_swapped_pair, STEP0_RM) == []
    assert [d.split()[0] for d in ca.rm_differences({**STEP0_RM, "accuracy": 0.84}, STEP0_RM)] == ["accuracy"]
    assert [d.split()[0] for d in ca.rm_differences({**STEP0_RM, "auroc": 0.8956}, STEP0_RM)] == ["auroc"]
    assert [d.split()[0] for d in ca.rm_differences({**STEP0_RM, "ece": 0.2173}, STEP0_RM)] == ["ece"]


def test_a_rebuilt_rm_equal_within_rounding_passes(tmp_path, monkeypatch):
    results = committed_run(tmp_path, monkeypatch)
    run = results / "runs/model-s0"
    cfg = json.loads((run / "rl_config.json").read_text()) | {"rm_eval_data": "labelled.jsonl", "rm_batch_size": 64}
    (run / "rl_config.json").write_text(json.dumps(cfg))
    row = json.loads((run / "evals.jsonl").read_text()) | {"rm": STEP0_RM}
    (run / "evals.jsonl").write_text(json.dumps(row) + "\n")
    Path("rm/model.safetensors").write_bytes(b"rm weightz")
    scored = []
    monkeypatch.setattr(
        ca, "rm_metrics", lambda *a: scored.append(a) or {**STEP0_RM, "auroc": STEP0_RM["auroc"] + 2e-5}
    )
    sha = ca.rm_weights_sha256("rm")  # hashed once, passed on as the cache key
    assert ca.mismatches(results) == [] and scored == [("rm", "labelled.jsonl", 64, None, sha)]
    monkeypatch.setattr(ca, "rm_metrics", lambda *a: {**STEP0_RM, "accuracy": 0.5})
    assert [b.split(": ")[0] for b in ca.mismatches(results)] == ["model-s0"]
