"""Run llama-cpp-python's OpenAI-compatible server with llama.cpp's extra CPU buffer types off.

Usage: ``python tests/llm/llama_launcher.py --model FILE.gguf --host 127.0.0.1 --port N ...`` (the
arguments of ``python -m llama_cpp.server``).

Why: on CPUs with AMX, llama.cpp repacks Q4_1 weights into its AMX buffer type and its batched
matrix multiply then segfaults on the first multi-token prompt (seen with llama-cpp-python 0.3.36).
Loading the model with ``use_extra_bufts = false`` keeps plain CPU buffers, which work and are
fast. When the field does not exist this changes nothing (the fixture then falls back to
``--n_ubatch 1``, which avoids the crash at a cost in prompt speed).

``--pooling mean`` (taken out of the arguments before the server reads them): with ``--embedding true``,
``/v1/embeddings`` answers one mean-pooled vector per text. The server has no option for it, and a
causal model such as SmolLM2 pools nothing by default (one vector per token).
"""

from __future__ import annotations

import runpy
import sys

import llama_cpp.llama_cpp as low

_default_params = low.llama_model_default_params


def _params():
    params = _default_params()
    if hasattr(params, "use_extra_bufts"):
        params.use_extra_bufts = False
    return params


low.llama_model_default_params = _params


def _mean_pooling() -> None:
    import llama_cpp

    init = llama_cpp.Llama.__init__

    def patched(self, *args, **kwargs):
        kwargs.setdefault("pooling_type", low.LLAMA_POOLING_TYPE_MEAN)
        init(self, *args, **kwargs)

    llama_cpp.Llama.__init__ = patched


if __name__ == "__main__":
    if "--pooling" in sys.argv:
        at = sys.argv.index("--pooling")
        if sys.argv[at + 1:at + 2] == ["mean"]:
            _mean_pooling()
        del sys.argv[at:at + 2]
    sys.argv[0] = "llama_cpp.server"
    runpy.run_module("llama_cpp.server", run_name="__main__", alter_sys=True)
