"""The Models pages' pieces (Chat, Runs, Judge): chat panes, the run form and stored
runs, the background jobs panel."""
