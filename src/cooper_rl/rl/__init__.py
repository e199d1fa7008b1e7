"""Policy training on TRL: ``cooper rl`` (GRPO with rule, static-RM or Cooper rewards) and ``cooper sft``.

train          config, dataset, reward and GRPOTrainer assembly; run_rl
checkpoint     the RM inside TRL checkpoints, resuming, log trimming
callbacks      step profiler, fp32 rollouts under bf16 autocast, periodic evaluation
trl_internals  the only module that touches TRL/accelerate private attributes
sft            supervised warm-up on worked solutions
"""
