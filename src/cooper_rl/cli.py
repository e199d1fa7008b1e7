"""The ``cooper`` command: ``cooper SUBCOMMAND [--config run.yaml] [--flag value ...]``.

Each subcommand has one config dataclass. Values come from the dataclass defaults, then from the
YAML file given with ``--config``, then from command-line flags (the TRL/transformers convention,
parsed with ``transformers.HfArgumentParser``).
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import sys
import warnings
from pathlib import Path

import yaml


def parse_config(cls, argv: list[str], prog: str = "cooper"):
    """An instance of dataclass ``cls`` from defaults < ``--config`` YAML < CLI flags."""
    from transformers import HfArgumentParser

    positional = getattr(cls, "POSITIONAL", None)  # leading bare arguments fill this list field
    if positional:
        n = next((i for i, a in enumerate(argv) if a.startswith("-")), len(argv))
        if n:
            argv = [f"--{positional}", *argv[:n], *argv[n:]]
    pre = argparse.ArgumentParser(add_help=False)
    pre.add_argument("--config", default=None)
    known, rest = pre.parse_known_args(argv)
    parser = HfArgumentParser(cls, prog=prog)
    parser.add_argument("--config", default=None, help="YAML file with values for any of the flags below.")
    if known.config:
        path = Path(known.config)
        if not path.is_file():
            raise SystemExit(f"{prog}: config file not found: {path}")
        values = yaml.safe_load(path.read_text()) or {}
        if not isinstance(values, dict):
            raise SystemExit(f"{prog}: {path} must hold a mapping of option: value")
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(values) - names)
        if unknown:
            raise SystemExit(f"{prog}: {path}: unknown option(s) {unknown}; valid: {sorted(names)}")
        parser.set_defaults(**values)
    # argv still holds --config so that --help lists it; the extra namespace it yields is dropped
    cfg, *_, remaining = parser.parse_args_into_dataclasses(args=argv, return_remaining_strings=True)
    if remaining:
        parser.error(f"unrecognized arguments: {' '.join(remaining)}")
    return cfg


COMMANDS = {  # name: (module, config dataclass, run function, description)
    "eval": ("evaluate", "EvalConfig", "run_eval", "avg@k / pass@k evaluation of a policy"),
    "data": ("data", "DataConfig", "run_data", "load, validate and normalize problems to jsonl"),
    "filter": (
        "difficulty",
        "FilterConfig",
        "run_filter",
        "keep training prompts the starting policy solves sometimes (pass rate in a band)",
    ),
    "collect": (
        "rm.collect",
        "CollectConfig",
        "run_collect",
        "sample completions for RM data (HF models, OpenAI-compatible endpoints)",
    ),
    "label": ("rm.label", "LabelConfig", "run_label", "hybrid labels: rule verifier + LLM judge"),
    "rm-data": (
        "rm.build",
        "RMDataConfig",
        "run_rm_data",
        "VerifyRM data: answer-format variants, traps and labelled real completions, stats per category",
    ),
    "train-rm": ("rm.train", "TrainRMConfig", "run_train_rm", "train a VerifyRM (BCE) with the HF Trainer"),
    "eval-rm": (
        "rm.evaluate",
        "EvalRMConfig",
        "run_eval_rm",
        "evaluate a VerifyRM vs the rule verifier on labelled rows",
    ),
    "sft": (
        "rl.sft",
        "SFTRunConfig",
        "run_sft",
        "supervised warm-up of the policy on worked solutions (TRL SFTTrainer)",
    ),
    "rl": ("rl.train", "RLConfig", "run_rl", "GRPO (TRL) with rule, static-RM or Cooper rewards"),
    "plot": ("plot", "PlotConfig", "run_plot", "training-dynamics figure of one or more rl runs"),
    "demo": ("demo", "DemoConfig", "run_demo", "offline demo on the embedded defaults"),
}


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``cooper`` console command."""
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] in ("-h", "--help") or argv[0] not in COMMANDS:
        print("usage: cooper {" + ",".join(COMMANDS) + "} [--config FILE.yaml] [--flag value ...]\n")
        for name, (*_, desc) in COMMANDS.items():
            print(f"  {name:<9} {desc}")
        if argv and argv[0] not in ("-h", "--help"):
            print(f"\ncooper: unknown command {argv[0]!r}", file=sys.stderr)
            return 2
        return 0
    module, cls_name, run_name, _ = COMMANDS[argv[0]]
    # transformers 5 renames gradient_checkpointing; TRL 1.16 still uses the old names internally. The notice is
    # about library internals, not about anything a cooper user set: keep it off the console.
    warnings.filterwarnings("ignore", message=r".*gradient_checkpointing.*deprecated", category=FutureWarning)
    mod = importlib.import_module(f"cooper_rl.{module}")  # imported only when its command runs
    cfg = parse_config(getattr(mod, cls_name), argv[1:], prog=f"cooper {argv[0]}")
    run = getattr(mod, run_name)
    from cooper_rl.io import DataError, TrainingInterrupted
    from cooper_rl.models import ModelNotAvailableError

    try:
        run(cfg)
    except (DataError, ModelNotAvailableError, FileNotFoundError) as e:  # user errors: message, no traceback
        print(f"cooper {argv[0]}: error: {e}", file=sys.stderr)
        return 2
    except TrainingInterrupted as e:  # a signal stopped it after saving a checkpoint: resumable, not finished
        print(f"cooper {argv[0]}: {e}", file=sys.stderr)
        return 143
    return 0


if __name__ == "__main__":
    sys.exit(main())
