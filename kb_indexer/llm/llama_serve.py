"""Run llama-cpp-python's OpenAI-compatible server (``python -m kb_indexer.llm.llama_serve ARGS``, the
arguments of ``python -m llama_cpp.server``), as ``kbindex model serve`` does, with two changes:

* llama.cpp's extra CPU buffer types are off. On CPUs with AMX, llama.cpp repacks Q4_1 weights into its AMX
  buffer type and its batched matrix multiply then segfaults on the first multi-token prompt (seen with
  llama-cpp-python 0.3.36); plain CPU buffers work and are fast. Where the field does not exist this changes
  nothing.
* ``--pooling mean`` (taken out of the arguments before the server reads them): with ``--embedding true``,
  ``/v1/embeddings`` answers one mean-pooled vector per text. The server has no option for it, and a causal
  model such as SmolLM2 pools nothing by default (one vector per token).

Only a model file on disk is loaded: nothing is downloaded (the server's hub options are never passed). With
``--verbose false`` (what ``kbindex model serve`` passes unless ``--verbose``) llama.cpp logs only its errors, and a
model that cannot be loaded is one line, not a traceback.
"""

from __future__ import annotations

import runpy
import sys

import llama_cpp  # this module runs only as the server's own process (python -m), never imported by kbindex
import llama_cpp.llama_cpp as low


def _plain_cpu_buffers() -> None:
    default_params = low.llama_model_default_params

    def params():  # type: ignore[no-untyped-def]
        p = default_params()
        if hasattr(p, "use_extra_bufts"):
            p.use_extra_bufts = False
        return p

    low.llama_model_default_params = params


def _mean_pooling() -> None:
    init = llama_cpp.Llama.__init__

    def patched(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        kwargs.setdefault("pooling_type", low.LLAMA_POOLING_TYPE_MEAN)
        init(self, *args, **kwargs)

    llama_cpp.Llama.__init__ = patched  # type: ignore[method-assign]


def main(argv: list[str]) -> None:
    args = list(argv)
    if "--pooling" in args:
        at = args.index("--pooling")
        if args[at + 1:at + 2] == ["mean"]:
            _mean_pooling()
        del args[at:at + 2]
    _plain_cpu_buffers()
    sys.argv = ["llama_cpp.server", *args]
    verbose = args[args.index("--verbose") + 1:][:1] != ["false"] if "--verbose" in args else True
    try:
        runpy.run_module("llama_cpp.server", run_name="__main__", alter_sys=True)
    except Exception as exc:   # a model file llama.cpp cannot load, say
        if verbose:
            raise
        sys.stderr.write(f"llama.cpp server: {exc}\n")
        sys.exit(1)


if __name__ == "__main__":
    main(sys.argv[1:])
