"""Threshold recalibration for the co-optimized RM (issue 106): after each online update, the RM's decision threshold
rises just enough that it accepts no more of a fixed set of known negatives than it did at the start.

Cooper's pairwise loss, -log sigmoid(s(pos) - s(neg)), does not depend on where the scores sit, only on their
differences: trained on the policy's pairs the RM ranks them better while its 0.5 threshold drifts on text it no
longer sees (issue 67: 6 % -> 16-17 % of a labelled set's wrong rows accepted at step 50, mostly text written by
another model than the policy). Recalibration leaves the ranking alone and moves the threshold only:

    k0 = #{x in N : s_0(x) >= 0}                       (N: known negatives, e.g. wrong completions of other models
                                                        on training questions, labelled by the rule; s_0: the
                                                        starting RM's logits)
    after update t, if #{x in N : s_t(x) >= 0} > k0:   offset += tau, tau midway between the (k0+1)-th and the
                                                        k0-th highest logit (at least 1e-5 above the former), so k0
                                                        stay accepted (fewer where logits tie)

The offset is subtracted from every logit the RM gives (VerifyRM.offset, saved in its cooper_rm.json), so the reward
sigmoid(s - offset), the RM a run saves and a later evaluation of it all use the recalibrated threshold. It only
rises: the RM never becomes more lenient than it started on N.
"""

from __future__ import annotations

import random

import torch


class Recalibration:
    """At most ``rows`` known negatives (the label-0 rows of labelled data; a seeded draw, fixed for the run) whose
    accepted count the RM may not exceed after an update."""

    MARGIN = 0.05  # with k0 = 0: the threshold goes this far above the highest negative logit
    TIE = 1e-5  # the least distance of the threshold above the highest negative it rejects (logit units)

    def __init__(self, data: list[dict], rows: int = 256, seed: int = 0, name: str = "rows"):
        if rows < 1:
            raise ValueError(f"recalibration needs rows >= 1, got {rows}")
        negatives = [r for r in data if not r["label"]]
        if not negatives:
            raise ValueError(f"{name}: no rows labelled 0 (known negatives) to recalibrate on")
        self.rows = random.Random(seed).sample(negatives, min(rows, len(negatives)))
        self.allowed: int | None = None  # k0: how many of them the starting RM accepts

    def _logits(self, rm) -> torch.Tensor:
        """The RM's logits (minus its offset) of the known negatives, without grad, in eval mode, in batches of 64
        (memory bounded; the cost is the forwards: ~54 s for 256 long completions on a SmolLM2 RM, 2 cores, measured)."""
        return rm.eval_logits(*zip(*((r["question"], r["reference"], r["completion"]) for r in self.rows)))

    def start(self, rm) -> None:
        """Record k0 from the RM as it is now (the run's starting RM), once; a resumed run keeps its saved k0."""
        if self.allowed is None:
            self.allowed = int((self._logits(rm) >= 0).sum())

    def __call__(self, rm) -> dict:
        """After an RM update: raise rm.offset so that at most k0 known negatives are accepted. Returns metrics
        (share accepted before this shift, the shift, the total offset)."""
        if self.allowed is None:
            raise RuntimeError("Recalibration.start(rm) must see the starting RM before the first update")
        s = self._logits(rm)
        accepted = int((s >= 0).sum())
        shift = 0.0
        if accepted > self.allowed:
            a = torch.sort(s, descending=True).values
            k = self.allowed
            # at least TIE above a[k], so that row and any tied with it are rejected after float32 rounding too (ties:
            # fewer than k0 stay accepted)
            shift = float(a[0] + self.MARGIN) if k == 0 else max(float((a[k] + a[k - 1]) / 2), float(a[k]) + self.TIE)
            rm.offset += shift
        return {
            "recal_accepted": accepted / len(self.rows),
            "recal_allowed": self.allowed / len(self.rows),
            "recal_shift": shift,
            "recal_offset": rm.offset,
        }

    def state_dict(self) -> dict:
        """k0 (the RM's offset is saved with the RM)."""
        return {"allowed": self.allowed}

    def load_state_dict(self, state: dict) -> None:
        """Restore state_dict's k0."""
        self.allowed = state["allowed"]
