#!/usr/bin/env python3
"""Defects the queue's model test must catch, put back one at a time.

Each mutant puts back one defect the queue once had (or a near one) into the
sources, runs the scheduler's model test (crates/scheduler/tests/queue_model.rs),
prints whether it failed and where, and restores the file. A mutant the test
does not catch is a gap in the test. Not part of the test command: about a
minute per mutant on two cores.

    scripts/queue-mutants.py [INDEX ...]     default: every mutant
"""
import os, subprocess, sys

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
def mutate(path, old, new):
    p=f'{root}/{path}'; s=open(p).read()
    assert s.count(old)==1, (path, old)
    open(p,'w').write(s.replace(old,new))
    return (p, s)
mutants = [
 ("runs filed in the order they came (a due list's order, not the queue's)",
  'crates/scheduler/src/runs.rs', '    kept.extend(joining);\n    kept.sort_by(Listed::order);', '    kept.extend(joining);'),
 ("a push in the class of new URLs (waits behind the backlog)",
  'crates/scheduler/src/policy/mod.rs', '            Reason::Notified => Urgency::Pushed,', '            Reason::Notified => Urgency::Changed,'),
 ("GetURLs spaced over the lease's time to live (Crawl-delay ignored)",
  'crates/scheduler/src/lease.rs', '                        Politeness::Now => allowance_now(&record, self.now),', '                        Politeness::Now => allowance(&record, self.now, limits.ttl),'),
 ("a client's key ignored (queues per host)",
  'crates/scheduler/src/frontier.rs', '        Some(q) if q == keys::host_of(url) => Ok(None),\n        Some(q) => Ok(Some(q)),', '        Some(_) => Ok(None),'),
 ("a host's share checked only when its lane is opened",
  'crates/scheduler/src/lease.rs', '        if !self.lane(found.queue, found.host)? {\n            return Ok(Verdict::CloseLane);\n        }', ''),
 ("last_status not recorded for changed and not-modified",
  'crates/scheduler/src/queue.rs', '        rec.last_status = completion.last_status();', '        rec.last_status = completion.outcome.status();'),
 ("a gone URL not shown retired",
  'crates/scheduler/src/view.rs', '            retired: matches!(\n                UrlStatus::of(r),\n                UrlStatus::Retired | UrlStatus::Gone | UrlStatus::Moved\n            ),', '            retired: r.retired,'),
 ("validation samples before pushes",
  'crates/scheduler/src/lease.rs', '        self.pass(&[&[Pushed]], lanes, n, false)?;\n        let paid = self.chosen.len().saturating_add(samples).min(n);\n        self.pass(&[&[Validation]], lanes, paid, true)?;', '        self.pass(&[&[Validation]], lanes, samples.min(n), true)?;\n        self.pass(&[&[Pushed]], lanes, n, false)?;'),
 ("a URL whose host lost its trust chosen, then dropped (a slot used)",
  'crates/scheduler/src/lease.rs', '            if !trusted || (suspect && self.store.record_of(&c)?.is_none()) {', '            if suspect && self.store.record_of(&c)?.is_none() {'),
 ("duplicates not counted",
  'crates/scheduler/src/ingest.rs', '                self.stats.duplicates += 1;\n                o.merge(observed);', '                o.merge(observed);'),
]
which = sys.argv[1:] and [int(a) for a in sys.argv[1:]] or range(len(mutants))
for i in which:
    name, path, old, new = mutants[i]
    p, orig = mutate(path, old, new)
    try:
        r = subprocess.run(['cargo','test','-p','sitemapd-scheduler','--test','queue_model','--','--test-threads','2'], cwd=root, capture_output=True, text=True, timeout=1200)
        out = r.stdout + r.stderr
        lines = [l for l in out.splitlines() if 'panicked' in l or l.startswith('seed ') or 'assertion' in l or l.startswith('  left') or l.startswith(' right')]
        status = 'FAILED' if r.returncode != 0 else 'passed'
        print(f'## {i}: {name}: model test {status}')
        for l in lines[:6]: print('   ', l[:300])
        sys.stdout.flush()
    finally:
        open(p,'w').write(orig)
