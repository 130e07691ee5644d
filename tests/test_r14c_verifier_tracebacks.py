"""s14 (r14c), verifier: a traceback through the reward code that the paste (or the log) ends inside, before its
exception line, is the reward function failing (fixtures/real-extra 1132-1136: open-r1 GRPO's accuracy reward,
ms-swift's math_verify, reasoning-from-scratch's grader, a verl custom reward module); SymPy's frames are the answer
checker's unless PyTorch's are there too; a traceback a logger printed after its own error line (Math-Verify's
"Error during comparison") is that error's detail, not a second failure; the parsers' notices a reward's LaTeX
checker prints (ANTLR, latex2sympy's deprecation, macro substitution) are no failure (1137-1139)."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import extra_input, top, triage_dir, triage_files, warnings_or_worse

from triage.report.gate import scan_exit


@pytest.mark.parametrize("prefix, file, line, frame", [
    # open-r1 accuracy_reward -> math_verify.verify -> sympy raised (Math-Verify#6): the reporter's own excerpt
    ("1132-", "excerpt.txt", 5, 'raise TypeError("Can only compare inequalities with Expr")'),
    # the same sympy error on another run (open-r1#186): only SymPy's frames are left after the paste's gap
    ("1133-", "train.log", 26, "sympy/sets/sets.py"),
    # ms-swift GRPO, math_verify's comparison in sympy's solve (ms-swift#3836)
    ("1134-", "train.log", 14, "sympy/solvers/solvers.py"),
    # a hand-written GRPO loop: reward_rlvr -> grade_answer (reasoning-from-scratch#125)
    ("1135-", "train.log", 17, "reasoning_from_scratch/ch03.py"),
    # verl loading a custom reward module whose import asks the judge's endpoint for /models (Chain-of-Focus#11)
    ("1136-", "train.log", 12, "requests/api.py"),
])
def test_a_cut_traceback_through_reward_code_is_the_reward_failing(prefix: str, file: str, line: int,
                                                                   frame: str) -> None:
    rep = triage_dir(extra_input(prefix))
    f = top(rep)
    assert (f.rule, f.category, f.severity) == ("verifier.reward-exception", "verifier", "error")
    assert (f.evidence[0].file, f.evidence[0].line) == (file, line)
    assert frame in f.evidence[0].text
    assert "verifier.reward_function" in {k.name for k in f.knobs}


def test_the_cut_reward_traceback_ends_the_process() -> None:
    rep = triage_dir(extra_input("1135-"))
    assert scan_exit(rep.findings, "error", complete=rep.coverage_complete) == 1


TORCH_SYMPY = [
    "Traceback (most recent call last):",
    '  File "/opt/conda/lib/python3.10/site-packages/torch/_dynamo/convert_frame.py", line 1064, in __call__',
    "    result = self._inner_convert(",
    '  File "/opt/conda/lib/python3.10/site-packages/torch/fx/experimental/symbolic_shapes.py", line 5263, in '
    "evaluate_expr",
    "    return self._evaluate_expr(orig_expr, hint, fx_node, size_oblivious)",
    '  File "/opt/conda/lib/python3.10/site-packages/sympy/core/relational.py", line 516, in __bool__',
    '    raise TypeError("cannot determine truth value of Relational")',
]


def test_sympy_under_torch_compile_is_not_the_verifier(tmp_path: Path) -> None:
    # torch.compile's shape reasoning runs through sympy too: with torch's frames in the chain it is no grader's
    rep = triage_files(tmp_path, {"train.log": "\n".join(TORCH_SYMPY) + "\n"})
    assert not [f for f in rep.findings if f.category == "verifier"]
    # the same SymPy frame with no torch frame around it is the answer checker's
    grader = [TORCH_SYMPY[0], *TORCH_SYMPY[5:]]
    rep = triage_files(tmp_path / "g", {"train.log": "\n".join(grader) + "\n"})
    assert top(rep).rule == "verifier.reward-exception"


def test_a_traceback_logged_under_its_own_error_line_is_not_a_second_failure(tmp_path: Path) -> None:
    # Math-Verify's compare wrapper catches, logs "Error during comparison" (logger.exception) and scores 0; a paste
    # that ends inside that traceback is the comparison error, a warning, not the reward crashing (verl, Math-Verify#30)
    lines = [
        "(TaskRunner pid=230003) ERROR:2025-03-30 20:53:39,796:Error during comparison",
        "(TaskRunner pid=230003) Traceback (most recent call last):",
        '(TaskRunner pid=230003)   File "/usr/local/lib/python3.10/dist-packages/math_verify/grader.py", line 809, in '
        "compare_single_extraction_wrapper",
        "(TaskRunner pid=230003)     return compare_single_extraction(g, t)",
        '(TaskRunner pid=230003)   File "/usr/local/lib/python3.10/dist-packages/math_verify/grader.py", line 667, in '
        "sympy_expr_eq",
        "(TaskRunner pid=230003)     return sympy_compare_relational(gold, pred, float_rounding, numeric_precision)",
    ]
    rep = triage_files(tmp_path, {"train.log": "\n".join(lines) + "\n"})
    f = top(rep)
    assert (f.rule, f.severity, f.evidence[0].line) == ("verifier.comparison-error", "info", 1)
    assert "verifier.reward-exception" not in {g.rule for g in rep.findings}


def test_a_cut_traceback_outside_reward_code_stays_unnamed(tmp_path: Path) -> None:
    # the trainer's own frames, no reward frame, no logger level: the paste's cut says nothing of what failed
    lines = [
        "[rank1]: Traceback (most recent call last):",
        '[rank1]:   File "/home/u/open-r1/src/open_r1/grpo.py", line 189, in main',
        "[rank1]:     train_result = trainer.train(resume_from_checkpoint=checkpoint)",
        '[rank1]:   File "/opt/conda/lib/python3.10/site-packages/transformers/trainer.py", line 2175, in train',
        "[rank1]:     return inner_training_loop(",
    ]
    rep = triage_files(tmp_path, {"train.log": "\n".join(lines) + "\n"})
    assert not [f for f in rep.findings if f.category == "verifier"]


@pytest.mark.parametrize("prefix", ["1137-", "1138-", "1139-"])
def test_the_latex_checkers_notices_are_no_failure(prefix: str) -> None:
    # pylatexenc's macro substitution, latex2sympy2_extended's deprecation, sympy's ANTLR version notice
    assert warnings_or_worse(triage_dir(extra_input(prefix))) == []


def test_the_line_for_line_path_names_the_cut_reward_traceback_too(monkeypatch: pytest.MonkeyPatch) -> None:
    # the Python scan (no C prefilter, no column reader) reads the same candidate lines into the same chain
    for var in ("TRIAGE_NO_NATIVE", "TRIAGE_NO_COLUMNS", "TRIAGE_NO_ERRFOLD"):
        monkeypatch.setenv(var, "1")
    f = top(triage_dir(extra_input("1136-")))
    assert (f.rule, f.evidence[0].file, f.evidence[0].line) == ("verifier.reward-exception", "train.log", 12)
