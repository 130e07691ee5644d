"""The same failures in other line forms (real-extra 1490-1492): a Rust panic whose message line holds no error word,
a Rust inference engine's own crate in its log lines, pytest's short test summary (`FAILED <test> - <exception>`) and
its session outcome line, a traceback logged through rich's RichHandler (wrapped inside its message column), frames
of an engine's own package, a box's side drawn light or heavy, and rayon's thread pool refused its threads.

Each real case asserts the rule, the evidence file:line and the numbers read off it; each synthetic form is a real
line of a thread written the way another program prints it (the RichHandler log is rendered by rich itself), on both
scan paths."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import extra_input, triage_dir
from test_forms15_line_forms import _top
from test_line_forms import _report

from triage.model import Line
from triage.parsers import signals
from triage.scan.unexplained import PYTEST_OUTCOMES

# -- Rust panics: the message on the line after the location (Rust >= 1.73) ------------------------------------------

# mistral.rs issue 1781 (2025-12): the engine thread's panic in the KV block allocator, as pasted
PANIC = [
    "thread '<unnamed>' (1004759) panicked at mistralrs-core/src/paged_attention/block_engine.rs:148:44:",
    "called `Option::unwrap()` on a `None` value",
    "stack backtrace:",
    "   0: __rustc::rust_begin_unwind",
    "   1: core::panicking::panic_fmt",
    "   4: mistralrs_core::paged_attention::block_engine::Allocator<T>::allocate",
]


@pytest.mark.parametrize("native", [True, False])
def test_a_panic_is_named_by_its_message_line_even_when_that_line_holds_no_error_word(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, native: bool) -> None:
    report = _report(tmp_path, monkeypatch, native, PANIC)
    top = report.findings[0]
    assert _top(report) == ("other", "other.fatal-exit", "train.log", 1)
    assert top.numbers["exception"] == "panic"
    assert top.numbers["message"] == "called `Option::unwrap()` on a `None` value"
    assert len(report.findings) == 1  # the message line is no unexplained line of its own


@pytest.mark.parametrize("native", [True, False])
def test_a_ray_relayed_panic_reads_the_message_behind_the_same_prefix(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, native: bool) -> None:
    lines = ["(SGLangRouter pid=812) " + PANIC[0], "(SGLangRouter pid=812) " + PANIC[1]]
    top = _report(tmp_path, monkeypatch, native, lines).findings[0]
    assert top.numbers["message"] == "called `Option::unwrap()` on a `None` value"


@pytest.mark.parametrize(("text", "want"), [
    (PANIC[0] + "\n" + PANIC[1] + "\n", len(PANIC[0]) + 1),
    # behind a Ray actor's prefix: the next line behind the same prefix
    ("(R pid=1) thread 'main' panicked at src/a.rs:1:2:\n(R pid=1) boom\n", 50),
    ("(R pid=1) thread 'main' panicked at src/a.rs:1:2:\n(S pid=2) boom\n", -1),  # another process's line
    ("thread 'main' panicked at src/a.rs:1:2:\n\nboom\n", -1),  # a blank line: no message told
    ("thread 'main' panicked at 'boom', src/a.rs:1:2\nnext\n", -1),  # Rust < 1.73: the message is on the line
    ("thread 'main' panicked at src/a.rs:1:2:", -1),  # the text's end
])
def test_the_message_of_a_panic_is_the_next_line_behind_its_prefix(text: str, want: int) -> None:
    assert signals.traceback_end(text, 0, text.find("\n") if "\n" in text else len(text)) == want


def test_the_engine_crash_of_a_rust_server_is_the_engines_out_of_memory() -> None:
    # mistral.rs#1781: the panic, and the engine's own `mistralrs_core::engine` line with the driver's OOM
    report = triage_dir(extra_input("1490"))
    top = report.findings[0]
    assert _top(report) == ("serving-oom-retraction", "serving.engine-cuda-oom", "error.txt", 1)
    assert top.numbers["side"] == "engine"
    assert "inference.sglang_mem_fraction_static" in [k.name for k in top.knobs]


@pytest.mark.parametrize("native", [True, False])
def test_mistralrs_core_marks_the_engine_whatever_the_files_name(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, native: bool) -> None:
    line = ('2025-12-22T14:46:50.586091Z ERROR mistralrs_core::engine: step - Model failed with error: '
            'DriverError(CUDA_ERROR_OUT_OF_MEMORY, "out of memory")')
    report = _report(tmp_path, monkeypatch, native, [line])
    assert _top(report)[:2] == ("serving-oom-retraction", "serving.engine-cuda-oom")


# -- pytest's short test summary ---------------------------------------------------------------------------------------

def test_a_ci_jobs_failed_test_summary_is_read_as_the_trainers_out_of_memory() -> None:
    # trl#4237: the CI job's quoted OOM line and its `FAILED tests/...::test - torch.OutOfMemoryError: ...` summary
    report = triage_dir(extra_input("1491"))
    top = report.findings[0]
    assert _top(report) == ("trainer-oom", "trainer.cuda-oom", "ci.log", 1)
    assert [e.line for e in top.evidence] == [1, 4]
    assert top.numbers["tried"] == 2.11
    assert "PYTORCH_CUDA_ALLOC_CONF" in [k.name for k in top.knobs]


# ollama#8616's summary lines (pytest 8.3), a session outcome line after them
SUMMARY = [
    "=========================== short test summary info ============================",
    "FAILED tests/_1_misc_test.py::test_t6_func[mistral:latest] - assert None is not None",
    "FAILED tests/_2_rag_test.py::test_t7_func[qwen2:latest-chroma] - assert 768 == 384",
    "============= 2 failed, 123 passed, 3 warnings in 2104.55s (0:35:04) =============",
]


@pytest.mark.parametrize("native", [True, False])
def test_a_failed_tests_summary_line_ends_a_chain_with_the_tests_exception(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, native: bool) -> None:
    report = _report(tmp_path, monkeypatch, native, SUMMARY)
    top = report.findings[0]
    assert _top(report) == ("other", "other.fatal-exit", "train.log", 3)
    assert (top.numbers["exception"], top.numbers["message"]) == ("AssertionError", "assert 768 == 384")
    assert [f.rule for f in report.findings] == ["other.fatal-exit"]  # the outcome counts are no failure of their own


@pytest.mark.parametrize(("line", "name", "message"), [
    # vllm-omni#4537's title: pytest.fail's outcome
    ("FAILED tests/diffusion/offloader/test_diffusion_cpu_offload.py::test_cpu_offload_diffusion_model[OmniGen2/OmniGen2]"
     " - Failed: Inference failed", "Failed", "Inference failed"),
    # vllm#20214's summary (its Buildkite time stamp split off as the line's prefix)
    ("FAILED spec_decode/e2e/test_eagle_correctness.py::test_llama3_eagle_e2e_greedy_correctness[1-1-32] - "
     "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 116.00 MiB.", "OutOfMemoryError",
     "CUDA out of memory. Tried to allocate 116.00 MiB."),
    ("ERROR tests/test_rollout.py::test_generate - RuntimeError: engine failed to start", "RuntimeError",
     "engine failed to start"),
    ("FAILED in 3 of 5 tests - ValueError: bad", "", ""),  # no test id: not a summary line
])
def test_the_exception_of_a_summary_line_is_read_after_its_test_id(line: str, name: str, message: str) -> None:
    assert signals.exception_name(Line("t.log", 1, line, line)) == (name, message)


@pytest.mark.parametrize(("line", "outcome"), [
    ("========================= 1 failed, 11 passed in 98.12s ==========================", True),
    ("============= 2 failed, 123 passed, 3 warnings in 2104.55s (0:35:04) =============", True),
    ("==== 3 errors in 0.51s ====", True),
    ("===== step 3 failed in 2.0s =====", False),
])
def test_pytests_session_outcome_line_is_recognised(line: str, outcome: bool) -> None:
    assert (PYTEST_OUTCOMES.match(line) is not None) is outcome


# -- rich's logging handler: a logged traceback wrapped inside the message column --------------------------------------

def _rich_log(path: Path, width: int, show_path: bool = True) -> list[str]:
    """A real RichHandler rendering (rich, as installed) of a logged engine traceback into a file `width` wide."""
    import logging

    from rich.console import Console
    from rich.logging import RichHandler

    def oom() -> None:
        raise RuntimeError("CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.11 GiB "
                           "of which 1.05 GiB is free.")

    # the engine's frame under its package's path, as a site-packages install prints it
    ns: dict[str, object] = {"oom": oom}
    exec(compile("def load_model():\n    oom()\n",  # noqa: S102 - a frame with an engine's path, for the traceback
                 "/usr/local/lib/python3.10/dist-packages/sglang/srt/model_executor/model_runner.py", "exec"), ns)
    with path.open("w") as fh:
        handler = RichHandler(console=Console(file=fh, width=width, color_system=None), show_path=show_path)
        log = logging.getLogger(f"forms16.rich.{width}.{show_path}")
        log.propagate = False
        log.setLevel(logging.INFO)
        log.addHandler(handler)
        log.info("step 1 done")
        try:
            ns["load_model"]()  # type: ignore[operator]
        except RuntimeError:
            log.exception("Scheduler hit an exception")
        log.removeHandler(handler)
    return path.read_text().splitlines()


@pytest.mark.parametrize("native", [True, False])
@pytest.mark.parametrize(("width", "show_path"), [(100, True), (120, True), (160, True), (70, False), (80, False)])
def test_a_traceback_rich_wrapped_in_its_column_is_read_whole(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, native: bool, width: int, show_path: bool) -> None:
    lines = _rich_log(tmp_path / "render.log", width, show_path)
    assert max(map(len, lines)) == width  # rows padded to the console's width
    if width < 160:  # the frame's path is cut where the column ends
        assert not any("/dist-packages/sglang/srt/model_executor/model_runner.py" in s for s in lines)
    report = _report(tmp_path, monkeypatch, native, lines)
    top = report.findings[0]
    # raised from the engine's load_model: the engine OOM of a model that does not fit (r22c)
    assert (top.rule, top.numbers["side"], top.numbers["tried"]) == ("serving.engine-oom-model-load", "engine", 2.0)
    first = top.evidence[0]
    assert "CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.11 GiB" in first.text
    assert lines[first.line - 1].strip() in first.text  # at the number of the row the joined line starts on


def test_rows_of_a_rich_log_that_were_not_wrapped_stay_as_they_are(tmp_path: Path) -> None:
    import io

    from triage.input.unwrap import rich_layout, unwrap
    lines = _rich_log(tmp_path / "render.log", 120)
    data = ("\n".join(lines) + "\n").encode()
    assert rich_layout(data) == (29, 120)
    joined = unwrap(io.BufferedReader(io.BytesIO(data))).read()
    assert len(joined) == len(data)  # every line keeps its byte offset
    out = joined.decode().split("\n")
    assert len(out) == len(lines) + 1  # and its number
    assert out[:3] == lines[:3]  # two records' first rows and the traceback's header: not wrapped
    frame = next(s for s in out if "sglang/srt" in s)
    assert frame.strip() == ('File "/usr/local/lib/python3.10/dist-packages/sglang/srt/model_executor/model_runner.py",'
                             " line 2, in load_model")
    # a plain log is no RichHandler's
    assert rich_layout(b"INFO 12-05 10:00:00 [engine.py:12] started\n" * 4) == (0, 0)


# -- frames of an engine's own package mark the engine ----------------------------------------------------------------

@pytest.mark.parametrize("native", [True, False])
@pytest.mark.parametrize("path", [
    "/opt/parallax/src/parallax/server/executor/sglang_executor.py",  # GradientHQ/parallax's executor
    "/usr/local/lib/python3.11/site-packages/parallax/sglang/model_runner.py",
])
def test_an_oom_under_an_inference_engines_frames_is_the_engines(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, native: bool, path: str) -> None:
    # real-extra 1282's OOM line (parallax issue 210), here under a traceback through parallax's own package
    lines = ["Traceback (most recent call last):", f'  File "{path}", line 212, in load_model',
             "    self.model_runner = ModelRunner(...)",
             "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1014.00 MiB. GPU 0 has a total capacity "
             "of 23.99 GiB of which 0 bytes is free."]
    top = _report(tmp_path, monkeypatch, native, lines).findings[0]
    # under parallax's load_model: the engine OOM of a model that does not fit (r22c), the engine's all the same
    assert (top.rule, top.numbers["side"]) == ("serving.engine-oom-model-load", "engine")


# -- one box mechanism: a heavy box's side is a line prefix as a light one's ------------------------------------------

@pytest.mark.parametrize("side", ["│", "┃"])
def test_a_boxed_lines_sides_come_off_and_its_level_is_read(side: str) -> None:
    from triage.parsers.signals import level_of
    from triage.scan.origins import split_ray
    # vllm#6976's engine line in a log viewer's frame, drawn light or heavy
    text = f"{side} ERROR 09-27 06:46:46 engine.py:157] RuntimeError: CUDA error: an illegal memory access was encountered {side}"
    msg = split_ray(text)[0]
    assert msg == "RuntimeError: CUDA error: an illegal memory access was encountered"
    assert level_of(Line("t.log", 1, text, msg)) == "error"


def test_a_routers_panic_is_named_by_the_message_on_its_next_line() -> None:
    # sglang PR 7619: sgl-router's start-up panic in tokio's blocking-pool shutdown, the message on the next line
    report = triage_dir(extra_input("1492"))
    top = report.findings[0]
    assert _top(report) == ("other", "other.fatal-exit", "router.log", 8)
    assert top.numbers["exception"] == "panic"
    assert top.numbers["message"].startswith("Cannot drop a runtime in a context where blocking is not allowed.")
    assert len(report.findings) == 1


@pytest.mark.parametrize("native", [True, False])
def test_a_rayon_pool_that_could_not_start_its_threads_is_the_thread_limit(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, native: bool) -> None:
    # tokenizers#444's panic as pasted (Rust < 1.73: the message inside the panic line), then pyo3's exception
    lines = ["thread '<unnamed>' panicked at 'The global thread pool has not been initialized.: ThreadPoolBuildError { "
             "kind: IOError(Os { code: 11, kind: WouldBlock, message: \"Resource temporarily unavailable\" }) }', "
             "/github/home/.cargo/registry/src/github.com-1ecc6299db9ec823/rayon-core-1.7.0/src/registry.rs:168:5",
             "note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace"]
    report = _report(tmp_path, monkeypatch, native, lines)
    assert _top(report) == ("other", "other.thread-limit", "train.log", 1)
