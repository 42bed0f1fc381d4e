"""Writes a sitemap index and FILES sitemaps of PER URLs each, spread over
HOSTS hosts (names under .test, never fetched), into DIR; the sitemaps are
to be served from http://127.0.0.1:PORT/."""

import sys

out, port, files, per, hosts = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
head = '<?xml version="1.0" encoding="UTF-8"?>'
index = [head, '<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">']
n = 0
for f in range(files):
    index.append(f"<sitemap><loc>http://127.0.0.1:{port}/s{f}.xml</loc></sitemap>")
    urls = [head, '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">']
    for _ in range(per):
        urls.append(f"<url><loc>http://h{n % hosts}.test/p/{n}</loc><lastmod>2026-0{1 + n % 9}-1{n % 9}</lastmod></url>")
        n += 1
    urls.append("</urlset>")
    with open(f"{out}/s{f}.xml", "w") as fh:
        fh.write("".join(urls))
index.append("</sitemapindex>")
with open(f"{out}/index.xml", "w") as fh:
    fh.write("".join(index))
