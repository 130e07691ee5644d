"""Bounded cost per line (issue 13): `near`/`not_near` windows and side lookups test each context line once per test,
however many hits' windows hold it."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from triage.input.read import read_text
from triage.library.rules import load_library
from triage.model import Event, Line, LogFile
from triage.scan import scanner as scanner_mod
from triage.scan.origins import Context
from triage.scan.scanner import Scanner

LIB = load_library()

TRACEBACK = [
    "Traceback (most recent call last):",
    '  File "/opt/slime/slime/backends/megatron_utils/model.py", line 412, in train_one_step',
    '  File "/usr/local/lib/python3.12/site-packages/torch/autograd/__init__.py", line 347, in backward',
]


def oom(i: int) -> str:
    return (f"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate {i % 97}.25 GiB. GPU {i % 8} has a total "
            f"capacity of 79.11 GiB of which {i % 13}.50 MiB is free.")


def scan_text(text: str, scanner: Scanner | None = None) -> Any:
    lf = LogFile(path="<t>", rel="train.log", kind="trainer")
    return (scanner or Scanner(LIB)).scan(lf, read_text(text.encode()))


def counting_near_tests(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """How many times each near / not_near regex is asked about a line, from now on."""
    calls: Counter[str] = Counter()
    real = Scanner._tester

    def counting(self: Scanner, pattern: Any) -> Any:
        test = real(self, pattern)
        return lambda line: (calls.update([pattern.pattern]), test(line))[1]

    monkeypatch.setattr(Scanner, "_tester", counting)
    return calls


def test_a_storm_of_near_identical_ooms_tests_each_line_once_per_near_regex(monkeypatch: pytest.MonkeyPatch) -> None:
    # 3 traceback lines, then 600 OOM lines differing in their numbers: each OOM line's window (60 before, 25 after)
    # holds up to 85 other lines; the rules' near / not_near regexes must each read a line at most once.
    n = 600
    text = "\n".join(TRACEBACK + [oom(i) for i in range(n)]) + "\n"
    calls = counting_near_tests(monkeypatch)
    res = scan_text(text)
    assert calls, "no near / not_near regex was asked"
    assert max(calls.values()) <= n + len(TRACEBACK)  # once per context line, not once per line and window
    by_rule: Counter[str] = Counter()
    for h in res.hits:  # lines, a claim of the storm's middle counting those it folded (scan/nearfold.py)
        by_rule[h.rule] += h.line.repeat
    # `near: backward|autograd` holds for the OOM lines up to 60 lines after the autograd frame (line 3): lines 4-63
    assert by_rule["trainer.oom-backward"] == 60
    assert min(h.line.lineno for h in res.hits if h.rule == "trainer.oom-backward") == 4
    assert max(h.line.lineno for h in res.hits if h.rule == "trainer.oom-backward") == 63
    assert by_rule["trainer.cuda-oom"] == n - 60


def test_the_same_message_again_and_again_is_tested_once(monkeypatch: pytest.MonkeyPatch) -> None:
    # a traceback printed 200 times (a crash loop): identical messages share one answer per test
    block = TRACEBACK + [oom(0), "retrying the step"]
    text = "\n".join(block * 200) + "\n"
    calls = counting_near_tests(monkeypatch)
    res = scan_text(text)
    assert max(calls.values()) <= len(block)
    assert Counter(h.rule for h in res.hits) == {"trainer.oom-backward": 200}
    assert [h.line.lineno for h in res.hits][:2] == [4, 9]


def line(n: int, msg: str, actor: str = "") -> Line:
    return Line("t.log", n, msg, msg, actor, "", 1)


def test_context_nearest_picks_the_closest_line_and_the_earlier_of_two_as_close() -> None:
    ctx = Context()
    for n, msg in [(1, "far marker"), (8, "marker before"), (10, "the hit"), (12, "marker after"), (40, "marker")]:
        ctx.add(line(n, msg))
    asked: list[str] = []

    def test(ln: Line) -> bool:
        asked.append(ln.msg)
        return "marker" in ln.msg

    assert ctx.nearest(10, (60, 25), "k", test).msg == "marker before"  # 2 before and 2 after: the earlier
    assert ctx.nearest(11, (60, 25), "k", test).msg == "marker after"
    assert ctx.nearest(10, (1, 1), "k", test) is None
    assert ctx.nearest(39, (0, 1), "k", test).msg == "marker"
    assert sorted(asked) == sorted(ln.msg for ln in ctx.lines)  # each line asked once, whatever the windows
    assert ctx.any(10, (60, 25), "k", test) and not ctx.any(10, (1, 1), "k", test)
    assert len(asked) == 5


def test_a_near_regex_that_times_out_switches_its_rule_off_with_a_note(monkeypatch: pytest.MonkeyPatch) -> None:
    text = "\n".join(TRACEBACK + [oom(1)]) + "\n"
    real = Scanner._tester

    def slow(self: Scanner, pattern: Any) -> Any:
        if "backward" not in pattern.pattern:
            return real(self, pattern)

        def test(line: Line) -> bool:
            raise TimeoutError
        return test

    monkeypatch.setattr(Scanner, "_tester", slow)
    res = scan_text(text)
    assert [h.rule for h in res.hits] == ["trainer.cuda-oom"]
    assert any("rule trainer.oom-backward: near/not_near regex timed out" in e for e in res.errors)
    assert scanner_mod.MATCH_TIMEOUT == 0.25


SLOW_RULE = """\
rules:
  - id: user.slow-widget
    category: other
    severity: error
    title: The widget broke
    anchor: ["widget broke"]
    match: 'widget broke: (?P<code>\\d+)'
    knobs: []
    explain: The widget broke.
    examples:
      match: ["widget broke: 7"]
"""


def test_a_user_rule_past_its_regex_budget_is_switched_off_with_a_note(tmp_path: Any,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    # a fake clock: every reading is 0.125 s after the last, so each search of the user's rule costs 0.125 s (under
    # the 0.25 s a line), and its 2 s budget runs out on the 17th line that holds its anchor (2.125 s)
    folder = tmp_path / "rules"
    folder.mkdir()
    (folder / "mine.yaml").write_text(SLOW_RULE)
    lib = load_library([folder])
    ticks = iter(range(10**6))
    monkeypatch.setattr(scanner_mod, "clock", lambda: next(ticks) * 0.125)
    hosts = [chr(97 + i % 26) + chr(97 + i // 26) for i in range(100)]  # letters differ line to line: no folding
    text = "\n".join(f"widget broke: {i} on {hosts[i]}" for i in range(100)) + "\n" + oom(1) + "\n"
    res = scan_text(text, Scanner(lib))
    widget = [h for h in res.hits if h.rule == "user.slow-widget"]
    assert [h.line.lineno for h in widget] == list(range(1, 18))  # searched and claimed until the budget ran out
    assert [h.numbers["code"] for h in widget][-1] == 16
    notes = [e for e in res.errors if "user.slow-widget" in e]
    assert len(notes) == 1
    assert notes[0].startswith(f"{folder / 'mine.yaml'}:2: rule user.slow-widget: its regexes took 2.1s (budget 2s a run)")
    assert "the last on train.log:17; rule disabled for the rest of the run" in notes[0]
    assert [h.rule for h in res.hits if h.rule != "user.slow-widget"] == ["trainer.cuda-oom"]  # built-ins: no budget


def test_built_in_rules_have_no_budget() -> None:
    assert Scanner(LIB).spent == {}


def timers(step: int) -> list[str]:
    return [f"[2026-11-30 08:{step % 60:02d}:00] timer.py:24 - Timer actor_train start",
            f"[2026-11-30 08:{step % 60:02d}:09] timer.py:32 - Timer actor_train end (elapsed: {40 + step % 7}.5s)"]


def test_the_context_of_a_long_trainer_log_keeps_a_window_and_what_claims_and_tracebacks_need(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # 20,000 Timer lines; an early traceback (a reward function's ValueError) and, at the end, a weight sync that ran
    # out of memory: `near: update_weights|...` must still see `Timer update_weights start` 2 lines before the OOM
    early = ["Traceback (most recent call last):",
             '  File "/opt/slime/slime/rollout/rm_hub/math.py", line 40, in compute_score',
             "ValueError: could not parse the answer"]
    body = [t for s in range(10_000) for t in timers(s)]
    tail = ["[2026-11-30 09:00:00] timer.py:24 - Timer update_weights start",
            "Traceback (most recent call last):",
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of "
            "79.11 GiB of which 1.50 GiB is free."]
    text = "\n".join(timers(0) + early + body + tail) + "\n"
    held: list[int] = []
    real = Scanner._resolve

    def resolve(self: Scanner, fs: Any) -> None:
        held.append(len(fs.ctx.lines))
        real(self, fs)

    monkeypatch.setattr(Scanner, "_resolve", resolve)
    res = scan_text(text)
    assert held[0] < 2 * Context.COMPACT  # not the 20,008 candidate lines
    oom_line = 2 + 3 + 20_000 + 3
    assert [(h.rule, h.line.lineno) for h in res.hits if h.rule.startswith("trainer.")] == [
        ("trainer.oom-weight-sync", oom_line)]
    # the early traceback is still a chain: its header and frame were kept
    assert any(h.rule == "verifier.reward-exception" and h.line.lineno == 5 for h in res.hits)


def test_a_context_with_nothing_pending_keeps_only_the_recent_lines_and_tracebacks() -> None:
    pending: list[Any] = []
    ctx = Context((60, 25), pending)
    ctx.add(line(1, "Traceback (most recent call last):"))
    for n in range(2, 50_000):
        ctx.add(line(n, f"Timer actor_train end (elapsed: {n % 50}.5s)"))
    assert ctx.lines[0].lineno == 1  # a traceback header stays
    assert len(ctx.lines) < 2 * Context.COMPACT
    assert ctx.lines[-1].lineno == 49_999
    linenos = [ln.lineno for ln in ctx.lines]
    assert linenos == sorted(linenos) and linenos == ctx.linenos


def test_a_pending_claim_keeps_its_window_however_many_lines_follow() -> None:
    # the OOM first, the Timer line naming the weight sync right after it (`within` reads 25 lines after), then
    # 20,000 other Timer lines: the claim is resolved when the file ends, long after its window left the recent lines
    head = ["torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of "
            "79.11 GiB of which 1.50 GiB is free.",
            "[2026-11-30 09:00:00] timer.py:32 - Timer update_weights end (elapsed: 3.5s)"]
    text = "\n".join(head + [t for s in range(10_000) for t in timers(s)]) + "\n"
    res = scan_text(text)
    assert [(h.rule, h.line.lineno) for h in res.hits if h.rule.startswith("trainer.")] == [
        ("trainer.oom-weight-sync", 1)]


def test_timer_lines_are_kept_as_readings_with_counts_and_their_readers_answer_as_before() -> None:
    from statistics import median

    from triage.checks import health
    from triage.checks.base import Run
    from triage.checks.startup import startup_phases

    lines = [t for s in range(5_000) for t in timers(s)]  # 10,000 Timer lines, 7 distinct elapsed times
    lines += [f"[2026-11-30 09:0{i}:00] timer.py:32 - Timer update_weights end (elapsed: 3.5s)" for i in range(3)]
    lines += ["ft cls=MegatronTrainRayActor fn=update_weights phase=end ok=false elapsed_s=1.0",
              "[2026-11-30 09:10:00] timer.py:32 - Timer compile_warmup end (elapsed: 81.5s)"]
    res = scan_text("\n".join(lines) + "\n")
    assert not [e for e in res.events if e.kind == "timer"]
    (series,) = [e for e in res.events if e.kind == "timer_series"]
    readings = series.fields["timers"]
    assert len(readings) == 1 + 7 + 1 + 1 + 1  # start; 7 elapsed times; update_weights ok and failed; compile
    assert sum(n for _, n in readings) == len(lines)
    first_start = readings[0][0]
    assert (first_start.line.lineno, first_start.fields["phase"]) == (1, "start")
    run = Run(events=res.events)
    assert health.publications(run) == (3, 1)
    assert health._stage_times(run, "") == {
        "Timer actor_train": median(40 + s % 7 + 0.5 for s in range(5_000)), "Timer compile_warmup": 81.5,
        "Timer update_weights": 3.5}
    assert startup_phases(run) == {"compile_warmup": 81.5}


def test_a_timer_store_past_its_readings_rounds_new_seconds_to_three_figures() -> None:
    from triage.parsers.metrics import TIMER_READINGS, TimerStore

    events: list[Any] = []
    store = TimerStore(events)
    for i in range(TIMER_READINGS + 500):
        store.add(Event("timer", line(i + 1, "Timer x end"), {"name": "x", "phase": "end", "seconds": 100 + i / 1000}))
    store.close()
    (series,) = events
    assert len(series.fields["timers"]) <= TIMER_READINGS + 10  # 104.096 .. 104.595 round to 104 and 105
    assert sum(n for _, n in series.fields["timers"]) == TIMER_READINGS + 500
    assert series.line.lineno == TIMER_READINGS + 500


def test_built_in_regexes_search_short_lines_without_the_timeout_and_long_ones_with_it(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # a storm's claimed lines are searched twice (the scan, then the claim's numbers): the timeout's bookkeeping
    # doubled the cost of each search, so built-in regexes go without it up to TRUSTED_LEN characters
    sc = Scanner(LIB)
    rule = LIB.rule("serving.kv-retraction")
    assert rule is not None
    short = "[2026-05-24 00:50:01 TP0] KV cache pool is full. Retract requests. #retracted_reqs: 3, #new_token_ratio: 0.21 -> 0.44"
    long = short + " " + "x" * scanner_mod.TRUSTED_LEN
    timeouts: list[Any] = []
    match = rule.match[0]

    class Spy:
        def compile(self) -> Any:
            return match.compile()

        def search(self, text: str, *args: Any, **kwargs: Any) -> Any:
            timeouts.append(kwargs.get("timeout"))
            return match.compile().search(text, *args, **kwargs)

    monkeypatch.setattr(rule, "match", [Spy()])
    assert sc._search(rule, short).groupdict()["retracted"] == "3"
    assert sc._search(rule, long).groupdict()["ratio_after"] == "0.44"
    line = Line("engine.log", 7, short, short, "", "", 1)
    assert sc._numbers(rule, line) == {"retracted": 3, "ratio_before": 0.21, "ratio_after": 0.44}
    assert timeouts == [None, scanner_mod.MATCH_TIMEOUT, None]


def test_each_built_in_rule_answers_its_examples_alike_with_and_without_the_timeout() -> None:
    sc = Scanner(LIB)
    for rule in LIB.rules:
        for text in rule.examples.get("match", []) + rule.examples.get("no_match", []):
            for t in (text, text + " " * (scanner_mod.TRUSTED_LEN + 1)):
                got, want = sc._search(rule, t), rule.search(t)
                assert (got and got.groupdict()) == (want and want.groupdict()), (rule.id, t)


def test_a_group_reads_as_a_number_as_before_the_fast_path() -> None:
    number = scanner_mod.number
    assert [number(v) for v in ("3", " 24576 ", "0.2100", "1.", ".5", "007")] == [3, 24576, 0.21, 1.0, 0.5, 7]
    assert [type(number(v)) for v in ("3", "0.5")] == [int, float]
    assert number("1.5 GiB") == 1.5 and number("12:30") == 750 and number("-3") == -3 and number("٣") == 3
    assert number("1.2.3") == "1.2.3" and number("") == ""
