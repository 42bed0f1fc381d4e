"""A crawler's load on a daemon's HTTP API: WORKERS threads each lease up to
1,000 due URLs (10 per host), then report them all not modified, until
TARGET URLs are done. Prints how many and how fast."""

import http.client
import json
import sys
import threading
import time

port, workers, target = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
HEADERS = {"Authorization": "Bearer bench-token", "Content-Type": "application/json"}
done = [0]
failed = []
lock = threading.Lock()


def work():
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    while True:
        with lock:
            if done[0] >= target:
                return
        c.request("POST", "/v1/lease", json.dumps({"n": 1000, "per_host": 10, "ttl_secs": 300}), HEADERS)
        r = c.getresponse()
        body = r.read()
        if r.status != 200:
            failed.append(f"lease answered {r.status}: {body[:200]!r}")
            return
        urls = [u["url"] for u in json.loads(body).get("urls", [])]
        if not urls:
            time.sleep(0.05)
            continue
        c.request("POST", "/v1/complete", json.dumps([{"url": u, "outcome": "not-modified"} for u in urls]), HEADERS)
        r = c.getresponse()
        r.read()
        if r.status != 200:
            failed.append(f"complete answered {r.status}")
            return
        with lock:
            done[0] += len(urls)


threads = [threading.Thread(target=work) for _ in range(workers)]
start = time.time()
for t in threads:
    t.start()
for t in threads:
    t.join()
took = time.time() - start
if failed:
    sys.exit(failed[0])
print(f"{done[0]} {took:.2f}")
