"""Machine providers behind one interface (see base.py)."""
