"""Secrets never leave the machine: each kind of secret, in every output format, wherever it can appear
(a rule's evidence line, an unclassified error line, a file name, a coverage reason); `--no-redact` shows it."""

from __future__ import annotations

from pathlib import Path

import pytest

from triage.analyze import Settings, analyze
from triage.redact import redact
from triage.report import FORMATS, render

# kind -> (how it is printed in a log, the secret text that must not appear)
SECRETS = {
    "huggingface": ("HF_HUB token hf_AbCdEfGhIjKlMnOpQrStUvWxYz012345", "hf_AbCdEfGhIjKlMnOpQrStUvWxYz012345"),
    "openai": ("client api sk-proj-Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2Ji1Hg0Fe", "sk-proj-Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2Ji1Hg0Fe"),
    "wandb": ("wandb login 3f2a9c0d8e7b6a5f4e3d2c1b0a9f8e7d6c5b4a39", "3f2a9c0d8e7b6a5f4e3d2c1b0a9f8e7d6c5b4a39"),
    "aws-access-key": ("using key AKIAQWERTYUIOPASDFGH", "AKIAQWERTYUIOPASDFGH"),
    "aws-secret": ("aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLEKEY", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLEKEY"),
    "bearer": ("Authorization: Bearer Zm9vYmFyYmF6cXV4cXV1eDEyMzQ1Ng", "Zm9vYmFyYmF6cXV4cXV1eDEyMzQ1Ng"),
    "jwt": ("token eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ0cmlhZ2UifQ.c2lnbmF0dXJlc2VjcmV0",
            "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ0cmlhZ2UifQ.c2lnbmF0dXJlc2VjcmV0"),
    "url-password": ("fetching https://alice:Tr0ub4dorPw@judge.internal:8000/v1", "Tr0ub4dorPw"),
    "api-key-argument": ("launch.py --judge-api-key QmFzZTY0S2V5VmFsdWU --port 1", "QmFzZTY0S2V5VmFsdWU"),
    "token-assignment": ("env MY_SERVICE_TOKEN=tok3nV4lu3Xyz", "tok3nV4lu3Xyz"),
    "key-assignment": ("env JUDGE_API_KEY=k3yV4lu3Qwerty", "k3yV4lu3Qwerty"),
    "secret-assignment": ("env CLIENT_SECRET=s3cr3tV4lu3Zz", "s3cr3tV4lu3Zz"),
    "password-assignment": ("env PASSWORD=hunter2hunter2", "hunter2hunter2"),
}
DISK = "OSError: [Errno 28] No space left on device"


@pytest.fixture(scope="module", params=sorted(SECRETS))
def run(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path]:
    kind = request.param
    printed, _ = SECRETS[kind]
    root = tmp_path_factory.mktemp(kind)
    # in a rule's evidence line, in an unclassified error line, and in a crash mid-line (a log cut short)
    (root / "train.log").write_text(f"{DISK} while saving ({printed})\n"
                                    f"RuntimeError: judge call failed: {printed}\n"
                                    f"FATAL: worker died {printed}")
    return kind, root


def _rendered(root: Path, fmt: str, redact_on: bool = True) -> str:
    return render(fmt, analyze(Settings(paths=[str(root)], redact=redact_on)))


def test_the_matrix_covers_at_least_text_and_json() -> None:
    assert {"text", "json"} <= set(FORMATS)


@pytest.mark.parametrize("fmt", FORMATS)
def test_secret_is_absent_from_every_format(run: tuple[str, Path], fmt: str) -> None:
    kind, root = run
    secret = SECRETS[kind][1]
    out = _rendered(root, fmt)
    assert secret not in out
    assert secret[len(secret) // 2:] not in out  # not even its tail
    assert "[REDACTED]" in out  # the line was reported, masked


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_no_redact_shows_the_secret(run: tuple[str, Path], fmt: str) -> None:
    kind, root = run
    assert SECRETS[kind][1] in _rendered(root, fmt, redact_on=False)


def test_a_secret_in_a_file_name_is_masked_in_coverage(tmp_path: Path) -> None:
    (tmp_path / "HF_TOKEN=hf_AbCdEfGhIjKlMnOpQrStUvWxYz012345.log").write_text(DISK + "\n")
    for fmt in FORMATS:
        assert "hf_AbCdEfGhIjKlMnOpQrStUvWxYz012345" not in _rendered(tmp_path, fmt)


def test_a_secret_straddling_the_evidence_cut_is_masked_whole() -> None:
    from triage.findings import MAX_TEXT, shown

    text = "E" * (MAX_TEXT - 10) + " hf_AbCdEfGhIjKlMnOpQrStUvWxYz012345"
    out = shown(text, redact_on=True)
    assert "hf_AbCd" not in out
    assert out.endswith("…[cut by triage]")


@pytest.mark.parametrize("text", ["--" + "-" * 60000, "a-" * 30000, "x://" + "a:" * 30000, "A" * 60000 + "_KEY"])
def test_redaction_stays_linear_on_hostile_lines(text: str) -> None:
    import time

    start = time.perf_counter()
    redact(text)
    assert time.perf_counter() - start < 1.0


def test_fingerprints_are_the_same_with_and_without_redaction(run: tuple[str, Path]) -> None:
    """A baseline written from a `--no-redact` run must hide the same findings in a redacted run, and back."""
    _, root = run
    shown = analyze(Settings(paths=[str(root)], redact=False))
    masked = analyze(Settings(paths=[str(root)], redact=True))
    assert [(f.rule, f.fingerprint) for f in shown.findings] == [(f.rule, f.fingerprint) for f in masked.findings]
    assert len(shown.findings) >= 2
