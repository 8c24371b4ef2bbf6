"""Times Python's d20 on the dice bench's expressions (scripts/bench-dice-peers).

Usage: d20_peer.py SECONDS_PER_CASE OURS::THEIRS ...
Prints one line per case: `d20<TAB>ours<TAB>mode<TAB>ns per roll`, where mode is
`parse` (the text parsed and rolled each time) or `preparsed` (a tree parsed
once, rolled each time).

d20's Roller keeps an LFU cache of parsed trees (Roller._parse_cache), so a
repeated text would be parsed once and "parse included" would time a dict
look-up: that case swaps the cache for a mapping that stores nothing. Every
roll goes through Roller.roll, which also writes d20's Markdown result string
(RollResult.result): that is what d20.roll does for every caller.
"""

import sys
import time

import d20


class NoCache(dict):
    """A parse cache that never holds anything: every roll parses its text."""

    def __setitem__(self, key, value):
        pass


def time_per_call(seconds, call):
    """The median over 11 batches of the time per call, in nanoseconds, after
    a warm-up of a fifth of the budget (at least 0.1 s)."""
    start = time.perf_counter()
    calls = 0
    while time.perf_counter() - start < max(0.1, seconds / 5):
        call()
        calls += 1
    per_call = (time.perf_counter() - start) / calls
    batch = max(1, int(seconds / 11 / per_call))
    samples = []
    for _ in range(11):
        start = time.perf_counter()
        for _ in range(batch):
            call()
        samples.append((time.perf_counter() - start) * 1e9 / batch)
    samples.sort()
    return samples[len(samples) // 2]


def main():
    seconds = float(sys.argv[1])
    cases = [case.split("::", 1) for case in sys.argv[2:]]
    # Every case in turn for half a second first, as the other programs do.
    warm = d20.Roller()
    warm._parse_cache = NoCache()
    until = time.perf_counter() + 0.5
    while time.perf_counter() < until:
        for _, theirs in cases:
            warm.roll(theirs)
    for ours, theirs in cases:
        parsing = d20.Roller()
        parsing._parse_cache = NoCache()
        ns = time_per_call(seconds, lambda: parsing.roll(theirs).total)
        print(f"d20\t{ours}\tparse\t{ns:.1f}", flush=True)
        roller = d20.Roller()
        tree = roller.parse(theirs)
        ns = time_per_call(seconds, lambda: roller.roll(tree).total)
        print(f"d20\t{ours}\tpreparsed\t{ns:.1f}", flush=True)


if __name__ == "__main__":
    main()
