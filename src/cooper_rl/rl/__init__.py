"""Policy training on TRL: ``cooper rl`` (GRPO with rule, static-RM or Cooper rewards) and ``cooper sft``.

config         RLConfig (every option of cooper rl), the fields a resume must keep
train          dataset, reward and GRPOTrainer assembly; run_rl
checkpoint     the RM and the monitor inside TRL checkpoints, log trimming on resume
callbacks      step profiler, console, checkpoints at generation-batch ends, monitor stop, periodic evaluation
rollout_speed  bf16 rollouts, padding trimming, sampler log-probs (exact savings and precision options)
trl_internals  the only module that touches TRL/accelerate private attributes
sft            supervised warm-up on worked solutions
"""
