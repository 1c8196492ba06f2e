"""First visit after a server start to /join (a crowd worker's invite link): hands over
to app.py, which opens pages/rating/join.py (see components/core/first_visit.py)."""

from components.core.first_visit import hand_over_to_app

hand_over_to_app()
