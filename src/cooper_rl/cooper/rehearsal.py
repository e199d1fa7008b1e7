"""Rehearsal for the co-optimized RM (issue 106): each online update also fits labelled rows of the RM's own offline
training data, so it keeps its calibration on text unlike its policy's while it learns the policy's pairs.

Cooper's update (step.py) only sees (verified rollout, wrong rewrite) pairs of the current policy. Trained on them
alone the RM ranks them better, but its 0.5 threshold drifts on what it no longer sees (issue 67: a co-optimized RM
accepted 16-17 % of a labelled set's wrong rows at step 50, from 6 %, nearly all written by the base model).
With rehearsal, one update minimises

    L = mean over valid pairs of -log sigmoid(s(pos) - s(neg))  +  w * mean over R rows of BCE(s(x), y(x))

where the R rows (question, reference, completion, label) are drawn at random from the offline data at every update
(experience replay, as in continual learning). The draw is seeded and its state checkpointed with the RM's.
"""

from __future__ import annotations

import random


class Rehearsal:
    """Labelled rows ({question, reference, completion, label}; rm.data.load_rm_rows reads them from a file) drawn
    ``rows`` at a time, weighted ``weight`` in the RM update's loss."""

    def __init__(self, data: list[dict], rows: int = 16, weight: float = 1.0, seed: int = 0, name: str = "rows"):
        if rows < 1 or weight < 0:
            raise ValueError(f"rehearsal needs rows >= 1 and weight >= 0, got rows={rows}, weight={weight}")
        if not data:
            raise ValueError(f"{name}: no labelled rows to rehearse")
        self.data, self.rows, self.weight = list(data), rows, weight
        self.rng = random.Random(seed)

    def sample(self) -> dict:
        """{questions, references, completions, labels} of ``rows`` rows drawn without replacement (all of them if
        the file has fewer)."""
        picked = self.rng.sample(self.data, min(self.rows, len(self.data)))
        return {
            "questions": [r["question"] for r in picked],
            "references": [r["reference"] for r in picked],
            "completions": [r["completion"] for r in picked],
            "labels": [float(r["label"]) for r in picked],
        }

    def state_dict(self) -> dict:
        """The draw's RNG state (a resumed run draws what an uninterrupted one would)."""
        return {"rng": self.rng.getstate()}

    def load_state_dict(self, state: dict) -> None:
        """Restore state_dict's RNG state."""
        self.rng.setstate(state["rng"])
