"""llama-cpp-python's OpenAI server (`python -m llama_cpp.server`), with one more option: `--no-repack`.

    python scripts/llama_server.py [--no-repack] --model M.gguf --port N ...   (the rest as llama_cpp.server takes it)

`--no-repack` loads the model without ggml's extra buffer types, as llama.cpp's own server does with the same flag:
the weights stay as the file has them instead of being repacked for the CPU's matrix units (AMX, AVX-512 tiles).
A CPU that reports AMX under a hypervisor that traps it dies of SIGILL at the first matrix product of a repacked
model; without the repack the same build answers. llama-cpp-python 0.3.36 has no setting for it (neither `Llama(...)`
nor the server's), and ggml reads no environment variable for it: the model parameters' defaults, which `Llama`
starts from, are given `use_extra_bufts = False` before the server loads the model.
"""

from __future__ import annotations

import sys

NO_REPACK = "--no-repack"


def disable_extra_buffer_types() -> None:
    """Every model loaded from now on in this process keeps its weights as the file has them."""
    import llama_cpp.llama_cpp as native

    defaults = native.llama_model_default_params

    def model_params():
        params = defaults()
        params.use_extra_bufts = False
        return params

    native.llama_model_default_params = model_params


def main() -> None:
    if NO_REPACK in sys.argv[1:]:
        sys.argv = [arg for arg in sys.argv if arg != NO_REPACK]
        disable_extra_buffer_types()
    from llama_cpp.server.__main__ import main as serve

    serve()


if __name__ == "__main__":
    main()
