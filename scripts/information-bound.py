#!/usr/bin/env python3
"""What freshness the sitemaps' information allows at best (for the noisy and
mixed scenarios), on the simulator's default world: 10,000 pages whose change
rates are log-normal (median 0.1 a day, sigma 1, clamped to [0.001, 24]),
Poisson changes, 2,000 fetches a day. Python 3 standard library only.

A policy that knows each page's true rate, but sees a change only when the
sitemap announces it (a share `recall` of the changes, `delay` hours late),
chooses per page one of
  (a) fetch every announced change (cost r*lambda a day) plus a periodic
      refresh every I days for the changes not announced;
  (a') fetch every announced change, and refetch I days after the last fetch
      of either kind (a renewal: what `lastmod` does with its fallback);
  (b) ignore the announcements: a periodic refresh every I days,
and the intervals are set by one Lagrange multiplier so that the fetches add
up to the budget (Cho & Garcia-Molina's allocation, with (a) and (a')
added). This is the best policy of that class, a model, not a proof that no
policy can do better.

Per page, with lambda its rate, r the recall and d the delay (days):
  (a) freshness = F_hidden(I) / (1 + r*lambda*d), where F_hidden(I) is the
      chance that no unannounced change happened since the last fetch, the
      fetches being the announced changes (Poisson, r*lambda) and the
      periodic ones (every I): 1 - mu * int_0^I e^(-lambda a)(1 - a/I) da,
      mu = (1 - r)*lambda; the delay factor is the share of time an
      announced change is not yet visible;
  (a') with T = min(Exp(r*lambda), I) the time between fetches: freshness =
      ((1 - e^(-lambda*I))/lambda) / E[T] over the same delay factor, at
      1/E[T] fetches a day, E[T] = (1 - e^(-r*lambda*I))/(r*lambda);
  (b) freshness = (1 - e^(-lambda*I)) / (lambda*I).
A model, not a simulation: it checks itself on the two ends, recall 1 and
no delay (it must come to the oracle, 0.997 in the scenario table) and
recall 0 (the best any rate policy can do: at least adaptive's 0.731).
The delay adds the simulator's sitemap read latency (about half an hour).

    scripts/information-bound.py            # every row below
"""
import math
import random

PAGES = 2000  # a sample of the 10,000 (the bound is per page)
BUDGET_PER_PAGE = 2000 / 10000  # fetches per page and day
READ_LATENCY_DAYS = 0.02


def rates(seed=1):
    rng = random.Random(seed)
    return [min(max(rng.lognormvariate(math.log(0.1), 1.0), 0.001), 24.0) for _ in range(PAGES)]


def announced(lam, interval, recall, delay_days):
    hidden = (1 - recall) * lam
    if interval == math.inf:
        f_hidden = recall
    else:
        x = lam * interval
        integral = -math.expm1(-x) / lam - (1 - math.exp(-x) * (1 + x)) / (lam * lam * interval)
        f_hidden = 1 - hidden * integral
    return f_hidden / (1 + recall * lam * delay_days)


def renewal(lam, interval, recall, delay_days):
    """(freshness, fetches a day) of (a')."""
    if interval == math.inf:
        between = 1 / (recall * lam)
        fresh = 1 / lam
    else:
        between = -math.expm1(-recall * lam * interval) / (recall * lam)
        fresh = -math.expm1(-lam * interval) / lam
    return fresh / between / (1 + recall * lam * delay_days), 1 / between


def periodic(lam, interval):
    if interval == math.inf:
        return 0.0
    x = lam * interval
    return -math.expm1(-x) / x


INTERVALS = [0.02 * 1.08**k for k in range(140)] + [math.inf]


def options(lam, recall, delay_days):
    """(freshness, fetches a day) of every choice for one page."""
    rows = [(periodic(lam, i), 0.0 if i == math.inf else 1 / i) for i in INTERVALS]
    if recall > 0:
        d = delay_days + READ_LATENCY_DAYS
        rows += [
            (announced(lam, i, recall, d), recall * lam + (0.0 if i == math.inf else 1 / i))
            for i in INTERVALS
        ]
        rows += [renewal(lam, i, recall, d) for i in INTERVALS]
    return rows


def bound(kinds):
    """kinds: (share of pages, recall, delay in hours). Mean freshness."""
    lams = rates()
    table = []
    for n, lam in enumerate(lams):
        u, acc = (n + 0.5) / len(lams), 0.0
        for share, recall, delay_h in kinds:
            acc += share
            if u < acc:
                break
        table.append(options(lam, recall, delay_h / 24))

    def allocate(nu):
        spent = fresh = 0.0
        for rows in table:
            f, c = max(rows, key=lambda fc: fc[0] - nu * fc[1])
            spent += c
            fresh += f
        return spent / len(table), fresh / len(table)

    lo, hi = 1e-7, 10.0
    for _ in range(40):
        mid = math.sqrt(lo * hi)
        if allocate(mid)[0] > BUDGET_PER_PAGE:
            lo = mid
        else:
            hi = mid
    return allocate(hi)[1]


if __name__ == "__main__":
    print("| scenario | what the sitemaps say | best freshness the information allows (model) |")
    print("|---|---|---|")
    for name, what, kinds in [
        ("truthful (check: oracle 0.997)", "every change, at once", [(1.0, 1.0, 0.0)]),
        ("noisy", "70% of changes, 6 h late", [(1.0, 0.7, 6.0)]),
        ("silent (check: >= adaptive 0.731)", "nothing", [(1.0, 0.0, 0.0)]),
        (
            "mixed",
            "50% truthful, 20% noisy, 30% liar or silent",
            [(0.5, 1.0, 0.0), (0.2, 0.7, 6.0), (0.3, 0.0, 0.0)],
        ),
    ]:
        print(f"| {name} | {what} | {bound(kinds):.3f} |")
