"""The Rating pages' pieces: the rating form (raters and crowd workers), the crowd
worker's visit (join page), the admin's crowd links and decisions (Studies, dashboard)."""
