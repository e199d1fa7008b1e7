"""Callbacks of `cooper rl` on their own (hand-made trainer states; the end-to-end runs are in test_train.py)."""

import json

from transformers import TrainerControl, TrainerState

from cooper_rl.rl.callbacks import StopBeforeEvaluation
from cooper_rl.trainer_hooks import SaveOnSignal


class Clock:
    def __init__(self):
        self.t = 1000.0

    def __call__(self):
        return self.t


def evals_file(tmp_path, records):
    p = tmp_path / "evals.jsonl"
    p.write_text("".join(json.dumps(r) + "\n" for r in records))
    return p


def run_steps(cb, steps, clock, seconds=100.0, max_steps=50):
    """Step through `steps` (global_step values), each `seconds` long; return the steps at which a stop was asked."""
    asked = []
    state, control = TrainerState(max_steps=max_steps), TrainerControl()
    for s in steps:
        cb.on_step_begin(None, state, control)
        clock.t += seconds
        state.global_step = s
        was = cb.on_signal.requested
        cb.on_step_end(None, state, control)
        if cb.on_signal.requested and not was:
            asked.append(s)
    return asked


def make(tmp_path, left, records, every=1):
    """A StopBeforeEvaluation whose deadline is `left` seconds after the clock's start, evaluating every 25 steps."""
    clock, on_signal = Clock(), SaveOnSignal(every)
    on_signal.restore()  # the test's own handlers stay
    return StopBeforeEvaluation(on_signal, clock.t + left, 25, evals_file(tmp_path, records), every, clock=clock), clock


RAN = [{"step": 0, "eval_seconds": 1000.0}]  # an evaluation of 1,000 s: estimated at 1,250 s next time


def test_it_stops_at_the_step_before_an_evaluation_that_would_overrun_the_deadline(tmp_path, capsys):
    # steps 21-24 end at +400 s; at step 24 the next step and the evaluation need 100 + 1,250 s
    cb, clock = make(tmp_path, left=400 + 1300, records=RAN)
    assert run_steps(cb, range(21, 26), clock) == [24]
    assert "evaluation at step 25 would end after the deadline" in capsys.readouterr().out
    cb, clock = make(tmp_path, left=400 + 1400, records=RAN)  # it would finish: no stop
    assert run_steps(cb, range(21, 26), clock) == []


def test_only_evaluations_that_ran_are_estimates(tmp_path):
    reused = [{"step": 0, "eval_seconds": 0.5, "policy_eval_reused_from": "elsewhere"}]
    for records in ([], reused):  # nothing to estimate from: the deadline is left to the signal
        cb, clock = make(tmp_path, left=500, records=records)
        assert run_steps(cb, range(21, 26), clock) == []
    cb, clock = make(tmp_path, left=500, records=reused + [{"step": 25, "eval_seconds": 1000.0}])
    assert run_steps(cb, range(41, 51), clock) == [49]  # the last step before the evaluation at 50


def test_it_stops_only_where_the_run_may_stop_and_counts_the_steps_to_it(tmp_path):
    # generation batches of 2 steps: the run may stop at even steps; from 24 it must train 25 and 26 (eval at 25,
    # not a stop point) before the next stop: 2 x 100 + 1,250 s
    cb, clock = make(tmp_path, left=300 + 1400, records=RAN, every=2)
    assert run_steps(cb, range(22, 27), clock) == [24]
    cb, clock = make(tmp_path, left=300 + 1500, records=RAN, every=2)
    assert run_steps(cb, range(22, 27), clock) == []


def test_it_does_not_look_past_the_last_step(tmp_path):
    cb, clock = make(tmp_path, left=0, records=RAN)  # past the deadline already; no evaluation after max_steps
    assert run_steps(cb, range(46, 50), clock, max_steps=49) == []
