"""Django's SQLite backend, with write transactions that queue without sleeping (base.py)."""
