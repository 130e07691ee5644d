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
    # issue 13: the families beyond the first list
    "github-fine-grained": ("push with github_pat_11AAAAAAA0bCdEfGhIjKlM_nOpQrStUvWxYz0123456789aBcDeFgHiJkLmNoPqRsTuVwXyZ01",
                            "github_pat_11AAAAAAA0bCdEfGhIjKlM_nOpQrStUvWxYz0123456789aBcDeFgHiJkLmNoPqRsTuVwXyZ01"),
    "gitlab": ("clone with glpat-Xy9Wv8Ut7Sr6Qp5On4Ml", "glpat-Xy9Wv8Ut7Sr6Qp5On4Ml"),
    "gitlab-runner": ("register glrt-t1_AbCdEfGhIjKlMnOpQrStUv", "glrt-t1_AbCdEfGhIjKlMnOpQrStUv"),
    "google-api-key": ("judge url ?key=AIzaSyD4fQ9pLmZx8Rk3Tw7Vb2Nc6Hj1Gs5Ye0U", "AIzaSyD4fQ9pLmZx8Rk3Tw7Vb2Nc6Hj1Gs5Ye0U"),
    "google-oauth": ("token ya29.a0AfH6SMBxQw3Er4Ty5Ui6Op7As8Df9Gh0Jk", "ya29.a0AfH6SMBxQw3Er4Ty5Ui6Op7As8Df9Gh0Jk"),
    "azure-account-key": ("conn DefaultEndpointsProtocol=https;AccountName=runs;AccountKey=Qm9ndXNBY2NvdW50S2V5VmFsdWUxMjM0NTY=;"
                          "EndpointSuffix=core.windows.net", "Qm9ndXNBY2NvdW50S2V5VmFsdWUxMjM0NTY="),
    "azure-sas": ("GET https://runs.blob.core.windows.net/ckpt/x?sv=2022-11-02&sp=r&sig=Zx8Yw7Vu6Ts5Rq4Po3%2BNm2Lk1%3D ok",
                  "Zx8Yw7Vu6Ts5Rq4Po3%2BNm2Lk1%3D"),
    "pem-inline": ('creds {"private_key": "-----BEGIN PRIVATE KEY-----\\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcw\\n'
                   '-----END PRIVATE KEY-----\\n"}', "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcw"),
    "pem-line": ("key -----BEGIN OPENSSH PRIVATE KEY----- b3BlbnNzaC1rZXktdjEAAAAABG5vbmU", "b3BlbnNzaC1rZXktdjEAAAAABG5vbmU"),
    "url-password-at-slash": ("db postgres://bob:p4@ss/w0rdZq@db.internal:5432/runs", "p4@ss/w0rdZq"),
    "url-password-no-user": ("cache redis://:Rq7sTu9vWx@cache.internal:6379/0", "Rq7sTu9vWx"),
    "basic-auth": ("header Authorization: Basic YWxpY2U6c2VjcmV0cGFzc3dvcmQ=", "YWxpY2U6c2VjcmV0cGFzc3dvcmQ="),
    "sshpass": ("ran sshpass -p Hunt3rTw0Pw ssh node-1", "Hunt3rTw0Pw"),
    "aws-bare-secret": ("creds AKIAQWERTYUIOPASDFGH wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
                        "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"),
    "aws-secret-quoted": ('cfg {"aws_secret_access_key": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"}',
                          "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"),
    "slack-webhook": ("post https://hooks.slack.com/services/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",
                      "q1w2e3r4t5y6u7i8o9p0AsDf"),
    "stripe": ("charge sk_live_51HqLyjWDarjtT1zdp7dcQwEr", "sk_live_51HqLyjWDarjtT1zdp7dcQwEr"),
    "npm": ("publish npm_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789", "npm_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789"),
    "pypi": ("upload pypi-AgEIcHlwaS5vcmcCJGQ3ZjQ5YzE2LTAwMDAtNDAwMC1hMDAwLTAwMDAwMDAwMDAwMAACKlsz",
             "pypi-AgEIcHlwaS5vcmcCJGQ3ZjQ5YzE2LTAwMDAtNDAwMC1hMDAwLTAwMDAwMDAwMDAwMAACKlsz"),
    "api-key-header": ("request x-api-key: Zq9Xw8Vc7Bn6Ml5Kj4Hg", "Zq9Xw8Vc7Bn6Ml5Kj4Hg"),
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


def test_a_secret_in_a_file_name_is_masked_in_every_field(tmp_path: Path) -> None:
    """Evidence files, coverage, timelines[].source and .file: the name is redacted once, where the report is
    built, so no format can leak it."""
    name = "sglang-HF_TOKEN=hf_AbCdEfGhIjKlMnOpQrStUvWxYz012345.log"
    stats = ("[2026-05-24 00:53:{s:02d} TP0] Decode batch, #running-req: 40, #token: 200000, token usage: 0.98, "
             "cuda graph: True, gen throughput (token/s): 2210.45, #queue-req: 5")
    (tmp_path / name).write_text("\n".join(stats.format(s=i) for i in range(50)) + "\n" + DISK + "\n")
    rep = analyze(Settings(paths=[str(tmp_path)]))
    assert rep.timelines and rep.findings
    assert all("hf_AbCd" not in t.source and "hf_AbCd" not in t.file for t in rep.timelines)
    for fmt in FORMATS:
        assert "hf_AbCdEfGhIjKlMnOpQrStUvWxYz012345" not in _rendered(tmp_path, fmt), fmt


@pytest.mark.parametrize("text", [
    "plain https://example.com/path@v2/x no credentials",
    "commit 0123456789abcdef0123456789abcdef01234567 built",
    "Authorization header missing",
])
def test_ordinary_text_is_left_alone(text: str) -> None:
    assert redact(text) == text
