"""The test suite (pytest); fixtures shared with bench/ live in fixtures/."""
