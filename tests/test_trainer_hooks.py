import os
import signal
from types import SimpleNamespace

from transformers.trainer_callback import TrainerControl

from cooper_rl.trainer_hooks import SaveOnSignal


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
