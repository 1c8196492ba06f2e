"""Performance scripts printing `name: value` lines (run as `python bench/NAME.py`)."""
