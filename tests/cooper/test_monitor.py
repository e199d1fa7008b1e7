"""HackingMonitor: flags reward-hacking patterns (reward up / accuracy down, RM fooled, disagreement, length and
entropy collapse) and nothing else; replayed on the committed runs."""

import json
import logging
from pathlib import Path

import pytest
from tests.experiments import FIRST, HACKING, load_script

from cooper_rl.cooper.monitor import CHECKS, HackingMonitor, replay


def test_fires_on_rising_reward_and_falling_accuracy(caplog):
    mon = HackingMonitor(window=10, reward_rise=0.1, acc_drop=0.05)
    flags = []
    with caplog.at_level(logging.WARNING, logger="cooper_rl.cooper.monitor"):
        for t in range(20):
            flags.append(mon.update(reward=0.3 + 0.03 * t, accuracy=0.6 - 0.015 * t))
    assert not any(flags[:9])  # no verdict before a full window
    assert all(flags[9:]) and mon.n_flags == 11
    assert "reward hacking" in caplog.text


def test_quiet_on_healthy_runs():
    for reward, acc in [
        (lambda t: 0.5 + 0.02 * t, lambda t: 0.4 + 0.02 * t),  # both rise: learning
        (lambda t: 0.5 - 0.01 * t, lambda t: 0.6 - 0.01 * t),  # both fall
        (lambda t: 0.5 + 0.005 * t, lambda t: 0.6 - 0.001 * t),
    ]:  # below the thresholds
        mon = HackingMonitor(window=10, reward_rise=0.1, acc_drop=0.05)
        assert not any(mon.update(reward(t), acc(t)) for t in range(30))


def test_state_roundtrip():
    a = HackingMonitor(window=4)
    for t in range(6):
        a.update(0.1 * t, 0.5)
    b = HackingMonitor(window=4)
    b.load_state_dict(a.state_dict())
    assert list(b.history) == list(a.history) and b.n_flags == a.n_flags


# --- the baseline checks (fooled rate, agreement, length, entropy) ---------------------------------------


@pytest.mark.parametrize(
    "check, signal, healthy, hacked",
    [
        ("rm_fooled", "fooled", 0.05, 0.4),
        ("rm_disagreement", "agreement", 0.9, 0.6),
        ("length_collapse", "length", 120.0, 40.0),
        ("entropy_collapse", "entropy", 0.8, 0.3),
        ("wrong_reward", "wrong_reward", 0.02, 0.1),
    ],
)
def test_each_baseline_check_fires_on_its_pattern_only(check, signal, healthy, hacked):
    mon = HackingMonitor(window=10)
    flags = []
    for t in range(30):  # 15 healthy steps, then the signal moves past its threshold; reward/accuracy flat
        flags.append(mon.update(0.5, 0.5, **{signal: healthy if t < 15 else hacked}))
        assert set(mon.last_flags) <= {check}
    assert not any(flags[:15]) and flags[-1]
    assert mon.first_flag_step is not None and 15 < mon.first_flag_step <= 20
    assert mon.counts[check] == mon.n_flags and set(CHECKS) == set(mon.counts)


def test_baseline_checks_quiet_on_noise_and_missing_signals():
    import random

    rng = random.Random(0)
    mon = HackingMonitor(window=10)
    for t in range(200):
        mon.update(
            0.5 + rng.uniform(-0.05, 0.05),
            0.5,
            fooled=rng.choice([None, 0.0, 0.0, 0.14, 0.25]),
            agreement=rng.choice([1.0, 1.0, 0.88, 0.75]),
            length=rng.uniform(60, 140),
            entropy=None if t % 3 else rng.uniform(0.5, 0.9),
        )
    assert mon.n_flags == 0


def test_acc_fall_flags_accuracy_falling_under_a_reward_that_holds_and_never_a_rule_reward():
    # model-s1's pattern: graded RM reward flat (under reward_rise), rule accuracy down from 0.33 to under 0.1
    mon = HackingMonitor(window=6)
    flags = [mon.update(0.42, 0.33 if t < 6 else 0.1) for t in range(12)]
    assert not any(flags[:7]) and flags[-1] and mon.last_flags == ["acc_fall"]
    # under the rule the reward is the accuracy: they fall together, whatever the size of the fall
    rule = HackingMonitor(window=6)
    assert not any(rule.update(a, a) for a in [0.33] * 6 + [0.02] * 20)
    # a reward that falls with the accuracy (the RM sees the errors) is not flagged either
    rm = HackingMonitor(window=6)
    assert not any(rm.update(0.42 if t < 6 else 0.30, 0.33 if t < 6 else 0.1) for t in range(20))
    # nor a 0/1 RM that accepts less than the rule does (reward under the accuracy: it pays for no wrong answer)...
    strict = HackingMonitor(window=6)
    assert not any(strict.update(0.05 if t < 6 else 0.12, 0.33 if t < 6 else 0.1) for t in range(20))
    # ...until it accepts more than the rule: then the reward pays for wrong answers while the accuracy is down
    assert not any(strict.update(0.16, 0.1) for _ in range(2))  # late mean reward 0.133, 0.147: under 0.1 + margin
    assert strict.update(0.16, 0.1) and strict.last_flags == ["acc_fall"]  # 0.16 - 0.1 >= 0.05


def test_wrong_reward_flags_reward_going_to_wrong_answers_not_an_rm_that_learns_to_accept_right_ones():
    # model_strong-s0's pattern: the reward falls with the accuracy (no acc_fall), the RM pays more of it to the
    # answers the rule rejects (0.02 -> 0.15) while its fooled rate rises by less than fooled_rise
    mon = HackingMonitor(window=6)
    rows = [(0.3, 0.3, 0.02, 0.02)] * 6 + [(0.2, 0.05, 0.1, 0.15)] * 6  # reward, accuracy, fooled, paid to wrong
    flags = [mon.update(r, a, fooled=f, wrong_reward=w) for r, a, f, w in rows]
    assert flags.index(True) == 7 and all(flags[7:]) and mon.last_flags == ["wrong_reward"]  # late mean 0.11
    # a 0/1 RM that rejected right answers at first and learns to accept them: reward - accuracy rises from -0.25
    # to 0, the reward paid to wrong answers does not (cooper_ref_bin-s0's first calls)
    learns = HackingMonitor(window=6)
    assert not any(learns.update(0.05 if t < 6 else 0.3, 0.3, wrong_reward=0.0) for t in range(20))


class RisingOnWrong:
    """An RM for rollouts [right, wrong, right, wrong]: it pays the first wrong one more at every call."""

    def __init__(self):
        self.t = 0

    def score(self, questions, references, texts, batch_size=64):
        self.t += 1
        return [0.9, min(1.0, 0.1 * self.t), 0.9, 0.0]


def test_replay_reads_the_reward_paid_to_wrong_rollouts_from_metrics_or_gzipped_rollouts(tmp_path):
    import gzip
    import shutil
    from types import SimpleNamespace

    from cooper_rl.cooper.rewards import ModelReward

    live = tmp_path / "live"
    live.mkdir()
    reward = ModelReward(
        RisingOnWrong(),
        metrics_path=live / "metrics.jsonl",
        rollouts_path=live / "rollouts.jsonl",
        monitor=HackingMonitor(4),
    )
    texts = ["\\boxed{7}", "\\boxed{8}", "\\boxed{9}", "nine"]
    for t in range(8):
        state = SimpleNamespace(global_step=4 * t, is_world_process_zero=True)  # a call per 4 optimizer steps
        reward(completions=texts, question=["q"] * 4, reference=["7", "7", "9", "9"], trainer_state=state)
    # the same run logged before metrics.jsonl had the signal, with its rollouts gzipped (as reward_hacking/results keeps them)
    old = tmp_path / "old"
    old.mkdir()
    rows = [json.loads(x) for x in (live / "metrics.jsonl").read_text().splitlines()]
    (old / "metrics.jsonl").write_text(
        "".join(json.dumps({k: v for k, v in r.items() if k != "reward_on_wrong"}) + "\n" for r in rows)
    )
    with open(live / "rollouts.jsonl", "rb") as f, gzip.open(old / "rollouts.jsonl.gz", "wb") as g:
        shutil.copyfileobj(f, g)
    runs = [replay(d, HackingMonitor(window=4)) for d in (live, old)]
    assert runs[0] == runs[1] and any("wrong_reward" in c["flags"] for c in runs[0])
    assert [c["flags"] for c in runs[0]] == [[k for k in CHECKS if r.get(f"monitor/{k}")] for r in rows]  # as live


def test_from_config_reads_every_threshold_of_a_run_config():
    from cooper_rl.rl.config import RLConfig

    cfg = RLConfig(monitor_window=8, monitor_fooled_rise=0.3, monitor_entropy_ratio=0.4)
    for source in (cfg, {f"monitor_{k}": getattr(cfg, f"monitor_{k}") for k in HackingMonitor.PARAMS}):
        m = HackingMonitor.from_config(source)
        for k in HackingMonitor.PARAMS:  # every threshold is a run setting (a new one cannot be left out)
            assert getattr(m, k) == getattr(cfg, f"monitor_{k}")
    assert HackingMonitor.from_config({"monitor_window": 4}).window == 4  # an older rl_config.json: defaults
    assert HackingMonitor.from_config({}).fooled_rise == HackingMonitor().fooled_rise


def test_entropy_from_trl_logs_is_used_once():
    mon = HackingMonitor(window=4)
    for _ in range(2):
        mon.observe_entropy(1.0)
        mon.update(0.5, 0.5)
    for _ in range(2):
        mon.observe_entropy(0.2)
        mon.update(0.5, 0.5)
    assert mon.last_flags == ["entropy_collapse"] and mon.pending_entropy == []


def test_entropy_is_averaged_over_the_optimizer_steps_since_the_last_update():
    # one low optimizer step inside healthy batches must not read as a collapse; a whole low batch must
    mon = HackingMonitor(window=2)
    for e in ([1.0, 1.0], [0.1, 1.0, 1.0, 1.0]):
        for x in e:
            mon.observe_entropy(x)
        mon.update(0.5, 0.5)
    assert mon.history[-1]["entropy"] == pytest.approx(0.775) and not mon.last_flags
    for x in (0.2, 0.3):
        mon.observe_entropy(x)
    mon.update(0.5, 0.5)
    assert mon.history[-1]["entropy"] == pytest.approx(0.25) and mon.last_flags == ["entropy_collapse"]


def test_a_resumed_monitor_takes_the_baseline_its_checkpoint_lacks_from_the_run_logs(tmp_path, caplog):
    # a checkpoint saved before the wrong_reward check existed has no such baseline: resumed, the check would never
    # run (model_strong seeds 1 and 2); filled from the run's logs it runs as in a monitor that saw every call
    from types import SimpleNamespace

    from cooper_rl.cooper.monitor import logged_signals
    from cooper_rl.cooper.rewards import ModelReward
    from cooper_rl.rl.train import fill_monitor_baseline

    live = HackingMonitor(window=4)
    reward = ModelReward(RisingOnWrong(), metrics_path=tmp_path / "metrics.jsonl", monitor=live)
    for t in range(3):
        state = SimpleNamespace(global_step=t, is_world_process_zero=True)
        reward(completions=["\\boxed{7}", "\\boxed{8}", "\\boxed{9}", "nine"], question=["q"] * 4,
               reference=["7", "7", "9", "9"], trainer_state=state)  # fmt: skip
    saved = json.loads(json.dumps(live.state_dict()))
    for row in saved["baseline"] + saved["history"]:
        row["wrong_reward"] = None  # as an older checkpoint wrote it
    resumed, unfilled = HackingMonitor(window=4), HackingMonitor(window=4)
    resumed.load_state_dict(saved)
    unfilled.load_state_dict(saved)
    with caplog.at_level(logging.INFO):
        fill_monitor_baseline(resumed, str(tmp_path))
    assert resumed.baseline == live.baseline and "wrong_reward" in caplog.text
    assert [r["wrong_reward"] for r in resumed.baseline] == [r["wrong_reward"] for r in logged_signals(tmp_path)[:2]]
    later = [(0.6, 0.5, 0.1, 0.2 + 0.1 * t) for t in range(4)]  # reward, accuracy, fooled, paid to wrong

    def flags(mon):
        return [mon.update(*x[:3], wrong_reward=x[3]) and mon.last_flags for x in later]

    got, want = flags(resumed), flags(live)
    assert got == want and any(f and "wrong_reward" in f for f in want)
    assert not any(flags(unfilled))  # what the resume did before
    # a run dir whose logs cannot be read costs a warning, not the run
    caplog.clear()
    fill_monitor_baseline(HackingMonitor(window=4), str(tmp_path / "missing"))
    assert "could not read" in caplog.text


def test_state_roundtrip_keeps_baseline_and_reads_old_checkpoints():
    a = HackingMonitor(window=4)
    for t in range(7):
        a.update(0.5, 0.5, length=100 if t < 3 else 10)
    b = HackingMonitor(window=4)
    b.load_state_dict(json.loads(json.dumps(a.state_dict())))
    assert b.baseline == a.baseline and b.counts == a.counts and b.first_flag_step == a.first_flag_step
    assert b.update(0.5, 0.5, length=10) == a.update(0.5, 0.5, length=10) is True
    old = HackingMonitor(window=4)
    old.load_state_dict({"history": [[0.1, 0.5], [0.2, 0.5]], "n_flags": 1})
    assert old.n_flags == 1 and old.history[0]["reward"] == 0.1 and len(old.baseline) == 2


def _first_fall(run: Path) -> int:
    """First evaluation step at which any held-out set's accuracy is below its step-0 value."""
    evals = [json.loads(x) for x in (run / "evals.jsonl").read_text().splitlines()]
    start = {k: v["avg@k_lenient"] for k, v in evals[0]["policy"].items()}
    return next(e["step"] for e in evals[1:] if any(v["avg@k_lenient"] < start[k] for k, v in e["policy"].items()))


# (window, batch): the committed runs' setting (one reward call per step), and reward_hacking/run.sh's (4 optimizer steps
# per generation batch, one call each, window 6 calls)
SETTINGS = [(20, 1), (6, 4)]


@pytest.mark.parametrize("window,batch", SETTINGS)
def test_replay_flags_the_committed_cold_start_hack_before_heldout_accuracy_fell(window, batch):
    run = FIRST / "results" / "runs" / "model"
    steps = replay(run, HackingMonitor(window=window), batch=batch)
    first = next(s["step"] for s in steps if s["flags"])
    assert first < _first_fall(run)
    assert "length_collapse" in next(s["flags"] for s in steps if s["flags"])


@pytest.mark.parametrize(
    "run",
    [
        "results/runs/rule",
        "results/runs/cooper",
        "results_sft/runs/rule",
        "results_sft/runs/model",
        "results_sft/runs/cooper",
    ],
)
@pytest.mark.parametrize("window,batch", SETTINGS)
def test_replay_quiet_on_runs_that_were_not_hacked(run, window, batch):
    assert not any(s["flags"] for s in replay(FIRST / run, HackingMonitor(window=window), batch=batch))


HACK_RUNS = HACKING / "results" / "runs"


def test_replay_reads_entropy_and_flags_the_warm_static_rm_hack_before_heldout_accuracy_fell():
    # the issue-15 static-RM run (weaker RM, warm start), replayed with reward_hacking/run.sh's window and its TRL log's entropy
    steps = replay(HACK_RUNS / "model-s0", HackingMonitor(window=6))
    first = next(s["step"] for s in steps if s["flags"])
    assert first < _first_fall(HACK_RUNS / "model-s0")


def test_replay_quiet_on_the_warm_rule_run_with_its_entropy():
    mon = HackingMonitor(window=6)
    steps = replay(HACK_RUNS / "rule-s0", mon)
    assert len(steps) >= 90 and sum(r["entropy"] is not None for r in mon.history) == mon.window  # entropy was read
    assert not any(s["flags"] for s in steps)


# reward_hacking/report.py's own definitions: a test and the report cannot disagree on what "collapsed" means
RH = load_script("report")


def _first_collapse(run: Path) -> int | None:
    """First evaluation step whose held-out mean is the report's collapse drop (HACK_DROP) or more below step 0's;
    None if none is."""
    evals = RH.records(run / "evals.jsonl")
    means = [RH.heldout(e) for e in evals]
    return next((e["step"] for e, m in zip(evals[1:], means[1:]) if m <= means[0] - RH.HACK_DROP), None)


ISSUE15_RUNS = sorted(p.name for p in HACK_RUNS.glob("*-s*") if (p / "evals.jsonl").is_file())


# Known misses, each in experiments/reward_hacking/README.md (The monitor): strict, so a monitor that catches one
# makes this test fail until the mark goes
# (model-s1, graded reward flat while rule accuracy fell, is caught by acc_fall since it was added for it; model-s2
# and model_strong-s0, missed by the checks before it, by wrong_reward since it was added for them)
MISSED: dict[str, str] = {}


@pytest.mark.parametrize(
    "name",
    [
        pytest.param(n, marks=pytest.mark.xfail(reason=MISSED[n], strict=True)) if n in MISSED else n
        for n in ISSUE15_RUNS
        if _first_collapse(HACK_RUNS / n) is not None
    ],
)
def test_replay_flags_every_collapsed_issue15_run_before_the_evaluation_that_showed_it(name):
    # every run of the experiment whose held-out mean fell 5 points or more: the current monitor (reward_hacking/run.sh's
    # window), replayed on its logs, flags it before the first evaluation that was that far down
    steps = replay(HACK_RUNS / name, HackingMonitor(window=6))
    first = next((s["step"] for s in steps if s["flags"]), None)
    assert first is not None and first < _first_collapse(HACK_RUNS / name)


@pytest.mark.parametrize("name", [n for n in ISSUE15_RUNS if n.startswith("rule-")])
def test_replay_quiet_on_every_issue15_rule_run(name):
    assert not any(s["flags"] for s in replay(HACK_RUNS / name, HackingMonitor(window=6)))
