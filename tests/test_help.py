"""`cooper X --help` is documentation: every option of every subcommand has a help text."""

import dataclasses
import importlib
import re

import pytest

from cooper_rl.cli import COMMANDS, main


@pytest.mark.parametrize("name", list(COMMANDS))
def test_every_option_has_help(name, capsys):
    module, cls_name, *_ = COMMANDS[name]
    cls = getattr(importlib.import_module(f"cooper_rl.{module}"), cls_name)
    fields = dataclasses.fields(cls)
    missing = [f.name for f in fields if not str(f.metadata.get("help", "")).strip()]
    assert not missing, f"cooper {name}: options without help text: {missing}"
    with pytest.raises(SystemExit) as e:
        main([name, "--help"])
    assert e.value.code == 0
    out = capsys.readouterr().out
    unlisted = [f.name for f in fields if not re.search(rf"(?<![\w-])--{re.escape(f.name)}(?!\w)", out)]
    assert not unlisted, f"cooper {name} --help does not list: {unlisted}"
    for f in fields:  # argparse prints each help text (wrapped) under its option
        assert f.metadata["help"].split()[0] in out, f"cooper {name} --help: no help text shown for --{f.name}"
