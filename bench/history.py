#!/usr/bin/env python3
"""One client's latency of one GET, on keep-alive: the first request apart, 20 more as warm-up,
then N timed; prints the first answer's head and p50, p99 and max. What bench/RESULTS.md's
"A model's price series" table was measured with:

    python3 bench/history.py http://127.0.0.1:18510 \
      "/v1/listings/stats/history?brand=brand-0&model=gold-tourbillon-585832n-0&interval=week&from=2024-12-02&to=2026-11-29" 500
"""
import http.client
import sys
import time
import urllib.parse


def main():
    base, path, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    url = urllib.parse.urlparse(base)
    connection = http.client.HTTPConnection(url.hostname, url.port)

    def get():
        started = time.perf_counter()
        connection.request("GET", path)
        response = connection.getresponse()
        body = response.read()
        return (time.perf_counter() - started) * 1000, response.status, body

    ms, status, body = get()
    print(f"first {ms:.2f} ms, status {status}: {body[:200]!r}")
    for _ in range(20):
        get()
    times = sorted(get()[0] for _ in range(n))

    def pick(p):
        return times[min(len(times) - 1, int(round(p / 100 * (len(times) - 1))))]

    print(f"n={n} p50={pick(50):.2f} p99={pick(99):.2f} max={times[-1]:.2f} ms")


if __name__ == "__main__":
    main()
