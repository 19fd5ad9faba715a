"""`klue benchmark`: tasks x models x seeds, resumable, failures recorded (runner.py; one cell: cells.py)."""
