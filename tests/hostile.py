"""Build a hostile run directory on disk: every kind of input that must not crash, hang or be lost.

Nothing binary is committed: the helper writes each case from code. `build(root)` returns the cases, each
with the relative path, the coverage entry triage must give it and the real failure (rule id, line) that must
still be found inside it when there is one.
"""

from __future__ import annotations

import bz2
import gzip
import lzma
import os
import socket
import stat
import struct
from dataclasses import dataclass
from pathlib import Path

OOM = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.00 GiB. GPU 0 has a total capacity of "
       "79.11 GiB of which 1.12 GiB is free.")
RETRACT = "[2025-09-01 10:00:05 TP0] KV cache pool is full. Retract requests. #retracted_reqs: 5, #new_token_ratio: 0.2233 -> 0.4871"
DISK = "OSError: [Errno 28] No space left on device"
SEGV = "Fatal Python error: Segmentation fault"
TRACE = ["Traceback (most recent call last):", '  File "/opt/app/train.py", line 12, in <module>', "    main()", OOM]


@dataclass
class Case:
    rel: str
    status: str  # read | skipped | unreadable
    reason: str = ""  # exact coverage reason ("" = none); a prefix when it ends with "…"
    kind: str = ""
    rule: str = ""  # a real failure that must still be found in the file
    line: int = 0
    privileged: bool = False  # a permission case: root is not denied, so only an unprivileged run shows it


def _lines(*lines: str, end: str = "\n") -> bytes:
    return (end.join(lines) + end).encode()


def _zstd(data: bytes) -> bytes:
    import zstandard

    return zstandard.ZstdCompressor().compress(data)


def _log_around(failure: str, before: int = 2) -> bytes:
    """A few ordinary lines, then the failure at line before+1, then a trailing line."""
    head = [f"[2025-09-01 10:00:0{i} TP0] step {i} ok" for i in range(before)]
    return _lines(*head, failure, "[2025-09-01 10:00:09 TP0] shutting down")


def build(root: Path, *, small_files: int = 2000) -> list[Case]:
    root.mkdir(parents=True, exist_ok=True)
    cases: list[Case] = []

    def write(rel: str, data: bytes, case: Case) -> None:
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)
        cases.append(case)

    # --- binaries: recognised by magic bytes, skipped (content beyond the head never read)
    write("ckpt/model.pt", b"PK\x03\x04" + os.urandom(4096), Case("ckpt/model.pt", "skipped", "zip archive (a torch .pt checkpoint or similar)", "binary"))
    header = b'{"w":{"dtype":"F16","shape":[2],"data_offsets":[0,4]}}'
    write("ckpt/model.safetensors", struct.pack("<Q", len(header)) + header + b"\x00" * 4,
          Case("ckpt/model.safetensors", "skipped", "safetensors checkpoint", "binary"))
    write("core.1234", b"\x7fELF\x02\x01\x01" + b"\x00" * 2000, Case("core.1234", "skipped", "ELF executable or core dump", "binary"))
    write("optim.log", b"\x80\x04\x95" + os.urandom(1000), Case("optim.log", "skipped", "pickle data", "binary"))
    write("garbage.out", bytes(range(256)) * 64, Case("garbage.out", "skipped", "binary data (800 control bytes in the first 8192)", "binary"))

    # --- compressed logs, rotated names
    write("engine.log.1.gz", gzip.compress(_log_around(RETRACT)),
          Case("engine.log.1.gz", "read", kind="sglang", rule="serving.kv-retraction", line=3))
    write("train.log.2.bz2", bz2.compress(_lines("step 1 loss 0.5", *TRACE)),
          Case("train.log.2.bz2", "read", kind="trainer", rule="trainer.cuda-oom", line=5))
    write("driver.log.xz", lzma.compress(_log_around(SEGV)), Case("driver.log.xz", "read", rule="other.segfault", line=3))
    write("worker-3.log.zst", _zstd(_log_around(DISK)), Case("worker-3.log.zst", "read", kind="sglang", rule="other.disk-full", line=3))
    # cut mid-write: the failure (line 3) is before the cut, the filler after it is lost
    filler = b"".join(f"{i:08d} {os.urandom(24).hex()}\n".encode() for i in range(20000))
    cut = gzip.compress(_log_around(DISK) + filler)
    write("cut.log.gz", cut[: len(cut) // 2],
          Case("cut.log.gz", "partial", "gzip stream is truncated (no end-of-stream marker, e.g. cut mid-write) at or "
                                        "before compressed byte …",
               rule="other.disk-full", line=3))

    # --- text damage
    write("text/bad-utf8.log", b"\xff\xfe ok \xc3\x28\n\xed\xa0\x80 still ok\n" + DISK.encode() + b" \xf0\x28\x8c\x28\n",
          Case("text/bad-utf8.log", "read", rule="other.disk-full", line=3))
    write("text/nul.log", b"line\x00one\n\x00\x00" + DISK.encode() + b"\x00\n", Case("text/nul.log", "read", rule="other.disk-full", line=2))
    write("text/crlf.log", _lines("a", "b", DISK, end="\r\n"), Case("text/crlf.log", "read", rule="other.disk-full", line=3))
    write("text/ansi.log", _lines("\x1b[36m(Actor pid=1)\x1b[0m hello", f"\x1b[31m{DISK}\x1b[0m"),
          Case("text/ansi.log", "read", rule="other.disk-full", line=2))
    bar = "".join(f"\r{p}%|{'#' * (p // 10)}|" for p in range(0, 100, 7))
    write("text/progress.log", _lines("start", bar + "\r" + DISK, "end"), Case("text/progress.log", "read", rule="other.disk-full", line=2))
    write("text/no-final-newline.log", _lines("a", "b") + DISK.encode(),
          Case("text/no-final-newline.log", "read", rule="other.disk-full", line=3))
    write("text/empty.log", b"", Case("text/empty.log", "read", "empty file", "empty"))
    write("text/blank.log", b"\n \n\t\n\r\n" * 50, Case("text/blank.log", "read", "blank lines only", "empty"))
    write("text/run log with spaces.log", _log_around(DISK), Case("text/run log with spaces.log", "read", rule="other.disk-full", line=3))
    write("text/日本語-ログ.log", _log_around(DISK), Case("text/日本語-ログ.log", "read", rule="other.disk-full", line=3))

    # --- thousands of small files
    for i in range(small_files):
        (root / "many" / f"{i // 500:02d}").mkdir(parents=True, exist_ok=True)
        (root / "many" / f"{i // 500:02d}" / f"rank-{i}.log").write_bytes(b"step ok\n")
    cases.append(Case("many/00/rank-0.log", "read", kind="text"))

    # --- things that are not regular files
    os.mkfifo(root / "pipe")
    cases.append(Case("pipe", "skipped", "FIFO: not opened", "special"))
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.bind(str(root / "sock"))
    finally:
        sock.close()
    cases.append(Case("sock", "skipped", "socket: not opened", "special"))
    os.symlink("/dev/zero", root / "zero.log")
    cases.append(Case("zero.log", "skipped", "symlink out of the run directory (to /dev/zero): not followed "
                                             "(--follow-links reads it)", "link"))
    os.symlink("does-not-exist.log", root / "dangling.log")
    cases.append(Case("dangling.log", "unreadable", "dangling symlink"))
    os.symlink("loop-b", root / "loop-a")
    os.symlink("loop-a", root / "loop-b")
    cases.append(Case("loop-a", "unreadable", "Too many levels of symbolic links"))
    cases.append(Case("loop-b", "unreadable", "Too many levels of symbolic links"))
    (root / "nested").mkdir(exist_ok=True)
    os.symlink("..", root / "nested" / "loop")
    cases.append(Case("nested/loop", "skipped", "symlink to a directory (..): not followed", "directory"))

    # --- odd names: a newline and bytes that are not UTF-8 in a name are printed escaped
    write("odd\nname.log", _log_around(DISK), Case("odd\\nname.log", "read", rule="other.disk-full", line=3))
    (root / os.fsdecode(b"latin-\xe9t\xe9.log")).write_bytes(_log_around(DISK))
    cases.append(Case("latin-\\xe9t\\xe9.log", "read", rule="other.disk-full", line=3))

    # --- unreadable: only for a user without the permission (root reads everything; see PRIVILEGED)
    write("noperm.log", _log_around(DISK), Case("noperm.log", "unreadable", "permission denied", privileged=True))
    os.chmod(root / "noperm.log", 0)
    (root / "closed").mkdir()
    (root / "closed" / "inside.log").write_bytes(_log_around(DISK))
    os.chmod(root / "closed", 0)
    cases.append(Case("closed", "unreadable", "Permission denied", "directory", privileged=True))
    return cases


def release(root: Path) -> None:
    """Give back the permissions `build` took away, so the tree can be removed."""
    for dirpath, dirnames, _ in os.walk(root):
        for d in dirnames:
            p = os.path.join(dirpath, d)
            if not os.path.islink(p):
                os.chmod(p, 0o755)
    for p in (root / "closed",):
        if p.exists() and not p.is_symlink():
            os.chmod(p, 0o755)


def case_list() -> list[Case]:
    """The cases, without keeping a tree (for test parametrisation)."""
    import shutil
    import tempfile

    with tempfile.TemporaryDirectory(prefix="triage-cases-") as tmp:
        cases = build(Path(tmp) / "run", small_files=1)
        release(Path(tmp) / "run")
        shutil.rmtree(Path(tmp) / "run")
    return cases


def hash_tree(root: Path) -> dict[str, tuple[int, str]]:
    """Every entry under root (not following links): mode and content hash / link target."""
    import hashlib

    out: dict[str, tuple[int, str]] = {}
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        for name in dirnames + filenames:
            p = os.path.join(dirpath, name)
            st = os.lstat(p)
            if stat.S_ISLNK(st.st_mode):
                digest = "->" + os.readlink(p)
            elif stat.S_ISREG(st.st_mode):
                try:
                    digest = hashlib.sha256(Path(p).read_bytes()).hexdigest()
                except PermissionError:
                    digest = f"size={st.st_size}"
            else:
                digest = ""
            out[os.path.relpath(p, root)] = (st.st_mode, digest, st.st_mtime_ns)  # type: ignore[assignment]
        out[os.path.relpath(dirpath, root)] = (os.lstat(dirpath).st_mode, "dir", os.lstat(dirpath).st_mtime_ns)  # type: ignore[assignment]
    return out


if __name__ == "__main__":  # build one by hand: python tests/hostile.py /tmp/hostile
    import sys

    for c in build(Path(sys.argv[1])):
        print(c)
