"""Building a VerifyRM offline: data, labels, training and evaluation.

collect   completions from local models and OpenAI-compatible endpoints (``cooper collect``)
label     hybrid labels: rule verifier + LLM judge (``cooper label``)
data      labelled-row loader and hard-negative augmentation of worked solutions
train     BCE training with the HF Trainer (``cooper train-rm``)
evaluate  RM metrics next to the rule verifier (``cooper eval-rm``)
"""
