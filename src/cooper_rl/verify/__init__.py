"""Rule verifier: extract a completion's final answer and check it against a reference answer.

Pipeline for one (completion, reference) pair:
  1. extract_answer: last \\boxed{...} (an empty or unclosed last box means "no answer"), else the text
     after the last "####", else after the last "answer is"; lenient mode falls back to the last number.
     Linear-time string scans only (no backtracking-prone regexes), so 1 MB inputs are cheap.
  2. Numeric fast path: if both answers are plain numbers after light normalisation ($, \\%, thousands
     commas, \\text{units}, \\frac{a}{b}, a/b, ...), compare exactly with fractions.Fraction in-process.
  3. Pre-screens reject pathological answers (too long, deeply nested, power towers, huge exponents or
     factorials) before they reach sympy.
  4. Everything else goes to a Math-Verify sandbox server (cooper_rl/verify/sandbox.py, started lazily with
     subprocess.Popen, one per client process) whose forked worker runs the checks; a worker that passes
     the deadline is SIGKILLed and replaced by a fresh fork (~2 ms). The client also waits with a deadline, so a check never hangs, in any thread or in daemonic
     multiprocessing workers. Server start-up (~1 s, once per process) is not counted against the timeout.
     Math-Verify strips trailing units, single letters among them (t, m, s, g, h, ...); against a reference with
     a variable the sandbox keeps them (4t^2 - 6 does not equal 4t^2 - 6t; "5 m" still equals 5).
"""

from __future__ import annotations

import atexit
import json
import os
import re
import select
import signal
import subprocess
import sys
import threading
import time
from fractions import Fraction

DEFAULT_TIMEOUT = 3.0
MAX_ANSWER_LEN = 1000  # longer extracted answers are never correct
MAX_NESTING = 12  # deepest allowed nesting of {}, () and []
MAX_CARETS = 20  # most exponents allowed in one answer
STARTUP_TIMEOUT = 60.0  # seconds to wait for a sandbox server to import math_verify
REPLY_GRACE = 0.5  # extra seconds the client waits beyond the server-side deadline

# ---------------------------------------------------------------------------------------------------
# Extraction

_BRACE_RE = re.compile(r"\\[{}\\]|[{}]")  # escaped braces/backslashes are skipped, not counted
_BOXED_TOKEN_RE = re.compile(r"\s+([^\s$]+)")  # "\boxed 5"
_SENTENCE_END_RE = re.compile(r"\.(?:\s|$)")
_LAST_NUMBER_RE = re.compile(r"(?<![\w.])-?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:/\d+)?")


def _clean(ans: str) -> str | None:
    """Strip whitespace, surrounding $ and markdown bold, and a trailing period; None if nothing is left."""
    ans = ans.strip().strip("$*").strip()
    if ans.endswith("."):
        ans = ans[:-1].rstrip()
    return ans or None


def _last_boxed(text: str) -> str | None:
    """Content of the last \\boxed{...} (nested braces ok); "" if that box is empty or unclosed; None if no box."""
    i = text.rfind("\\boxed")
    if i < 0:
        return None
    j = i + len("\\boxed")
    while j < len(text) and text[j] in " \t":
        j += 1
    if j < len(text) and text[j] == "{":
        depth = 0
        for m in _BRACE_RE.finditer(text, j):
            c = m.group()
            if c == "{":
                depth += 1
            elif c == "}":
                depth -= 1
                if depth == 0:
                    return _clean(text[j + 1 : m.start()]) or ""
        return ""  # unclosed (truncated) box
    m = _BOXED_TOKEN_RE.match(text, i + len("\\boxed"))
    return (_clean(m.group(1)) or "") if m else ""


def _after_answer_is(text: str) -> str | None:
    """Answer after the last "answer is" (any case): a $...$ or \\(...\\) span, else the rest of the sentence."""
    i = text.lower().rfind("answer is")
    if i < 0:
        return None
    rest = text[i + len("answer is") : i + len("answer is") + 2 * MAX_ANSWER_LEN].lstrip(" \t\n:*")
    for open_, close in (("$$", "$$"), ("$", "$"), ("\\(", "\\)"), ("\\[", "\\]")):
        if rest.startswith(open_):
            end = rest.find(close, len(open_))
            if end >= 0:
                return _clean(rest[len(open_) : end])
            break
    line = rest.partition("\n")[0]
    m = _SENTENCE_END_RE.search(line)
    return _clean(line[: m.start()] if m else line)


def extract_answer(completion: str, mode: str = "strict") -> str | None:
    """Final answer of a completion, or None.

    strict: the last \\boxed{...} (None if that box is empty or unclosed), else the text after the last
    "####", else after the last "The answer is" / "the final answer is". lenient: strict first, else the
    last number in the text (integer, decimal, thousands separators, negative, a/b).
    """
    if not isinstance(completion, str):
        raise TypeError(f"completion must be str, got {type(completion).__name__}")
    if mode not in ("strict", "lenient"):
        raise ValueError(f"mode must be 'strict' or 'lenient', got {mode!r}")
    boxed = _last_boxed(completion)
    if boxed is not None:
        return boxed or None  # an empty box is an explicit non-answer, in both modes
    i = completion.rfind("####")
    if i >= 0 and (ans := _clean(completion[i + 4 : i + 4 + 2 * MAX_ANSWER_LEN].lstrip().partition("\n")[0])):
        return ans
    ans = _after_answer_is(completion)
    if ans is not None or mode == "strict":
        return ans
    numbers = _LAST_NUMBER_RE.findall(completion)
    return numbers[-1] if numbers else None


# ---------------------------------------------------------------------------------------------------
# Numeric fast path and pre-screens

_NUM = r"[+-]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d*)?|[+-]?\.\d+"
_NUMBER_RE = re.compile(rf"({_NUM})(?:\s*/\s*({_NUM}))?")
_FRAC_RE = re.compile(rf"([+-]?)\\[dt]?frac\s*\{{\s*({_NUM})\s*\}}\s*\{{\s*({_NUM})\s*\}}")
_TEXT_RE = re.compile(r"\\(?:text|textbf|textrm|textit|mathrm|mbox)\s*\{([^{}]*)\}")
_VAR_EQ_RE = re.compile(r"[A-Za-z]\s*=\s*")  # "x = 5"
_UNIT_WORDS_RE = re.compile(r"\s+[A-Za-z]{2,}[A-Za-z ]*$")  # "18 apples"
_STRIP_TOKENS = ("\\$", "$", "\\,", "\\!", "\\;", "\\:", "\\ ", "~", "^\\circ", "^{\\circ}", "°")
_TOWER_RE = re.compile(r"\d\s*\}?\s*\^\s*\{?\s*\(?\s*\d+\s*\}?\s*\^")  # 9^{9^{9}}
_BIG_EXPONENT_RE = re.compile(r"\^\s*\{?\s*\(?\s*[+-]?\d{5,}")  # 2^{100000}
_BRACKET_RE = re.compile(r"[{}()\[\]]")
_BIG_FACTORIAL_RE = re.compile(r"\d{5,}\s*\}?\s*\)?\s*!")  # 100000!


def _to_number(s: str) -> tuple[Fraction, bool] | None:
    """(value, had_percent) if s is a plain number after light LaTeX/unit normalisation, else None."""
    if len(s) > 100:
        return None
    s = _TEXT_RE.sub(r" \1 ", s).replace("{,}", ",")
    for tok in _STRIP_TOKENS:
        s = s.replace(tok, "")
    pct = "%" in s
    s = s.replace("\\%", "").replace("%", "").strip()
    if s.endswith("."):
        s = s[:-1]
    s = _UNIT_WORDS_RE.sub("", s.strip())
    if m := _VAR_EQ_RE.match(s):
        s = s[m.end() :]
    try:
        if m := _NUMBER_RE.fullmatch(s):
            num, den = m.group(1), m.group(2) or "1"
            sign = ""
        elif m := _FRAC_RE.fullmatch(s):
            sign, num, den = m.groups()
        else:
            return None
        value = Fraction(num.replace(",", "")) / Fraction(den.replace(",", ""))
    except (ValueError, ZeroDivisionError):
        return None
    return (-value if sign == "-" else value), pct


def _pathological(s: str) -> bool:
    """Cheap screen for answers that are never sensible but can make sympy hang or eat memory."""
    if "\x00" in s or s.count("^") > MAX_CARETS:
        return True
    if _TOWER_RE.search(s) or _BIG_EXPONENT_RE.search(s) or _BIG_FACTORIAL_RE.search(s):
        return True
    depth = 0
    for m in _BRACKET_RE.finditer(s):
        depth += 1 if m.group() in "{([" else -1
        if depth > MAX_NESTING:
            return True
    return False


def _quick_match(pred: str, gold: str) -> bool | None:
    """In-process verdict (pre-screens, numeric fast path, identical strings), or None if sympy is needed."""
    pred, gold = pred.strip(), gold.strip()
    if not pred or not gold or len(pred) > MAX_ANSWER_LEN or len(gold) > MAX_ANSWER_LEN:
        return False
    a, b = _to_number(pred), _to_number(gold)
    if a is not None and b is not None:
        (x, xpct), (y, ypct) = a, b
        # like Math-Verify, "50%" matches both 50 and 0.5
        return x == y or (xpct and x / 100 == y) or (ypct and y / 100 == x)
    if _pathological(pred) or _pathological(gold):
        return False
    return True if pred == gold else None


# ---------------------------------------------------------------------------------------------------
# Sandbox client

_SANDBOX_CMD = [
    sys.executable,
    "-c",  # run the server by path, without cooper_rl/__init__ or the cwd on sys.path
    "import runpy, sys; sys.path.pop(0); runpy.run_path(sys.argv[1], run_name='__main__')",
    os.path.join(os.path.dirname(os.path.abspath(__file__)), "sandbox.py"),
]


class _Sandbox:
    """Client for one sandbox server process; thread-safe, lazily (re)started, killed on timeout."""

    def __init__(self):
        self.lock = threading.Lock()
        self.proc = None
        self.buf = b""

    def _readline(self, deadline: float) -> bytes | None:
        fd = self.proc.stdout.fileno()
        while b"\n" not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                return None
            chunk = os.read(fd, 4096)
            if not chunk:
                return None
            self.buf += chunk
        line, _, self.buf = self.buf.partition(b"\n")
        return line

    def kill(self):
        """Kill the server (if running); the next call starts a new one."""
        if self.proc is not None:
            try:  # the server leads its own process group: this also kills its worker
                os.killpg(self.proc.pid, signal.SIGKILL)
            except OSError:
                pass
            self.proc.wait()
            self.proc.stdin.close()
            self.proc.stdout.close()
        self.proc, self.buf = None, b""

    def call(self, op: str, a: str, b: str, timeout: float) -> bool:
        """Run one check in the server; False on timeout or any failure."""
        return self.verdict(op, a, b, timeout) is True

    def verdict(self, op: str, a: str, b: str, timeout: float) -> bool | None:
        """Run one check in the server: True, False, or None when it gave no verdict (timeout, crash)."""
        with self.lock:
            try:
                if self.proc is None or self.proc.poll() is not None:
                    self.kill()
                    self.proc = subprocess.Popen(
                        _SANDBOX_CMD, stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0, start_new_session=True
                    )
                    if self._readline(time.monotonic() + STARTUP_TIMEOUT) != b"ready":
                        raise RuntimeError("cooper_rl sandbox server failed to start")
                req = json.dumps({"op": op, "a": a, "b": b, "timeout": timeout}).encode() + b"\n"
                self.proc.stdin.write(req)
                reply = self._readline(time.monotonic() + timeout + REPLY_GRACE)
                if reply is None:
                    raise TimeoutError
                return {b"1": True, b"0": False}.get(reply)
            except Exception:
                self.kill()
                return None


_SANDBOXES: list[_Sandbox] = []
_SANDBOXES_LOCK = threading.Lock()


def _sandboxes(n: int) -> list[_Sandbox]:
    """The first n sandbox clients of this process (created on demand; servers start on first use)."""
    with _SANDBOXES_LOCK:
        while len(_SANDBOXES) < n:
            _SANDBOXES.append(_Sandbox())
        return _SANDBOXES[:n]


def _forget_sandboxes_after_fork():
    """In a forked child: drop (do not kill) the parent's servers; the child starts its own when needed."""
    global _SANDBOXES_LOCK
    _SANDBOXES_LOCK = threading.Lock()
    for sb in _SANDBOXES:
        if sb.proc is not None:
            sb.proc.stdin.close()
            sb.proc.stdout.close()
            sb.proc.returncode = 0  # not our child: keep Popen.__del__ from trying to reap it
    _SANDBOXES.clear()


os.register_at_fork(after_in_child=_forget_sandboxes_after_fork)
atexit.register(lambda: [sb.kill() for sb in _SANDBOXES])


# ---------------------------------------------------------------------------------------------------
# Public API


def is_parseable(answer: str, timeout: float = DEFAULT_TIMEOUT) -> bool:
    """True if a reference answer can be understood: a plain number, or something Math-Verify parses."""
    if not isinstance(answer, str):
        raise TypeError(f"answer must be str, got {type(answer).__name__}")
    s = answer.strip()
    if not s or len(s) > MAX_ANSWER_LEN or _pathological(s):
        return False
    if _to_number(s) is not None:
        return True
    return _sandboxes(1)[0].call("parse", s, "", timeout)


def plain_number(answer: str) -> Fraction | None:
    """The value of an extracted answer that is a plain number as the numeric fast path reads it (thousands
    separators, decimals, fractions a/b, units and $ dropped; a % sign is ignored), else None."""
    x = _to_number(answer.strip())
    return None if x is None else x[0]


def numbers_differ(pred: str, gold: str) -> bool:
    """True only if both extracted answers are plain numbers (as the numeric fast path reads them: thousands
    separators, decimals, fractions a/b, %) and they are not equal: a wrong verdict no symbolic check could revise."""
    a, b = _to_number(pred.strip()), _to_number(gold.strip())
    return a is not None and b is not None and _quick_match(pred, gold) is False


def answers_match(pred: str, gold: str, timeout: float = DEFAULT_TIMEOUT) -> bool:
    """True if two already-extracted answers are mathematically equivalent (False on timeout or error)."""
    if not isinstance(pred, str) or not isinstance(gold, str):
        raise TypeError("pred and gold must be str")
    try:
        quick = _quick_match(pred, gold)
    except Exception:
        return False
    return quick if quick is not None else _sandboxes(1)[0].call("match", pred.strip(), gold.strip(), timeout)


def answers_verdict(pred: str, gold: str, timeout: float = DEFAULT_TIMEOUT) -> bool | None:
    """answers_match that tells a refuted match (False) from no verdict (None: the check timed out or failed), for
    labels that must not take a timeout for a difference."""
    try:
        quick = _quick_match(pred, gold)
    except Exception:
        return None
    return quick if quick is not None else _sandboxes(1)[0].verdict("match", pred.strip(), gold.strip(), timeout)


def verify(completion: str, reference: str, mode: str = "strict", timeout: float = DEFAULT_TIMEOUT) -> bool:
    """True if the completion's final answer is equivalent to the reference; never hangs, never raises on str input."""
    if not isinstance(completion, str) or not isinstance(reference, str):
        raise TypeError("completion and reference must be str")
    pred = extract_answer(completion, mode)
    return pred is not None and answers_match(pred, reference, timeout)


def verify_batch(
    completions, references, mode="strict", timeout=DEFAULT_TIMEOUT, workers: int | None = None
) -> list[bool]:
    """[verify(c, r) for each pair]: numeric checks in-process, symbolic ones spread over `workers` sandboxes."""
    return [ok for _, ok in verify_batch_answers(completions, references, mode, timeout, workers)]


def verify_batch_answers(
    completions, references, mode="strict", timeout=DEFAULT_TIMEOUT, workers: int | None = None
) -> list[tuple[str | None, bool]]:
    """[(extract_answer(c), verify(c, r)) for each pair]: verify_batch that also returns the extracted answers."""
    completions, references = list(completions), list(references)
    if len(completions) != len(references):
        raise ValueError(f"{len(completions)} completions but {len(references)} references")
    workers = max(1, workers or min(4, os.cpu_count() or 1))
    results = [False] * len(completions)
    preds: list[str | None] = [None] * len(completions)
    pending = []  # (index, pred, gold) needing sympy
    for i, (c, r) in enumerate(zip(completions, references)):
        if not isinstance(c, str) or not isinstance(r, str):
            raise TypeError("completions and references must be str")
        pred = preds[i] = extract_answer(c, mode)
        if pred is None:
            continue
        try:
            quick = _quick_match(pred, r)
        except Exception:
            continue
        if quick is None:
            pending.append((i, pred.strip(), r.strip()))
        else:
            results[i] = quick

    jobs = iter(pending)  # shared by the threads below; next() on a list iterator is atomic under the GIL

    def drain(sb: _Sandbox):
        for i, pred, gold in jobs:
            results[i] = sb.call("match", pred, gold, timeout)

    threads = [threading.Thread(target=drain, args=(sb,)) for sb in _sandboxes(min(workers, len(pending)))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return list(zip(preds, results))
