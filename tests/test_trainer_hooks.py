import os
import signal
from types import SimpleNamespace

import pytest
from transformers.trainer_callback import TrainerControl

from cooper_rl.io import TrainingInterrupted
from cooper_rl.trainer_hooks import SaveOnSignal, train_until_signal


def test_save_on_signal_stops_at_the_first_allowed_step_and_restores_the_handlers():
    previous = signal.getsignal(signal.SIGUSR1)
    cb = SaveOnSignal(every=4)
    assert signal.getsignal(signal.SIGUSR1) != previous  # installed at construction
    control = TrainerControl()
    cb.on_step_end(None, SimpleNamespace(global_step=3), control)
    assert not (control.should_save or control.should_training_stop or cb.interrupted)  # no signal yet
    os.kill(os.getpid(), signal.SIGUSR1)
    assert cb.requested and not cb.interrupted
    cb.on_step_end(None, SimpleNamespace(global_step=5), control)
    assert not control.should_training_stop  # 5 is not a multiple of every=4: the step in flight goes on
    cb.on_step_end(None, SimpleNamespace(global_step=8), control)
    assert control.should_save and control.should_training_stop and cb.interrupted
    cb.on_train_end(None, None, control)
    assert signal.getsignal(signal.SIGUSR1) == previous
    cb.restore()  # idempotent
    assert signal.getsignal(signal.SIGUSR1) == previous


def test_a_request_stops_like_a_signal_and_says_why(capsys):
    cb = SaveOnSignal(every=2)
    cb.restore()  # the test's own handlers stay
    control = TrainerControl()
    cb.request("[stop_at] the evaluation would overrun")
    assert "[stop_at] the evaluation would overrun: checkpoint" in capsys.readouterr().out
    cb.on_step_end(None, SimpleNamespace(global_step=3), control)
    assert not control.should_training_stop  # not a multiple of every=2
    cb.on_step_end(None, SimpleNamespace(global_step=4), control)
    assert control.should_save and control.should_training_stop and cb.interrupted


def test_a_signal_before_training_stops_without_training():
    previous = signal.getsignal(signal.SIGTERM)
    cb = SaveOnSignal(every=4)  # installed before loading, as each command does
    os.kill(os.getpid(), signal.SIGTERM)  # arrives while "loading"
    trained = []
    trainer = SimpleNamespace(
        args=SimpleNamespace(output_dir="out"),
        add_callback=trained.append,
        train=lambda **kw: trained.append("train"),
    )
    with pytest.raises(TrainingInterrupted, match="before training began"):
        train_until_signal(trainer, cb)
    assert trained == []  # neither a callback added nor a step taken
    assert signal.getsignal(signal.SIGTERM) == previous


def test_run_rl_catches_a_signal_while_it_loads(tmp_path, monkeypatch):
    from cooper_rl.rl import train as rl_train

    previous = signal.getsignal(signal.SIGTERM)

    def loading(cfg):  # the signal comes while build_trainer loads the models
        os.kill(os.getpid(), signal.SIGTERM)
        trainer = SimpleNamespace(args=SimpleNamespace(output_dir=cfg.output_dir), train=None, add_callback=None)
        return trainer, None, {"checkpoint": None}

    monkeypatch.setattr(rl_train, "build_trainer", loading)
    with pytest.raises(TrainingInterrupted, match="before training began"):
        rl_train.run_rl(rl_train.RLConfig(reward="rule", output_dir=str(tmp_path)))
    assert signal.getsignal(signal.SIGTERM) == previous  # not killed by the default handler, and put back


def test_seconds_until_reads_budgets_clock_times_and_iso_times():
    import datetime

    from cooper_rl.trainer_hooks import seconds_until

    now = datetime.datetime(2026, 12, 1, 17, 0, tzinfo=datetime.UTC)
    assert seconds_until("+90", now) == 90.0
    assert seconds_until("19:20", now) == 2 * 3600 + 20 * 60
    assert seconds_until("16:00", now) == 23 * 3600  # a time already past today: tomorrow's
    assert seconds_until("2026-12-01T17:30:00", now) == 1800.0
    with pytest.raises(ValueError, match="stop_at: 'soon'"):
        seconds_until("soon", now)


def test_a_deadline_is_a_checkpointed_stop_request():
    import time

    from cooper_rl.trainer_hooks import signal_at

    on_signal = SaveOnSignal()
    try:
        signal_at("+0.05")
        deadline = time.time() + 5
        while not on_signal.requested and time.time() < deadline:
            time.sleep(0.02)
        assert on_signal.requested  # what SIGTERM does: the next allowed step checkpoints and stops
    finally:
        on_signal.restore()
    assert signal_at(None) is None


def _tiny_trainer(out, **args):
    import torch
    from transformers import Trainer, TrainingArguments

    class Line(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = torch.nn.Linear(1, 1)

        def forward(self, x, labels):
            return {"loss": torch.nn.functional.mse_loss(self.w(x), labels)}

    data = [{"x": torch.tensor([float(i)]), "labels": torch.tensor([2.0 * i])} for i in range(8)]
    targs = TrainingArguments(
        output_dir=str(out),
        per_device_train_batch_size=2,
        report_to=[],
        save_strategy="steps",
        save_steps=1,
        use_cpu=True,
        disable_tqdm=True,
        **args,
    )
    return Trainer(model=Line(), args=targs, train_dataset=data)


@pytest.mark.parametrize("size", [{"num_train_epochs": 1.5}, {"max_steps": 6}])
def test_a_checkpoint_at_the_end_of_its_run_is_finished_not_trained_further(tmp_path, size):
    """A run stopped between its last checkpoint and its final save, sized in steps or in (fractional) epochs: the
    resume loads that checkpoint and takes no step (the Trainer alone takes one past the end when sized in steps or
    fractional epochs)."""
    first = _tiny_trainer(tmp_path / "a", **size)
    first.train()
    assert first.state.global_step == 6  # 4 batches per epoch
    last = tmp_path / "a" / "checkpoint-6"
    again = _tiny_trainer(tmp_path / "a", **size)
    result = train_until_signal(again, SaveOnSignal(every=1), str(last), finish_loaded=True)
    assert result.global_step == 6 and again.state.global_step == 6
    assert again.model.w.weight.equal(first.model.w.weight)
    plain = _tiny_trainer(tmp_path / "a", **size)
    plain.train(resume_from_checkpoint=str(last))
    assert plain.state.global_step == 7  # why finish_loaded exists


def test_a_checkpoint_is_not_the_end_when_more_epochs_are_asked(tmp_path):
    from cooper_rl.trainer_hooks import reached_the_end

    first = _tiny_trainer(tmp_path / "a", num_train_epochs=1.5)
    first.train()
    last = tmp_path / "a" / "checkpoint-6"
    assert reached_the_end(first, last)
    for more in ({"num_train_epochs": 2}, {"num_train_epochs": 3}, {"max_steps": 8}):  # 8, 12, 8 steps
        assert not reached_the_end(_tiny_trainer(tmp_path / "b", **more), last), more
    assert reached_the_end(_tiny_trainer(tmp_path / "b", max_steps=5), last)
    assert reached_the_end(_tiny_trainer(tmp_path / "b", num_train_epochs=1), last)  # 4 steps


def test_every_complete_checkpoint_holds_its_time_record(tmp_path):
    """The seconds up to a checkpoint are written inside its trainer_state.json (the file that marks it complete),
    so a kill cannot leave a complete checkpoint without them; a resume counts on from them, also through
    transformers' own callback restore; older checkpoints' cooper_elapsed.json is still read."""
    import json

    from cooper_rl.trainer_hooks import ElapsedTime

    trainer = _tiny_trainer(tmp_path / "a", max_steps=3)
    timer = ElapsedTime()
    timer.before = 100.0  # as if resumed from a checkpoint 100 s into the run
    trainer.add_callback(timer)
    trainer.train()
    records = [ElapsedTime.recorded(tmp_path / "a" / f"checkpoint-{i}") for i in (1, 2, 3)]
    assert all(r is not None for r in records) and 100.0 < records[0] <= records[1] <= records[2] < timer.total()
    assert ElapsedTime(tmp_path / "a" / "checkpoint-2").before == records[1]

    restored = _tiny_trainer(tmp_path / "a", max_steps=4, restore_callback_states_from_checkpoint=True)
    restored.add_callback(ElapsedTime())
    restored.train(resume_from_checkpoint=str(tmp_path / "a" / "checkpoint-3"))
    rebuilt = next(c for c in restored.callback_handler.callbacks if isinstance(c, ElapsedTime))
    assert rebuilt.before == records[2] and ElapsedTime.recorded(tmp_path / "a" / "checkpoint-4") > records[2]

    # a checkpoint of an older version (its record in cooper_elapsed.json) resumes, and its later checkpoints
    # record in trainer_state.json counting on from it
    _tiny_trainer(tmp_path / "b", max_steps=2).train()
    (tmp_path / "b" / "checkpoint-2" / "cooper_elapsed.json").write_text(json.dumps({"seconds": 7.5, "step": 2}))
    resumed = _tiny_trainer(tmp_path / "b", max_steps=3)
    resumed.add_callback(ElapsedTime(tmp_path / "b" / "checkpoint-2"))
    resumed.train(resume_from_checkpoint=str(tmp_path / "b" / "checkpoint-2"))
    assert ElapsedTime.recorded(tmp_path / "b" / "checkpoint-3") > 7.5
    # "unknown" recorded in trainer_state.json is not overridden by a stale file beside it
    (tmp_path / "b" / "checkpoint-1" / "cooper_elapsed.json").write_text(json.dumps({"seconds": 3.0, "step": 1}))
    state = json.loads((tmp_path / "b" / "checkpoint-1" / "trainer_state.json").read_text())
    state["stateful_callbacks"] = {"ElapsedTime": {"args": {"before": None}, "attributes": {}}}
    (tmp_path / "b" / "checkpoint-1" / "trainer_state.json").write_text(json.dumps(state))
    assert ElapsedTime.recorded(tmp_path / "b" / "checkpoint-1") is None

    old = tmp_path / "old"
    old.mkdir()
    (old / "trainer_state.json").write_text(json.dumps({"global_step": 5}))
    assert ElapsedTime.recorded(old) is None and ElapsedTime(old).total() is None  # no record: unknown
    (old / "cooper_elapsed.json").write_text(json.dumps({"seconds": 7.5, "step": 5}))
    assert ElapsedTime(old).before == 7.5
