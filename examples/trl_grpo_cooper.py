"""Cooper as a library in a plain TRL script: GRPOTrainer whose reward is a VerifyRM that is co-optimized on the
fly (scored before, then updated on a verified rollout vs a wrong rewrite of it, every reward call).

  python examples/trl_grpo_cooper.py                               # embedded SmolLM2-135M policy, the shipped RM
  python examples/trl_grpo_cooper.py --policy Qwen/Qwen2.5-1.5B-Instruct --rm runs/my-verifyrm --max_steps 200  # your own RM dir
Negatives from an assistant LLM instead (the paper's): make_negative_generator("api", "openai:MODEL@http://HOST:PORT/v1").
"""

import argparse

from datasets import Dataset
from trl import GRPOConfig, GRPOTrainer

from cooper_rl import CooperReward, VerifyRM, chat_messages, load_problems, make_negative_generator, resolve_model

ap = argparse.ArgumentParser()
ap.add_argument("--policy", default="smollm2-135m-instruct")  # a registry name, local dir or hub id
ap.add_argument("--rm", default="verifyrm")  # the shipped VerifyRM, a trained VerifyRM dir, or a backbone
ap.add_argument("--data", default="builtin:train:64")  # or a .jsonl/.parquet file with question/answer columns
ap.add_argument("--max_steps", type=int, default=10)
ap.add_argument("--output_dir", default="results/example")
args = ap.parse_args()

problems = load_problems(args.data).problems
dataset = Dataset.from_list(  # TRL passes the extra columns (question, reference) to the reward
    [{"prompt": chat_messages(p.question), "question": p.question, "reference": p.answer} for p in problems]
)
rm = VerifyRM.from_pretrained(args.rm, device="cpu", trainable_adapter=True)  # a LoRA RM: adapter + head train
rm.configure_optimizer(lr=1e-5)  # the paper's RM learning rate
reward = CooperReward(rm, make_negative_generator("corrupt"), group_size=4)  # offline negatives, no assistant
config = GRPOConfig(
    output_dir=args.output_dir, max_steps=args.max_steps, num_generations=4, per_device_train_batch_size=8,
    max_completion_length=128, beta=1e-3, learning_rate=1e-6, logging_steps=1, report_to="none", use_cpu=True,
)  # fmt: skip
GRPOTrainer(model=resolve_model(args.policy), reward_funcs=[reward], args=config, train_dataset=dataset).train()
print("last reward call:", {k: v for k, v in reward.last_metrics.items() if not k.startswith("time/")})
