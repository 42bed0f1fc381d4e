"""A loopback site for the memory runs (RELIABILITY.md, "Memory and store size"):
robots.txt -> index -> N sitemaps of PER URLs, written under DIR/pPORT.

    python3 gen_site.py DIR PORT N PER      # e.g. /tmp/site 18081 20 50000

Serve it with `python3 -m http.server PORT --bind 127.0.0.1 --directory DIR/pPORT`.
"""
import os
import sys

out, port, n_maps, per = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
root = os.path.join(out, f"p{port}")
os.makedirs(root, exist_ok=True)
base = f"http://127.0.0.1:{port}"
with open(f"{root}/robots.txt", "w") as f:
    f.write(f"User-agent: *\nDisallow:\nSitemap: {base}/index.xml\n")
with open(f"{root}/index.xml", "w") as f:
    f.write('<?xml version="1.0" encoding="UTF-8"?>\n<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n')
    for m in range(n_maps):
        f.write(f"<sitemap><loc>{base}/s{m}.xml</loc></sitemap>\n")
    f.write("</sitemapindex>\n")
for m in range(n_maps):
    with open(f"{root}/s{m}.xml", "w") as f:
        f.write('<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n')
        for i in range(per):
            day = 1 + (i % 28)
            f.write(
                f"<url><loc>{base}/catalog/section-{i % 37}/map{m}-item-{i}.html</loc>"
                f"<lastmod>2025-10-{day:02d}</lastmod><changefreq>weekly</changefreq></url>\n"
            )
        f.write("</urlset>\n")
