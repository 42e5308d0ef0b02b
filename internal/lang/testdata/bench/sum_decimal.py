#!/usr/bin/env python3
"""The CPython counterpart of BenchmarkSumLoop: add 1,000,000 decimals
(0.01 ... 1.00, scale 2) in a loop with the decimal module. Prints ns per
addition, the best of 5 runs."""
import time
from decimal import Decimal

N = 1_000_000
amounts = [Decimal("%d.%02d" % (k // 100, k % 100)) for k in ((i % 100) + 1 for i in range(N))]

best = None
for _ in range(5):
    start = time.perf_counter()
    total = Decimal(0)
    for a in amounts:
        total += a
    elapsed = time.perf_counter() - start
    assert str(total) == "505000.00", total
    best = elapsed if best is None else min(best, elapsed)
print("python %s: %.1f ns/addition, %.0f additions/s" % (
    __import__("sys").version.split()[0], best / N * 1e9, N / best))
