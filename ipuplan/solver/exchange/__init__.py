"""Exchange: the per-tile encoding of transfers (encoding.py) and the tables/fragments family (tables.py)."""
