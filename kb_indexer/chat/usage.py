"""A turn's token use: what the backend reported (summed over the turn's model calls: tool rounds), else
kbindex's estimate (the prompt as sent, the answer's text), said so by ``source``. A cost is passed on
only where the backend reports one (``cost`` in its usage); kbindex has no price list."""

from __future__ import annotations

from typing import Any

from kb_indexer.tokens import estimate_tokens

_COUNTS = ("prompt_tokens", "completion_tokens", "total_tokens")


def context_share(tokens: Any, window: Any) -> float | None:
    """The context's use of the model's window, in % (``tokens``: the engine's ``context_tokens``, the last prompt
    as sent): the one figure the toolbar and ``/context`` show. None when either is unknown."""
    ok = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (tokens, window))
    return 100.0 * tokens / window if ok and window > 0 else None


def add(total: dict[str, Any], reported: dict[str, Any] | None) -> None:
    """Add one model call's reported usage to the turn's ``total``."""
    for key, value in (reported or {}).items():
        if key in (*_COUNTS, "cost") and isinstance(value, (int, float)) and not isinstance(value, bool):
            total[key] = total.get(key, 0) + value


def turn_usage(reported: dict[str, Any], prompt_estimate: int, answer: str) -> dict[str, Any]:
    """``{prompt_tokens, completion_tokens, total_tokens, source: backend|estimate[, cost]}``."""
    if reported.get("prompt_tokens") or reported.get("completion_tokens"):
        out: dict[str, Any] = {k: int(reported.get(k) or 0) for k in _COUNTS}
        if not out["total_tokens"]:
            out["total_tokens"] = out["prompt_tokens"] + out["completion_tokens"]
        if not out["prompt_tokens"]:          # a backend that counts only the answer
            out["prompt_tokens"] = prompt_estimate
            out["total_tokens"] = prompt_estimate + out["completion_tokens"]
            out["source"] = "backend (answer), estimate (prompt)"
        else:
            out["source"] = "backend"
    else:
        completion = estimate_tokens(answer) if answer else 0
        out = {"prompt_tokens": prompt_estimate, "completion_tokens": completion,
               "total_tokens": prompt_estimate + completion, "source": "estimate"}
    if "cost" in reported:
        out["cost"] = reported["cost"]
    return out


def usage_line(usage: Any) -> str | None:
    """``tokens: 1,234 in · 56 out`` (``≈`` when estimated), with the cost when reported."""
    if not isinstance(usage, dict) or not isinstance(usage.get("prompt_tokens"), int):
        return None
    approx = "" if usage.get("source") == "backend" else "≈"
    line = f"tokens: {approx}{usage['prompt_tokens']:,} in · {approx}{usage.get('completion_tokens') or 0:,} out"
    if isinstance(usage.get("cost"), (int, float)):
        line += f" · cost {usage['cost']:.4f}"
    return line
