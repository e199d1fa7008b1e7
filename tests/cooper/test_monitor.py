"""HackingMonitor: flags a rising RM reward with falling rule accuracy, and nothing else."""

import logging

from cooper_rl.cooper.monitor import HackingMonitor


def test_fires_on_rising_reward_and_falling_accuracy(caplog):
    mon = HackingMonitor(window=10, reward_rise=0.1, acc_drop=0.05)
    flags = []
    with caplog.at_level(logging.WARNING, logger="cooper_rl.cooper.monitor"):
        for t in range(20):
            flags.append(mon.update(reward=0.3 + 0.03 * t, accuracy=0.6 - 0.015 * t))
    assert not any(flags[:9])  # no verdict before a full window
    assert all(flags[9:]) and mon.n_flags == 11
    assert "reward hacking" in caplog.text


def test_quiet_on_healthy_runs():
    for reward, acc in [
        (lambda t: 0.5 + 0.02 * t, lambda t: 0.4 + 0.02 * t),  # both rise: learning
        (lambda t: 0.5 - 0.01 * t, lambda t: 0.6 - 0.01 * t),  # both fall
        (lambda t: 0.5 + 0.005 * t, lambda t: 0.6 - 0.001 * t),
    ]:  # below the thresholds
        mon = HackingMonitor(window=10, reward_rise=0.1, acc_drop=0.05)
        assert not any(mon.update(reward(t), acc(t)) for t in range(30))


def test_state_roundtrip():
    a = HackingMonitor(window=4)
    for t in range(6):
        a.update(0.1 * t, 0.5)
    b = HackingMonitor(window=4)
    b.load_state_dict(a.state_dict())
    assert list(b.history) == list(a.history) and b.n_flags == a.n_flags
