#!/usr/bin/env python3
"""The CPython counterparts of BenchmarkNested (bench_nested_test.go): a
1,000-item list gone through inside a loop over it (1,000,000 runs of the
inner body) with the decimal module. Prints ns per run of the inner body,
the best of 5 runs, for each of the three loops."""
import sys
import time
from decimal import Decimal

items = [Decimal(i + 1) for i in range(1000)]


def add1():
    counter = Decimal(0)
    for i in items:
        for j in items:
            counter += 1
    return counter


def expression():
    total = Decimal(0)
    for i in items:
        for j in items:
            total = total + j * 2 - 1
    return total


def double(value):
    return value * 2


def call_and_field():
    row = {"price": Decimal("1.50")}
    total = Decimal(0)
    for i in items:
        for j in items:
            above = double(row["price"])
            total += above
    return total


for name, fn, want in (("Add1", add1, "1000000"), ("Expression", expression, "1000000000"),
                       ("CallAndField", call_and_field, "3000000.00")):
    best = None
    for _ in range(5):
        start = time.process_time()
        got = fn()
        elapsed = time.process_time() - start
        assert str(got) == want, (name, got)
        best = elapsed if best is None else min(best, elapsed)
    print("python %s %s: %.1f ns/inner" % (sys.version.split()[0], name, best / 1e6 * 1e9))
