"""Reward-hacking monitor: the reward model's reward goes up while the rule verifier's accuracy goes down.

Over the last `window` steps, the mean of the second half is compared with the mean of the first half:

    flag = (reward_late - reward_early >= reward_rise) and (acc_early - acc_late >= acc_drop)

A flagged step logs a warning and shows up as metric `hacking_warning` = 1.
"""

from __future__ import annotations

import logging
from collections import deque

log = logging.getLogger(__name__)


class HackingMonitor:
    """Watches (mean reward, rule accuracy) per step and flags a rising reward with a falling accuracy."""

    def __init__(self, window: int = 20, reward_rise: float = 0.1, acc_drop: float = 0.05):
        if window < 2:
            raise ValueError("window must be at least 2 steps")
        self.window, self.reward_rise, self.acc_drop = window, reward_rise, acc_drop
        self.history: deque[tuple[float, float]] = deque(maxlen=window)
        self.n_flags = 0

    def update(self, reward: float, accuracy: float) -> bool:
        """Add one step; True (and a logging.warning) if the window shows reward up and accuracy down."""
        self.history.append((float(reward), float(accuracy)))
        if len(self.history) < self.window:
            return False
        half = self.window // 2
        early, late = list(self.history)[:half], list(self.history)[-half:]
        mean = lambda xs, k: sum(x[k] for x in xs) / len(xs)
        rise = mean(late, 0) - mean(early, 0)
        drop = mean(early, 1) - mean(late, 1)
        if rise >= self.reward_rise and drop >= self.acc_drop:
            self.n_flags += 1
            log.warning(
                "possible reward hacking: over the last %d steps the RM reward rose by %.3f while rule "
                "accuracy fell by %.3f",
                self.window,
                rise,
                drop,
            )
            return True
        return False

    def state_dict(self) -> dict:
        """The monitor's history and flag count (for checkpoints)."""
        return {"history": list(self.history), "n_flags": self.n_flags}

    def load_state_dict(self, state: dict) -> None:
        """Restore what state_dict returned."""
        self.history = deque((tuple(x) for x in state["history"]), maxlen=self.window)
        self.n_flags = int(state["n_flags"])
