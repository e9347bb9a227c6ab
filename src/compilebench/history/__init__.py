"""A history of finished runs (`compilebench history`): an SQLite store, changes along each series, a static site.
Torch-free; imports `core` and `analysis`."""
