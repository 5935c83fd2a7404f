#!/usr/bin/env python3
"""Throughput benchmark; same as `thinkprobe bench`. Example:
    .venv/bin/python scripts/bench.py -n 100 --json docs/bench-cpu.json
"""
import sys

from thinkprobe.cli import main

if __name__ == "__main__":
    sys.exit(main(["bench", *sys.argv[1:]]))
