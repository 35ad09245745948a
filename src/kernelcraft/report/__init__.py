"""Reports: HTML and Markdown for one task (records or a ledger run), SUMMARY.md for a set of records."""
