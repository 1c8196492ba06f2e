"""The Account pages' pieces: the login form and the log-out button."""
