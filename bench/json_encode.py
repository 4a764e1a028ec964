"""Benchmark: scrapy_fresh.jsontext.compact_encoder against json.JSONEncoder.encode.

The values are what the hot paths encode: a record's ``request`` column, a site's check
counts, a visit-log line. Both give the same text (checked here on each value, and by
``tests/test_jsontext.py`` on random ones); the table is the time per value of each,
and the standard encoder's over ours, measured in the same run.

Usage::

    python bench/json_encode.py            # 200,000 encodings of each value, best of 5
"""

from __future__ import annotations

import argparse
import json
import sys
import timeit
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from scrapy_fresh.jsontext import compact_encoder

VALUES = {
    "request column": {"url": "http://127.0.0.1:8000/p17.html", "callback": "parse"},
    "site check counts": [3, 1, 0, 0, 12, 0, 4, 0, 1, 0, 0, 2],
    "visit-log line": {
        "event": "visited",
        "url": "http://127.0.0.1:8000/p17.html",
        "outcome": "not_modified",
        "status": 304,
        "bytes": 212,
        "at": 1800000000.25,
        "next_due": 1800086400.5,
        "fields": [],
    },
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--number", type=int, default=200_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    standard = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), check_circular=False)
    ours = compact_encoder(ensure_ascii=False)
    print("| value | json.JSONEncoder µs | compact_encoder µs | ratio |")
    print("|---|---:|---:|---:|")
    for name, value in VALUES.items():
        if standard.encode(value) != ours(value):
            raise SystemExit(f"{name}: the encoders differ")
        times = [
            min(timeit.repeat(lambda f=f, v=value: f(v), number=args.number, repeat=args.repeat))
            / args.number
            * 1e6
            for f in (standard.encode, ours)
        ]
        print(f"| {name} | {times[0]:.2f} | {times[1]:.2f} | {times[0] / times[1]:.2f}x |")


if __name__ == "__main__":
    main()
