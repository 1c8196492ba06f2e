"""Text made safe for where it goes: plain one-line text, CSV cells a spreadsheet will not
run, addresses without their secrets, and the translatable notes of models.toml."""
