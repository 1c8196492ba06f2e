"""What every page runs on: literal text, session keys and link notices, the cached
resources and result tables, the login check and the results viewer, the reader's
language and terms, tables and charts, the first visit after a start and "page not
found". Infrastructure, no feature of its own; it never imports a section or
``components.shared``."""
