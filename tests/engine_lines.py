"""SGLang startup lines in the formats of ../shared/reference/log-formats.md §A (built from its format strings)."""

from __future__ import annotations

from typing import Any


def server_args(**fields: Any) -> str:
    body = ", ".join(f"{k}={v!r}" for k, v in fields.items())
    return f"[2025-08-05 12:15:10] server_args=ServerArgs(model_path='Qwen/Qwen3-4B', {body})"


def kv_pool(tokens: int) -> str:
    return f"[2025-08-05 12:15:14 TP0] KV Cache is allocated. #tokens: {tokens}, K size: 1.42 GB, V size: 1.42 GB"


def mamba_pool(slots: int) -> str:
    return (f"[2025-12-11 06:20:00 TP0] Mamba Cache is allocated. max_mamba_cache_size: {slots}, "
            "conv_state size: 0.56GB, ssm_state size: 18.47GB ")


def capacity(pool: int, running: int, context: int) -> str:
    return (f"[2025-08-05 12:15:15 TP0] max_total_num_tokens={pool}, chunked_prefill_size=8192, "
            f"max_prefill_tokens=16384, max_running_requests={running}, context_len={context}, "
            "available_gpu_mem=21.27 GB")


READY = "[2025-08-05 12:15:16] The server is fired up and ready to roll!"


def engine_log(*lines: str) -> str:
    return "\n".join([*lines, READY]) + "\n"
