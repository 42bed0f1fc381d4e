"""The call shapes of three Python sitemap tools, over sitemapd, for code
written against them:

- ``sitemapd.compat.usp``: ultimate-sitemap-parser's
  ``sitemap_tree_for_homepage`` and ``sitemap_from_str``;
- ``sitemapd.compat.advertools``: advertools' ``sitemap_to_df``;
- ``sitemapd.compat.trafilatura``: trafilatura's ``sitemap_search``.

Each is written from its tool's documented behaviour (no code of theirs is
here); where the result differs, the function's docstring says how.
"""
