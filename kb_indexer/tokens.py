"""The one token estimator: how many tokens a text or a message list costs, without a tokenizer.

Tokenizer libraries (tiktoken, tokenizers) download their tables on first use, which breaks offline
machines, and each model counts differently anyway. kbindex estimates instead, documented here and in
docs/context.md:

* text in scripts written with spaces between words (Latin, Cyrillic, Greek, digits, punctuation):
  one token per 4 characters, rounded up (the usual rule of thumb for English BPE vocabularies);
* every character of a script written without spaces or with syllable blocks (CJK ideographs, kana,
  Hangul): one token each (BPE vocabularies split them into one or more tokens per character);
* a message: its content plus ``MESSAGE_OVERHEAD`` tokens for its role and framing.

When a backend reports real counts (``usage``), callers record them beside the estimate so the gap can
be seen; nothing is corrected silently.
"""

from __future__ import annotations

import math
import re
from typing import Any, Iterable

CHARS_PER_TOKEN = 4
MESSAGE_OVERHEAD = 4
_DENSE = re.compile("[\u1100-\u11ff\u2e80-\u9fff\uac00-\ud7af\uf900-\ufaff\uff66-\uff9f]")


def estimate_tokens(text: str) -> int:
    """Estimated tokens of ``text`` (0 for the empty text)."""
    if not text:
        return 0
    dense = len(_DENSE.findall(text))
    return dense + math.ceil((len(text) - dense) / CHARS_PER_TOKEN)


def message_tokens(message: dict[str, Any]) -> int:
    """One chat message: its content (text, or the text parts of a list) and tool calls, plus overhead."""
    content = message.get("content")
    if isinstance(content, list):
        content = " ".join(str(p.get("text", "")) if isinstance(p, dict) else str(p) for p in content)
    total = estimate_tokens(content or "") + MESSAGE_OVERHEAD
    if message.get("tool_calls"):
        total += estimate_tokens(str(message["tool_calls"]))
    return total


def messages_tokens(messages: Iterable[dict[str, Any]]) -> int:
    return sum(message_tokens(m) for m in messages)
