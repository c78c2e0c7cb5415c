"""Which rows an input is: its data files (discovery), a --filter (filters, selection) and the
plan read from their footers before any data (plan)."""
