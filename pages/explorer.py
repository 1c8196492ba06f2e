"""First visit after a server start to /explorer: hands over to app.py, which opens
pages/dialogues/explorer.py for the visitor's role (see components/shared/first_visit.py)."""

from components.shared.first_visit import hand_over_to_app

hand_over_to_app()
