"""Sandbox server for symbolic (Math-Verify / sympy) checks; run as a script by cooper_rl.verify.

Protocol: one JSON request per stdin line, {"op": "match"|"parse", "a": str, "b": str, "timeout": float};
one reply per stdout line, "1" (true), "0" (false) or "t" (no verdict: the check timed out or its worker crashed). The server imports math_verify
once, warms it up, and fork()s a worker process that runs the checks; when a check passes its deadline
(stuck in C code such as a huge integer power, or eating memory) the worker is SIGKILLed and a fresh one
is forked for the next request, so nothing can take the server down. The server exits when stdin closes
(its client died). Deliberately imports nothing from cooper_rl.
"""

import json
import logging
import os
import re
import resource
import select
import signal
import sys
import time

import latex2sympy2_extended.math_normalization as normalization
from math_verify import ExprExtractionConfig, LatexExtractionConfig, parse, verify

logging.getLogger("math_verify").setLevel(logging.CRITICAL)  # no "timeout disabled" warnings


class Units:
    """Math-Verify's normalisation strips a trailing unit from an answer ("5 m" -> 5, "3 hours" -> 3), and its units
    include single letters and pairs (t, m, s, g, h, d, l, c, ab, ...). Against an algebraic reference those are
    variables: 4t^2 - 6t read as 4t^2 - 6 and -9.8 t as -9.8, so an answer without the term or factor matched it. check
    sets `strip` per comparison: as Math-Verify does where the reference has no letter outside LaTeX commands and
    \\text{} (a number: "5 m" still equals 5), never where it has one (\\text{} units are stripped either way)."""

    strip = True

    def __init__(self, regex):
        self.regex = regex

    def sub(self, repl, text, count=0):
        return self.regex.sub(repl, text, count) if self.strip else text


if not isinstance(normalization.units_regex, Units):  # the name normalize_latex looks up at each call
    normalization.units_regex = Units(normalization.units_regex)
TEXT = re.compile(r"\\(?:text|mathrm|mbox|textbf|mathit)\s*\{[^{}]*\}|\\[A-Za-z]+")


def algebraic(answer: str) -> bool:
    """Whether an answer has a letter outside LaTeX commands and their \\text{} (a variable, not only units)."""
    return re.search("[A-Za-z]", TEXT.sub("", answer)) is not None


def misread(answer: str) -> bool:
    """Whether raw Math-Verify, which strips a trailing unit from every answer, reads an algebraic answer otherwise
    than `check` does (which keeps its letters): only verdicts against such a reference can differ between the two."""
    if not algebraic(answer):
        return False

    def read(strip: bool) -> str:
        normalization.units_regex.strip = strip
        try:
            return str(parse_answer(answer))
        except TimeoutError:  # a caller's deadline (SIGALRM) ends the whole question
            raise
        except Exception as e:  # a parse error reads as itself, the same either way unless only one side fails
            return f"error: {type(e).__name__}"
        finally:
            normalization.units_regex.strip = True

    return read(True) != read(False)


CONFIG = [LatexExtractionConfig(), ExprExtractionConfig()]
WORKER_MEMORY = 4 << 30  # bytes of address space a worker may use
MAX_SERVED = 500  # checks per worker before it is replaced (bounds cache/memory growth)
# Checks run once before serving, so that sympy's lazy imports and caches are warm in every forked worker
# (a cold first comparison costs ~0.4 s, a warm one ~10-50 ms).
WARMUP = [
    ("\\frac{1}{2}", "0.5"),
    ("\\frac{\\pi}{3}", "\\pi/2"),
    ("3\\sqrt{2}", "\\sqrt{5}"),
    ("(x+1)^2", "x^2+2x+1"),
    ("\\{1,2\\}", "\\{2,1\\}"),
    ("x=5", "5"),
    ("(1,2)", "[1,2)"),
    ("50\\%", "0.5"),
    ("x < 3", "x \\leq 3"),
    ("\\sin^2 x+\\cos^2 x", "1"),
    ("\\log_2 8", "e^{3}"),
    ("\\begin{pmatrix}1\\\\2\\end{pmatrix}", "(1,2)"),
    ("\\text{Monday}", "Monday"),
    ("2^{10}", "10!"),
    ("\\infty", "-\\infty"),
    ("1.5", "a+b"),
]


def parse_answer(s):
    """Math-Verify parse of an already-extracted answer (wrapped in \\boxed{} so LaTeX extraction finds it)."""
    return parse("\\boxed{" + s + "}", CONFIG, fallback_mode="no_fallback", parsing_timeout=None)


def check(op, a, b):
    """match: a (prediction) is equivalent to b (gold); parse: a parses to a non-empty result."""
    if op == "parse":
        return bool(parse_answer(a))
    normalization.units_regex.strip = not algebraic(b)
    try:
        pred, gold = parse_answer(a), parse_answer(b)
    finally:
        normalization.units_regex.strip = True
    return bool(pred and gold and verify(gold, pred, timeout_seconds=None))


def start_worker():
    """Fork a worker from the warm server: it answers requests (JSON lines) on its own pipes, one byte each."""
    req_r, req_w = os.pipe()
    res_r, res_w = os.pipe()
    pid = os.fork()
    if pid == 0:  # worker: never returns, exits without running the server's cleanup
        try:
            os.close(req_w)
            os.close(res_r)
            resource.setrlimit(resource.RLIMIT_AS, (WORKER_MEMORY, WORKER_MEMORY))
            for line in os.fdopen(req_r, "rb"):
                req = json.loads(line)
                try:
                    ok = check(req["op"], req["a"], req.get("b", ""))
                except Exception:
                    ok = False
                os.write(res_w, b"1" if ok else b"0")
        finally:
            os._exit(0)
    os.close(req_r)
    os.close(res_w)
    return pid, req_w, res_r


def stop_worker(worker):
    """SIGKILL a worker and reap it."""
    pid, req_w, res_r = worker
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    os.waitpid(pid, 0)
    os.close(req_w)
    os.close(res_r)


def main():
    """Serve requests from stdin until EOF, through a worker that is replaced after a timeout or crash."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    for a, b in WARMUP:
        try:
            check("match", a, b)
        except Exception:
            pass
    out = sys.stdout.buffer
    out.write(b"ready\n")
    out.flush()
    worker, served, stdin = None, 0, sys.stdin.fileno()
    for line in sys.stdin.buffer:
        reply = b""
        try:
            deadline = time.monotonic() + float(json.loads(line)["timeout"])
            if worker is None:
                worker, served = start_worker(), 0
            os.write(worker[1], line)
            ready = select.select([worker[2], stdin], [], [], max(0.0, deadline - time.monotonic()))[0]
            if worker[2] in ready:
                reply = os.read(worker[2], 1)  # b"" if the worker died
            elif stdin in ready:  # EOF: the client died while waiting (it sends nothing else meanwhile)
                break
            served += 1
        except Exception:
            pass
        if worker is not None and (not reply or served >= MAX_SERVED):
            stop_worker(worker)  # timed out, crashed, or due for recycling: the next request forks a fresh one
            worker = None
        try:
            out.write(reply + b"\n" if reply in (b"1", b"0") else b"t\n")
            out.flush()
        except OSError:  # client gone
            break
    if worker is not None:
        stop_worker(worker)


if __name__ == "__main__":
    main()
