"""The generators' command line: SEED and a count, nothing else."""
import argparse


def seed_and_count(doc, count):
    """SEED and the count named count (REQUESTS, SESSIONS) from the command
    line; argparse refuses anything else (exit 2) and prints doc for --help."""
    ap = argparse.ArgumentParser(description=doc,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("seed", metavar="SEED", type=int,
                    help="the random seed: the same file for the same seed")
    ap.add_argument("count", metavar=count, type=int, help="how many to write (at least 1)")
    a = ap.parse_args()
    if a.count < 1:
        ap.error(f"{count} must be at least 1")
    return a.seed, a.count
