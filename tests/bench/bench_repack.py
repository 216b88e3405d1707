"""What ggml's extra buffer types are worth: time per token of the local model with them (llama.cpp's default:
weights repacked for the CPU's matrix instructions) and without them (`scripts/llama_server.py --no-repack`, the
fallback of scripts/local_model.py on a CPU that reports AMX and traps it), side by side in one process.

    python tests/bench/bench_repack.py [--model PATH] [--rounds 5] [--tokens 64] [--threads 2]

Needs llama-cpp-python and the model file (scripts/fetch-models.sh; default Qwen2.5-Coder-0.5B in
$SUNWELL_MODELS_DIR or ~/.cache/sunwell-models). The model is loaded twice, once each way, and the two take turns
on the same prompt (about 350 tokens of Python) and the same greedy continuation (TOKENS tokens); llama.cpp's own counters give
prompt and generation time per token. Reported: the median of ROUNDS for each, and the ratio without / with.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))
import llama_server  # scripts/: the flag's own code

# A module to go on writing: the model continues it for as long as it is let (the end of text is barred as well).
PROMPT = '"""Arithmetic helpers."""\n\n\n' + "".join(
    f"def func_{i}(x):\n    return x * {i} + {i * 7}\n\n\n" for i in range(17)
) + "def func_17(x):\n"


def load(model: str, threads: int, repack: bool):
    import llama_cpp

    if not repack:
        llama_server.disable_extra_buffer_types()  # for this load and every later one: load the repacked one first
    return llama_cpp.Llama(model, n_ctx=2048, n_threads=threads, n_threads_batch=threads, verbose=False)


def timed(llm, tokens: int) -> tuple[float, float, int, int]:
    """(prompt ms per token, generation ms per token, prompt tokens, generated tokens) of one fresh answer."""
    import llama_cpp

    llm.reset()  # no prefix reused from the round before
    llama_cpp.llama_perf_context_reset(llm.ctx)
    llm.create_completion(PROMPT, max_tokens=tokens, temperature=0, logit_bias={llm.token_eos(): -1e9})
    perf = llama_cpp.llama_perf_context(llm.ctx)
    return perf.t_p_eval_ms / max(perf.n_p_eval, 1), perf.t_eval_ms / max(perf.n_eval, 1), perf.n_p_eval, perf.n_eval


def main() -> None:
    models = Path(os.environ.get("SUNWELL_MODELS_DIR") or Path.home() / ".cache" / "sunwell-models")
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default=str(models / "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"))
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--tokens", type=int, default=64)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    llms = {"with extra buffer types": load(args.model, args.threads, repack=True),
            "without (--no-repack)": load(args.model, args.threads, repack=False)}
    runs: dict[str, list[tuple[float, float, int, int]]] = {name: [] for name in llms}
    for _ in range(args.rounds):
        for name, llm in llms.items():
            runs[name].append(timed(llm, args.tokens))
    medians = {}
    print(f"{Path(args.model).name}, {args.threads} threads, median of {args.rounds} rounds")
    for name, rows in runs.items():
        prompt, gen = statistics.median(r[0] for r in rows), statistics.median(r[1] for r in rows)
        medians[name] = (prompt, gen)
        print(f"  {name:24} prompt {prompt:6.2f} ms/token ({1000 / prompt:5.0f} tok/s, {rows[0][2]} tokens)   "
              f"generation {gen:6.2f} ms/token ({1000 / gen:4.0f} tok/s, {rows[0][3]} tokens)")
    (p1, g1), (p2, g2) = medians.values()
    print(f"  without / with: prompt {p2 / p1:.2f}x, generation {g2 / g1:.2f}x the time per token")


if __name__ == "__main__":
    main()
