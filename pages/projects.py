"""First visit after a server start to /projects: hands over to app.py, which opens
pages/annotation/projects.py for the visitor's role (see components/shared/first_visit.py)."""

from components.shared.first_visit import hand_over_to_app

hand_over_to_app()
