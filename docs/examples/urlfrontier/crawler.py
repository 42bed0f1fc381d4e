#!/usr/bin/env python3
"""A minimal crawler that uses sitemapd as its URLFrontier (grpcio + stdlib only).

Each round: GetURLs (a few queues, a few URLs each, held in transit for --hold
seconds), fetch every URL with urllib, then PutURLs each one back as a known
item whose metadata carries what sitemapd reads (docs/urlfrontier.md):
`fetch.statusCode`, `signature` (sha256 of a 2xx body: equal to the stored one
means not modified) and `_redirTo` (a 3xx's target). Redirects are NOT followed:
sitemapd records the target itself. Fetches are sequential; sitemapd serves
each queue (host) at most once a second by default, and --per-queue bounds how
many URLs of one host a round fetches back to back. A URL acked FAIL (or not
acked) is not resent: sitemapd hands it out again once its --hold has passed.
Run ./generate.sh first for the stubs.

    python3 crawler.py [HOST:PORT]      # default 127.0.0.1:7071; token from SITEMAPD_TOKEN
"""
import argparse, collections, hashlib, os, time
import urllib.error, urllib.parse, urllib.request

import grpc
import urlfrontier_pb2 as pb
import urlfrontier_pb2_grpc as pb_grpc


class NoRedirect(urllib.request.HTTPRedirectHandler):
    """Makes a 3xx come back as an HTTPError instead of being followed."""
    def redirect_request(self, *args, **kwargs):
        return None


OPENER = urllib.request.build_opener(NoRedirect)


def fetch(url, timeout):
    """Fetches url; returns (status, metadata for sitemapd). Status 0: no answer."""
    try:
        with OPENER.open(url, timeout=timeout) as resp:
            status, body, headers = resp.status, resp.read(), resp.headers
    except urllib.error.HTTPError as e:  # 3xx (not followed), 4xx, 5xx
        status, body, headers = e.code, e.read(), e.headers
    except (urllib.error.URLError, OSError):  # refused, timed out, reset ...
        return 0, {"fetch.statusCode": "0"}
    meta = {"fetch.statusCode": str(status)}
    if 200 <= status < 300:
        meta["signature"] = hashlib.sha256(body).hexdigest()
    elif status in (301, 302, 303, 307, 308) and headers.get("Location"):
        meta["_redirTo"] = urllib.parse.urljoin(url, headers["Location"])
    return status, meta


def known_item(info, meta, refetch_at):
    """A fetched URL as a KnownURLItem, due again at refetch_at (unix seconds)."""
    md = {k: pb.StringList(values=[v]) for k, v in meta.items()}
    out = pb.URLInfo(url=info.url, key=info.key, crawlID=info.crawlID, metadata=md)
    return pb.URLItem(ID=info.url, known=pb.KnownURLItem(info=out, refetchable_from_date=refetch_at))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("address", nargs="?", default="127.0.0.1:7071")
    ap.add_argument("--rounds", type=int, default=20, help="stop after this many rounds")
    ap.add_argument("--idle", type=int, default=5, help="stop after this many empty rounds in a row")
    ap.add_argument("--queues", type=int, default=4, help="max_queues per GetURLs")
    ap.add_argument("--per-queue", type=int, default=2, help="max_urls_per_queue per GetURLs")
    ap.add_argument("--hold", type=int, default=60, help="delay_requestable: seconds in transit")
    ap.add_argument("--refetch-secs", type=int, default=86400, help="refetchable_from_date = now + this")
    ap.add_argument("--timeout", type=float, default=10.0, help="HTTP fetch timeout, seconds")
    args = ap.parse_args()

    token = os.environ.get("SITEMAPD_TOKEN")
    auth = [("authorization", f"Bearer {token}")] if token else []
    with grpc.insecure_channel(args.address) as channel:
        try:
            grpc.channel_ready_future(channel).result(timeout=10)
        except grpc.FutureTimeoutError:
            raise SystemExit(f"no URLFrontier service at {args.address} (sitemapd daemon --urlfrontier-listen)")
        try:
            crawl(pb_grpc.URLFrontierStub(channel), auth, args)
        except grpc.RpcError as e:  # e.g. UNAUTHENTICATED: no or wrong SITEMAPD_TOKEN
            raise SystemExit(f"frontier error: {e.code().name}: {e.details()}")


def crawl(frontier, auth, args):
    """The loop: GetURLs, fetch, PutURLs, until --rounds or --idle empty rounds in a row."""
    statuses, acks, empty, rounds = collections.Counter(), collections.Counter(), 0, 0
    while rounds < args.rounds and empty < args.idle:
        rounds += 1
        params = pb.GetParams(max_queues=args.queues, max_urls_per_queue=args.per_queue,
                              delay_requestable=args.hold)
        batch = list(frontier.GetURLs(params, metadata=auth, timeout=30))
        if not batch:
            empty += 1
            time.sleep(1)  # sitemapd serves a queue at most once a second by default
            continue
        empty = 0
        refetch_at = int(time.time()) + args.refetch_secs
        items, fetched = [], {}
        for info in batch:
            status, meta = fetch(info.url, args.timeout)
            fetched[info.url] = status
            items.append(known_item(info, meta, refetch_at))
        # PutURLs is a bidirectional stream: one ack per item, carrying the item's ID.
        for ack in frontier.PutURLs(iter(items), metadata=auth, timeout=30):
            verdict = pb.AckMessage.Status.Name(ack.status)
            acks[verdict] += 1
            print(f"round {rounds:>2}: {fetched[ack.ID]:>3} ack {verdict:<7} {ack.ID}", flush=True)
            statuses[fetched.pop(ack.ID)] += 1
        for url in fetched:  # never acked: sitemapd hands it out again once --hold has passed
            print(f"round {rounds:>2}: no ack for {url}")
    print(f"summary: {rounds} rounds, {sum(statuses.values())} URLs fetched, "
          f"status {dict(sorted(statuses.items()))}, acks {dict(acks)}")


if __name__ == "__main__":
    main()
