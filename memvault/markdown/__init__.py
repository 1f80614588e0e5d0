"""Markdown of the vault: names, footnotes, wikilinks, the editorial gate, article cleanup, lint."""
