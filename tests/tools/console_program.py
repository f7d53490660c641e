"""A session program for the console's tests (docs/console.md): not a stand-in for OCX.

It reads its record (D13), then until it is stopped prints a numbered line
every few tenths of a second, spends CPU between them and takes a little
more memory each second (up to 64 MiB), so a look at the console a few
seconds later finds its bars and its output moved. An objective
`ticks N` makes it end by itself, exit 0, after N lines.
"""
import json
import sys
import time


def main() -> int:
    record = json.loads(sys.stdin.readline() or "{}")
    words = str(record.get("objective", "")).split()
    limit = int(words[1]) if len(words) > 1 and words[0] == "ticks" and words[1].isdigit() else None
    hoard, n = [], 0
    while limit is None or n < limit:
        n += 1
        if len(hoard) < 32 and n % 3 == 0:
            hoard.append(bytearray(2 * 1024 * 1024))  # touched: counted by the memory cgroup
            for i in range(0, len(hoard[-1]), 4096):
                hoard[-1][i] = 1
        print(f"tick {n}: holding {2 * len(hoard)} MiB", flush=True)
        busy_until = time.monotonic() + 0.1
        while time.monotonic() < busy_until:
            pass
        time.sleep(0.2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
