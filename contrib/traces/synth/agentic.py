#!/usr/bin/env python3
"""A synthetic long-session agentic workload, Mooncake's JSONL format.

    agentic.py SEED SESSIONS > trace.jsonl

Each session starts from one of four shared system prompts (4-12 blocks
of 512 tokens) and runs 5-40 turns; every turn appends a lognormal tool
output or user text (median ~660 tokens, 50-20,000) and the previous
answer to the context, which is resent whole (a session's hash ids grow
turn by turn), until it passes 120,000 tokens. Sessions start in bursts
(30% after a long gap, the rest close together); turns follow 1-15 s of
think time plus the answer's decode. Written to check the router on
traffic it was not tuned on (BENCHMARKS.md, "Unseen workloads"), not to
model a particular product.
"""
import json
import random

from synth_args import seed_and_count

BLOCK = 512


def main():
    seed, nsess = seed_and_count(__doc__, "SESSIONS")
    r = random.Random(seed)
    nid = [1000]

    def new_blocks(n):
        out = list(range(nid[0], nid[0] + n))
        nid[0] += n
        return out

    systems = [new_blocks(r.randint(4, 12)) for _ in range(4)]
    reqs, t = [], 0.0
    for _ in range(nsess):
        t += r.expovariate(1 / 40.0) if r.random() < 0.3 else r.expovariate(1 / 3.0)
        ctx = list(r.choice(systems))
        tokens, ts = len(ctx) * BLOCK, t
        for _ in range(r.randint(5, 40)):
            tokens += max(50, min(int(r.lognormvariate(6.5, 1.0)), 20000))
            need = (tokens + BLOCK - 1) // BLOCK
            if need > len(ctx):
                ctx += new_blocks(need - len(ctx))
            out = max(8, min(int(r.lognormvariate(5.0, 0.8)), 2000))
            if tokens > 120000:
                break
            reqs.append({"timestamp": int(ts * 1000), "input_length": tokens,
                         "output_length": out, "hash_ids": list(ctx)})
            tokens += out
            ts += r.uniform(1, 15) + out * 0.02
    reqs.sort(key=lambda q: q["timestamp"])
    for q in reqs:
        print(json.dumps(q))


if __name__ == "__main__":
    main()
