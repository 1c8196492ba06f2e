"""First visit after a server start to /rate: hands over to app.py, which opens
pages/rating/rate.py for the visitor's role (see components/core/first_visit.py)."""

from components.core.first_visit import hand_over_to_app

hand_over_to_app()
