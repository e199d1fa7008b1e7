"""The Cooper method (arXiv 2508.05613): the reward model and its co-optimization with the policy.

reward_model  VerifyRM: a reference-based sequence classifier, reward = sigmoid(logit)
rewards       reward callables for TRL: rule, frozen RM, Cooper (RM scored, then updated)
step          one RM update per RL step: positives, negatives, -logsigmoid(s_pos - s_neg)
negatives     wrong solutions made from correct ones (offline corruption, assistant LLMs)
monitor       reward-hacking monitor
"""
