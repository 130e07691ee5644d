"""Recognition round 15 (r15e): tracebacks in other renderings read as tracebacks.

- rich's boxed traceback (rich.traceback / typer / RichHandler(rich_tracebacks=True)): the panel's header, its
  `│ /path/file.py:123 in func │` frame lines (a long path wraps the function's name to the next line) and the plain
  exception line after `╰──╯` form one chain, however many source and locals lines lie between them, so a reward
  function's exception in a rich panel is verifier.reward-exception, as in a plain traceback.
- a plain traceback shown in a boxed log pane (k9s: `│ ... │` around every line) is read inside the box.
- IPython 8's frames (`File path:67, in func(args)`, `Cell In[3], line 5`): real-extra 1300 (unsloth issue 1440).
- loguru's `diagnose` form (`> File ...` for the frame that raised, `└ value` annotation lines under the source).
- Rust panics (std's panic hook, Rust < 1.73, 1.73+ and 1.89+ wordings) end a chain of their own, named `panic`;
  pyo3's PanicException traceback after one continues it: real-extra 1301 and 1302 (HF tokenizers 876, 821).
- a box-drawn table's rows (AReaL's stats tables) are no traceback and keep their text.
"""

from __future__ import annotations

import pytest
from conftest import FIXTURES, knob_names, top, triage_dir, triage_files

from triage.model import Line
from triage.parsers import signals
from triage.scan.origins import split_ray

EXTRA = FIXTURES / "real-extra"

RULE = "─" * 21
PANEL_TOP = f"╭{RULE} Traceback (most recent call last) {RULE}╮"
PANEL_END = "╰" + "─" * 78 + "╯"


def row(text: str) -> str:
    """One line of rich's 80-column panel: `│ text<padding> │`."""
    return f"│ {text:<76} │"


# A TRL GRPO run whose reward function raises, as rich.traceback.install() prints it (rich 13: frame header, source
# lines with `❱` at the line that ran, a blank row between frames; the TRL frame's path is long enough to wrap).
RICH_REWARD = "\n".join([
    "Step 12/500 | loss 0.0132 | reward 0.41",
    PANEL_TOP,
    row("/workspace/train_grpo.py:88 in main"),
    row(""),
    row("  85 │   )"),
    row("  86 │"),
    row("  87 │   trainer = GRPOTrainer(model, reward_funcs=[accuracy_reward])"),
    row("❱ 88 │   trainer.train()"),
    row("  89"),
    row(""),
    row("/usr/local/lib/python3.11/site-packages/trl/trainer/grpo_trainer.py:1102 in"),
    row("_calculate_rewards"),
    row(""),
    row("  1099 │   │   │   reward_kwargs = {key: [e[key] for e in inputs] for key in"),
    row("  1100 │   │   │   output_reward_func = reward_func("),
    row("  1101 │   │   │   │   prompts=prompts, completions=completions, **reward_kw"),
    row("❱ 1102 │   │   │   )"),
    row("  1103 │   │   │   rewards_per_func[:, i] = torch.tensor(output_reward_func,"),
    row(""),
    row("/workspace/rewards/math_reward.py:41 in accuracy_reward"),
    row(""),
    row("  38 def accuracy_reward(completions, solution, **kwargs):"),
    row("  39 │   contents = [c[0][\"content\"] for c in completions]"),
    row("  40 │   rewards = []"),
    row("❱ 41 │   for content, sol in zip(contents, solution[\"answer\"]):"),
    row("  42 │   │   gold = parse(sol)"),
    row(""),
    row("╭──────────────────── locals ────────────────────╮"),
    *[row(f"│ var{i:02d} = {i!r:<37} │") for i in range(14)],
    row("╰────────────────────────────────────────────────╯"),
    PANEL_END,
    "TypeError: list indices must be integers or slices, not str",
    "",
])


@pytest.mark.parametrize("native", [True, False])
def test_a_reward_functions_exception_in_a_rich_panel_is_the_reward_exception(tmp_path, monkeypatch, native):
    monkeypatch.setenv("TRIAGE_NO_NATIVE", "" if native else "1")
    f = top(triage_files(tmp_path, {"train.log": RICH_REWARD}))
    assert (f.category, f.rule, f.severity) == ("verifier", "verifier.reward-exception", "error")
    # the exception line after the panel, 25 lines below the last frame (source and locals rows between)
    assert [(e.file, e.line) for e in f.evidence] == [("train.log", 45)]
    assert f.evidence[0].text == "TypeError: list indices must be integers or slices, not str"
    assert "verifier.reward_function" in knob_names(f)


def test_the_same_exception_without_reward_frames_is_no_reward_exception(tmp_path):
    # the reward function's frame taken out: the chain runs through the trainer only, and the rich panel is not a
    # reason to call it the verifier's
    text = RICH_REWARD.replace("/workspace/rewards/math_reward.py:41 in accuracy_reward", "/workspace/data.py:41 in load")
    text = text.replace("/trl/trainer/grpo_trainer.py:1102 in", "/trl/trainer/sft_trainer.py:1102 in").replace(
        "_calculate_rewards ", "_prepare_batch     ")
    f = top(triage_files(tmp_path, {"train.log": text}))
    assert f.category not in ("verifier",)
    assert f.rule == "other.fatal-exit"
    assert "TypeError: list indices must be integers" in f.title
    assert f.evidence[0].line == 2  # the chain's first line, the panel's header


def test_rich_frame_lines_read_as_pythons_frames():
    assert split_ray(row("/workspace/rewards/math_reward.py:41 in accuracy_reward"))[0] == (
        '  File "/workspace/rewards/math_reward.py", line 41, in accuracy_reward')
    # rich's form for a file not on disk, and a function's name wrapped to the next line
    assert split_ray(row("in <module>:5"))[0] == '  File "<unknown>", line 5, in <module>'
    assert split_ray(row("/usr/lib/python3.11/site-packages/trl/trainer/grpo_trainer.py:1102 in"))[0] == (
        '  File "/usr/lib/python3.11/site-packages/trl/trainer/grpo_trainer.py", line 1102')
    # the panel's header behind a Ray actor's prefix
    assert split_ray(f"(TaskRunner pid=12) {PANEL_TOP}")[0] == "Traceback (most recent call last):"
    # a source row and a locals row are no frame; a box-drawn stats table's row keeps its cells (the outer `│ ` and
    # ` │` go as a log viewer's frame does: prefixes.LINE_PREFIX)
    src = row("❱ 41 │   for content, sol in zip(contents, solution[\"answer\"]):")
    assert split_ray(src)[0] == src.strip("│ ")
    table = "│ ppo_actor/seq_len/max │ 4.3120e+03 │ ppo_actor/new_logp/avg │ -2.8348e-01 │"
    assert split_ray(table)[0] == table.strip("│ ")


def test_a_plain_traceback_in_a_boxed_log_pane_is_read_inside_the_box():
    # k9s shows a pod's log in a pane: `│ ` and ` │` around every line of SGLang's scheduler traceback
    pane = [
        "[2025-02-28 09:28:25 TP7] Scheduler hit an exception: Traceback (most recent call last):",
        '  File "/usr/local/lib/python3.10/dist-packages/sglang/srt/managers/scheduler.py", line 1825, in run_scheduler_process',
        "    scheduler.event_loop_overlap()",
        '  File "/usr/local/lib/python3.10/dist-packages/sglang/srt/managers/scheduler.py", line 504, in event_loop_overlap',
        "    batch = self.get_next_batch_to_run()",
        "ValueError: grammar backend failed to compile the json schema",
    ]
    lines = []
    for i, ln in enumerate(pane, 1):
        text = f"│ {ln:<150} │"
        lines.append(Line("server.log", i, text, split_ray(text)[0]))
    found = signals.chains(lines)
    assert len(found) == 1 and found[0].final is lines[-1]
    assert signals.exception_name(lines[-1]) == ("ValueError", "grammar backend failed to compile the json schema")
    assert [f.split(",")[1] for f in found[0].frames] == [" line 1825", " line 504"]


def test_ipython_frames_make_a_chain_and_a_metric_keyerror_is_not_the_reward_path():
    report = triage_dir(EXTRA / "1300-unsloth-kto-notebook-ipython-frame-keyerror-rewards-accuracies" / "input")
    f = top(report)
    assert (f.category, f.rule) == ("other", "other.fatal-exit")
    assert "KeyError: 'rewards/accuracies'" in f.title
    assert not [g for g in report.findings if g.rule == "vocabulary.reward-path-error"]
    assert split_ray("Cell In[12], line 3")[0] == '  File "<In[12]>", line 3'
    assert split_ray("File ~/rl/rewards.py:19, in format_reward(completions, **kwargs)")[0] == (
        '  File "~/rl/rewards.py", line 19, in format_reward')


def test_loguru_diagnose_frames_with_annotations_end_in_the_exception(tmp_path):
    values = "".join(f"              │             └ <value {i}>\n" for i in range(12))
    text = (
        "2025-04-10 12:00:02.456 | ERROR    | __main__:main:52 - An error has been caught in function 'main', "
        "process 'MainProcess' (4242), thread 'MainThread' (1403):\n"
        "Traceback (most recent call last):\n\n"
        '> File "/workspace/train.py", line 52, in main\n'
        "    rewards = compute_score(batch.responses, batch.answers)\n"
        f"{values}\n"
        '  File "/workspace/rewards/math_reward.py", line 18, in compute_score\n'
        "    return [float(a == b) for a, b in zip(extract(r), answers, strict=True)]\n"
        f"{values}\n"
        "ValueError: zip() argument 2 is longer than argument 1\n"
    )
    f = top(triage_files(tmp_path, {"train.log": text}))
    assert (f.category, f.rule) == ("verifier", "verifier.reward-exception")
    assert f.evidence[0].line == 34


@pytest.mark.parametrize("line,message", [
    # Rust < 1.73 (HF tokenizers 876)
    ("thread '<unnamed>' panicked at 'Missing additional token', /__w/tokenizers/src/added_vocabulary.rs:293:26",
     "Missing additional token"),
    # Rust 1.73+ (sglang's router, issue 7028): the message on the next line
    ("thread 'actix-rt|system:0|arbiter:12' panicked at src/router.rs:463:40:", ""),
    # Rust 1.89+ with the thread id (vllm.rs, real-extra 941)
    ("thread 'main' (73) panicked at /root/.cargo/git/checkouts/cudarc/src/driver/safe/core.rs:293:26:", ""),
])
def test_a_rust_panic_is_an_exception_named_panic(line, message):
    ln = Line("x.log", 1, line, line)
    assert signals.exception_name(ln) == ("panic", message)
    found = signals.chains([ln])
    assert [c.final for c in found] == [ln]
    assert signals.exception_name(Line("x.log", 1, "the reader panicked at the sight", "the reader panicked at x")) == (
        "", "")


def test_a_rust_panic_ends_the_process_and_pyo3s_traceback_continues_its_chain():
    f = top(triage_dir(EXTRA / "1301-tokenizers-train-rust-panic-missing-added-token-backtrace" / "input"))
    assert (f.category, f.rule, f.severity) == ("other", "other.fatal-exit", "error")
    assert [(e.file, e.line) for e in f.evidence][:1] == [("train.log", 1)]
    assert "panic: Missing additional token" in f.title
    f = top(triage_dir(EXTRA / "1302-tokenizers-unigram-train-panic-pyo3-panicexception" / "input"))
    assert (f.category, f.rule) == ("other", "other.fatal-exit")
    assert "PanicException: called `Result::unwrap()` on an `Err` value: Internal" in f.title


def test_a_panic_whose_message_follows_its_location_is_named_by_that_message():
    # Rust >= 1.73 prints `thread 'x' panicked at file:line:col:` and the message on the next line (llguidance's
    # token trie under vLLM, vllm issue 21204): the message names the failure, and is no unexplained line of its own
    report = triage_dir(EXTRA / "1303-vllm-guidance-backend-granite-toktrie-rust-panic-request-hangs" / "input")
    (f,) = report.findings
    assert (f.category, f.rule, f.severity) == ("other", "other.fatal-exit", "error")
    assert [(e.file, e.line) for e in f.evidence][:1] == [("server.log", 1)]
    assert f.title == "A process ended with panic: assertion failed: num_parents < 0xff"


# RL Swarm's trainer (hivemind_grpo_trainer) logs "Exception during training" at error level, then the traceback of the
# exception that stopped it; the paste ends inside it, in the reward function's frames (the shape of rl-swarm issue
# 340). Math-Verify logs its own caught comparison errors the same way (logger.exception), but its traceback starts
# in the grader.
SWARM_CUT = (
    "INFO:hivemind_exp.trainer.hivemind_grpo_trainer:hibernating gentle bat:📈 Training round: 849 stage: 0\n"
    "ERROR:hivemind_exp.trainer.hivemind_grpo_trainer:hibernating gentle bat:Exception during training\n"
    "Traceback (most recent call last):\n"
    '  File "/root/rl-swarm/hivemind_exp/trainer/hivemind_grpo_trainer.py", line 338, in train\n'
    "    self._train()\n"
    '  File "/root/rl-swarm/.venv/lib/python3.12/site-packages/trl/trainer/grpo_trainer.py", line 1020, in'
    " _generate_and_score_completions\n"
    "    output_reward_func = reward_func(prompts=prompts, completions=completions, **reward_kwargs)\n"
    '  File "/root/rl-swarm/hivemind_exp/gsm8k/stage1_rewards.py", line 88, in correctness_reward_func\n'
    '    responses = [completion[0]["content"] for completion in completions]\n'
)
MATH_VERIFY_CUT = (
    "ERROR:math_verify.grader:Error during comparison\n"
    "Traceback (most recent call last):\n"
    '  File "/usr/local/lib/python3.10/dist-packages/math_verify/grader.py", line 700, in'
    " compare_single_extraction_wrapper\n"
    "    return compare_single_extraction(g, t)\n"
    '  File "/usr/local/lib/python3.10/dist-packages/sympy/core/relational.py", line 398, in __bool__\n'
    '    raise TypeError("cannot determine truth value of Relational")\n'
)


def test_a_logged_traceback_cut_after_it_left_the_reward_code_is_the_reward_exception(tmp_path):
    f = top(triage_files(tmp_path, {"swarm.log": SWARM_CUT}))
    assert (f.category, f.rule, f.severity) == ("verifier", "verifier.reward-exception", "error")
    assert f.evidence[0].line == 8 and "stage1_rewards.py" in f.evidence[0].text
    assert "verifier.reward_function" in knob_names(f)


def test_a_graders_own_logged_traceback_cut_in_the_grader_is_not_the_reward_exception(tmp_path):
    report = triage_files(tmp_path, {"train.log": MATH_VERIFY_CUT})
    assert not [f for f in report.findings if f.rule == "verifier.reward-exception" or f.severity == "error"]


def test_escaped_reward_code_reads_the_outermost_frame():
    def chain(*frames: str) -> signals.Chain:
        c = signals.Chain(Line("x.log", 1, "Traceback (most recent call last):", "Traceback (most recent call last):"))
        c.frames = list(frames)
        return c
    trainer = 'File "/app/trl/trainer/grpo_trainer.py", line 1020, in _generate_and_score_completions'
    reward = 'File "/app/rewards/math_reward.py", line 18, in accuracy_reward'
    grader = 'File "/usr/lib/python3.10/site-packages/math_verify/grader.py", line 700, in compare_single_extraction'
    sympy = 'File "/usr/lib/python3.10/site-packages/sympy/core/relational.py", line 398, in __bool__'
    assert signals.escaped_reward_code(chain(trainer, reward))
    assert not signals.escaped_reward_code(chain(grader, sympy))
    assert not signals.escaped_reward_code(chain(sympy, grader))
    assert not signals.escaped_reward_code(chain(trainer))



# A reward function raising in a notebook, as IPython 8 prints it (`File path:N, in f(args)`, `Cell In[n], line N`) and
# as IPython < 8 does (Colab until 2024: `path in f(args)`, `<ipython-input-N-x> in <cell line: 1>()`, the line on
# the `-->` row), the reward function a notebook cell's (named *_reward_func) or a file's.
IPYTHON8_REWARD = (
    "ZeroDivisionError                         Traceback (most recent call last)\n"
    "Cell In[14], line 2\n"
    "----> 2 trainer.train()\n"
    "\n"
    "File ~/grpo/rewards.py:12, in len_reward(completions, **kwargs)\n"
    "     11     lengths = [len(c) for c in completions]\n"
    "---> 12     return [l / (max(lengths) - min(lengths)) for l in lengths]\n"
    "\n"
    "ZeroDivisionError: division by zero\n"
)
IPYTHON7_REWARD = (
    "KeyError                                  Traceback (most recent call last)\n"
    "<ipython-input-12-3a8b6a1c2a57> in <cell line: 1>()\n"
    "----> 1 trainer.train()\n"
    "\n"
    "/usr/local/lib/python3.10/dist-packages/trl/trainer/grpo_trainer.py in _generate_and_score_completions(self, inputs)\n"
    "--> 840                 output_reward_func = reward_func(prompts=prompts, completions=completions, **reward_kwargs)\n"
    "\n"
    "<ipython-input-9-0f2d1c3b4e5a> in correctness_reward_func(prompts, completions, answer, **kwargs)\n"
    "      3     responses = [completion[0]['content'] for completion in completions]\n"
    "----> 4     q = prompts[0][-1]['content']\n"
    "\n"
    "KeyError: 'content'\n"
)


@pytest.mark.parametrize("text,line", [(IPYTHON8_REWARD, 9), (IPYTHON7_REWARD, 12)])
def test_a_reward_exception_through_ipython_frames_is_the_reward_exception(tmp_path, text, line):
    f = top(triage_files(tmp_path, {"notebook.log": text}))
    assert (f.category, f.rule) == ("verifier", "verifier.reward-exception")
    assert f.evidence[0].line == line
    assert split_ray("/usr/lib/python3.10/site-packages/x.py:12: UserWarning: y in z")[0] == (
        "/usr/lib/python3.10/site-packages/x.py:12: UserWarning: y in z")
