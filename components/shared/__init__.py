"""What several sections' pages use: literal text, session keys, tables, charts, the
cached resources, the login check and the results viewer, the data banner, model choice,
the episode view, the cached result tables and the gap by adaptation. It never imports
a section."""
