#!/usr/bin/env python3
"""A synthetic short-prompt code-assistant workload, Mooncake's JSONL format.

    code.py SEED REQUESTS > trace.jsonl

Prompts are lognormal (median ~735 tokens, 64-6,000), answers short
(median ~45 tokens, 4-400). A prompt opens with its repository's context
(1-4 blocks of 512 tokens), repositories drawn from a Pareto law over 200
of them, so a few are hot; the rest of the prompt is new. Arrivals are
Poisson and bursty: an on/off switch (1% a request) between 5 and 40
requests a second. Written to check the router on traffic it was not
tuned on (BENCHMARKS.md, "Unseen workloads").
"""
import json
import random

from synth_args import seed_and_count

BLOCK = 512


def main():
    seed, n = seed_and_count(__doc__, "REQUESTS")
    r = random.Random(seed)
    nid = [5000]

    def new_blocks(k):
        out = list(range(nid[0], nid[0] + k))
        nid[0] += k
        return out

    repos = [new_blocks(r.randint(1, 4)) for _ in range(200)]
    t, burst = 0.0, False
    for _ in range(n):
        if r.random() < 0.01:
            burst = not burst
        t += r.expovariate(40.0 if burst else 5.0)
        repo = repos[min(int(r.paretovariate(1.2)) - 1, 199)]
        tokens = max(64, min(int(r.lognormvariate(6.6, 0.7)), 6000))
        blocks = repo[:min(len(repo), tokens // BLOCK)]
        blocks += new_blocks(max(0, (tokens + BLOCK - 1) // BLOCK - len(blocks)))
        out = max(4, min(int(r.lognormvariate(3.8, 0.9)), 400))
        print(json.dumps({"timestamp": int(t * 1000), "input_length": tokens,
                          "output_length": out, "hash_ids": blocks}))


if __name__ == "__main__":
    main()
