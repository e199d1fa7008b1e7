"""Trainer callbacks shared by the three commands built on a transformers Trainer (`cooper sft`, `cooper train-rm`,
`cooper rl`): a console with progress bars only, stop-on-signal with a checkpoint (a job stopped from outside
resumes where it stopped), a run's wall time summed over its resumes, and finding the checkpoint to resume from."""

from __future__ import annotations

import datetime
import json
import logging
import os
import re
import signal
import threading
import time
from pathlib import Path

from transformers import TrainerCallback
from transformers.trainer_callback import ExportableState, ProgressCallback

from cooper_rl.io import TrainingInterrupted

log = logging.getLogger(__name__)


class BarOnlyProgress(ProgressCallback):
    """transformers' progress bars without the raw log dicts it prints on every log (the numbers still reach the
    logs and trackers): the console of `cooper sft` and `cooper train-rm`."""

    def on_log(self, args, state, control, logs=None, **kwargs):
        """Print nothing."""


def bar_only_progress(trainer) -> None:
    """Swap a Trainer's ProgressCallback for BarOnlyProgress."""
    trainer.remove_callback(ProgressCallback)
    trainer.add_callback(BarOnlyProgress)


class SaveOnSignal(TrainerCallback):
    """On SIGTERM or SIGUSR1, save a checkpoint at the end of the step in flight and stop training, so a job
    stopped from outside (the end of a session, a scheduler) loses no finished step; ``interrupted`` then says
    the run is not finished (its caller must not save final results). The handlers are installed at
    construction and put back by ``restore()`` or at the end of training. Each command constructs it before it
    loads anything, so a signal while loading is caught too: ``train_until_signal`` then stops before training
    begins (nothing done, nothing to save). ``every``: stop only at a step that is a multiple of it."""

    SIGNALS = (signal.SIGTERM, signal.SIGUSR1)

    def __init__(self, every: int = 1):
        self.every = max(1, every)
        self.requested = self.interrupted = False
        self._previous: dict = {}
        if threading.current_thread() is threading.main_thread():  # only the main thread may set handlers
            self._previous = {s: signal.signal(s, self._request) for s in self.SIGNALS}

    def request(self, reason: str) -> None:
        """Checkpoint and stop at the end of this step (or the next allowed one), as a signal would; prints `reason`."""
        self.requested = True
        where = "this step" if self.every == 1 else f"the first step from this one that is a multiple of {self.every}"
        print(f"{reason}: checkpoint at the end of {where}, then stop", flush=True)

    def _request(self, signum, frame):
        self.request(f"[signal] {signal.Signals(signum).name}")

    def on_step_end(self, args, state, control, **kwargs):
        """After a signal: save and stop at the first allowed step."""
        if self.requested and state.global_step % self.every == 0:
            self.interrupted = True
            control.should_save = True
            control.should_training_stop = True
        return control

    def on_train_end(self, args, state, control, **kwargs):
        """Put the previous handlers back."""
        self.restore()

    def restore(self) -> None:
        """Put the previous handlers back (idempotent)."""
        for s, handler in self._previous.items():
            signal.signal(s, handler)
        self._previous = {}


class ElapsedTime(TrainerCallback, ExportableState):
    """A run's wall time summed over the processes that made it: each checkpoint records the seconds up to it, and a
    run resumed from a checkpoint counts on from that record (the work a killed process did after its last
    checkpoint is redone, so it is not counted twice). ``total()`` is None when the checkpoint resumed from has no
    record (written by an older version): the sum is then unknown.

    The record lives in the checkpoint's trainer_state.json (transformers' ``stateful_callbacks``), the file the
    Trainer writes last and ``resolve_checkpoint`` takes as the mark of a complete checkpoint: a kill cannot leave a
    checkpoint that counts as complete without its record. (Earlier versions wrote it to ``cooper_elapsed.json``
    after the checkpoint; that file is still read.)"""

    OLD_FILE = "cooper_elapsed.json"

    def __init__(self, resume_from: str | os.PathLike | None = None, before: float | None = 0.0):
        self.t0 = time.time()
        self.before = self.recorded(resume_from) if resume_from else before

    @classmethod
    def recorded(cls, checkpoint: str | os.PathLike) -> float | None:
        """The run's seconds up to `checkpoint` as recorded in it (None: no record)."""
        state = Path(checkpoint) / "trainer_state.json"
        if state.is_file():
            saved = (json.loads(state.read_text()).get("stateful_callbacks") or {}).get(cls.__name__)
            if isinstance(saved, dict):  # this version's record, also when it says "unknown" (None)
                before = (saved.get("args") or {}).get("before")
                return None if before is None else float(before)
        old = Path(checkpoint) / cls.OLD_FILE
        return json.loads(old.read_text())["seconds"] if old.is_file() else None

    def process(self) -> float:
        """Seconds of this process's part of the run so far."""
        return time.time() - self.t0

    def total(self) -> float | None:
        """Seconds of this run so far, over every process that made it (None: unknown)."""
        return None if self.before is None else self.before + self.process()

    def on_train_begin(self, args, state, control, **kwargs):
        """Make room for the record in a state resumed from a checkpoint written without it (the Trainer only
        updates entries its state already has)."""
        state.stateful_callbacks.setdefault(type(self).__name__, self.state())

    def state(self) -> dict:
        """What the Trainer writes into each checkpoint's trainer_state.json: the seconds up to it (as the ``before``
        of a run resumed there, so transformers' own callback restore rebuilds it right too)."""
        return {"args": {"before": self.total()}, "attributes": {}}


def seconds_until(when: str, now: datetime.datetime | None = None) -> float:
    """Seconds from now to `when`: '+SECONDS', 'HH:MM' (UTC; the next such time), or an ISO time (UTC if naive)."""
    now = now or datetime.datetime.now(datetime.UTC)
    when = when.strip()
    try:
        if when.startswith("+"):
            return float(when[1:])
        if re.fullmatch(r"\d{1,2}:\d{2}", when):
            h, m = map(int, when.split(":"))
            t = now.replace(hour=h, minute=m, second=0, microsecond=0)
            return ((t - now).total_seconds()) % 86400
        t = datetime.datetime.fromisoformat(when)
        return (t.replace(tzinfo=t.tzinfo or datetime.UTC) - now).total_seconds()
    except ValueError as e:
        raise ValueError(f"stop_at: {when!r} is not +SECONDS, HH:MM (UTC) or an ISO time ({e})") from None


def signal_at(when: str | None) -> threading.Timer | None:
    """Send this process SIGUSR1 at `when` (seconds_until's forms; None: never), so a SaveOnSignal checkpoints and
    stops it; the timer (a daemon thread, cancel() to drop it)."""
    if not when:
        return None
    delay = max(0.0, seconds_until(when))
    timer = threading.Timer(delay, os.kill, (os.getpid(), signal.SIGUSR1))
    timer.daemon = True
    timer.start()
    print(f"[stop_at] checkpoint and stop in {delay / 60:.1f} min ({when})", flush=True)
    return timer


def train_until_signal(trainer, on_signal: SaveOnSignal, resume_from_checkpoint=None, finish_loaded: bool = False):
    """trainer.train() under `on_signal` (constructed by the command before it loaded anything);
    TrainingInterrupted if a signal stopped it (its checkpoint saved) or came before training began, else
    train()'s result. finish_loaded: a checkpoint that already reached the run's end (reached_the_end: a job stopped
    between its last checkpoint and its final save) is loaded, not trained on: the Trainer would take one step more
    (it checks max_steps only after a step); the callbacks' own train-time state (e.g. the last step's metrics) stays empty."""
    if finish_loaded and resume_from_checkpoint and reached_the_end(trainer, resume_from_checkpoint):
        on_signal.restore()  # as after train(): a later signal is the default's (the command ends)
        return load_finished(trainer, resume_from_checkpoint)
    if on_signal.requested:  # signalled while loading: stop now rather than after a first step (or evaluation)
        on_signal.restore()
        raise TrainingInterrupted(
            f"stopped by a signal before training began; nothing to save in {trainer.args.output_dir} (rerun the "
            "same command to start, or with --resume_from_checkpoint last if it holds a checkpoint)"
        )
    trainer.add_callback(on_signal)
    try:
        result = trainer.train(resume_from_checkpoint=resume_from_checkpoint)
    finally:
        on_signal.restore()
    if on_signal.interrupted:
        raise TrainingInterrupted(
            f"stopped by a signal at step {trainer.state.global_step}; checkpoint saved under {trainer.args.output_dir}"
            " (rerun with --resume_from_checkpoint last to continue)"
        )
    return result


def is_complete_checkpoint(ckpt: str | os.PathLike, require: str | None = None) -> bool:
    """Whether a checkpoint dir was written whole: TRL's trainer_state.json, written last and in place, present and
    parseable (a kill during its write leaves a cut-off file), and ``require`` (a path inside it) where given."""
    try:
        whole = isinstance(json.loads((Path(ckpt) / "trainer_state.json").read_text()), dict)
    except (OSError, ValueError):
        return False
    return whole and (require is None or (Path(ckpt) / require).exists())


def resolve_checkpoint(output_dir: str | os.PathLike, value: str | None, require: str | None = None) -> str | None:
    """The checkpoint dir to resume from: None for no value; the newest COMPLETE checkpoint-N in output_dir for
    'last'/'true' (TRL's trainer_state.json present and whole, and ``require``, a path inside the checkpoint, if given);
    else ``value`` itself, which must be a directory. Raises FileNotFoundError saying what is missing."""
    if not value:
        return None
    if value.lower() in ("last", "true"):
        # a kill can leave the newest checkpoint half-written: TRL writes trainer_state.json last, and in
        # cooper mode the RM state is added after it
        def step_of(p: Path) -> int:
            tail = p.name.split("-", 1)[1]
            return int(tail) if tail.isdigit() else -1

        for ckpt in sorted(Path(output_dir).glob("checkpoint-*"), key=step_of, reverse=True):
            if is_complete_checkpoint(ckpt, require):
                return str(ckpt)
            log.warning("skipping incomplete checkpoint %s", ckpt)
        raise FileNotFoundError(f"no complete checkpoint-N dir in {output_dir} to resume from")
    if not Path(value).is_dir():
        raise FileNotFoundError(f"checkpoint not found: {value}")
    return value


def load_finished(trainer, checkpoint: str | os.PathLike):
    """The trainer as train() would leave it at the end of a run whose last checkpoint is `checkpoint`: its weights
    and state (the best model's weights where load_best_model_at_end), and train()'s result (no training loss:
    this process trained no step)."""
    from transformers.trainer_callback import TrainerState
    from transformers.trainer_utils import TrainOutput

    trainer._load_from_checkpoint(str(checkpoint))  # transformers' own loader (weights, safetensors)
    trainer.state = TrainerState.load_from_json(str(Path(checkpoint) / "trainer_state.json"))
    if trainer.args.load_best_model_at_end and trainer.state.best_model_checkpoint:
        trainer._load_best_model()
    return TrainOutput(trainer.state.global_step, None, {})


def reached_the_end(trainer, checkpoint: str | os.PathLike) -> bool:
    """Whether `trainer`'s run ends at `checkpoint`'s step: its max_steps where set, else (a run sized in epochs)
    the total the Trainer computes for this run's epochs, data and batch size."""
    step = checkpoint_step(checkpoint)
    if trainer.args.max_steps > 0:
        return trainer.args.max_steps <= step
    # transformers' own count (ceil(epochs x update steps per epoch)); fractional epochs would otherwise take a step
    # past the end
    total = trainer.set_initial_training_values(trainer.args, trainer.get_train_dataloader())[-1]
    return 0 < total <= step


def checkpoint_step(checkpoint: str | os.PathLike) -> int:
    """The global step a TRL checkpoint was written at."""
    return json.loads((Path(checkpoint) / "trainer_state.json").read_text())["global_step"]
