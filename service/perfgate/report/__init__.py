"""Pure rendering of results: terminal tables, progress, markdown, json, plots."""
