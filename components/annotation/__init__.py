"""The Annotation pages' pieces: the annotator's view, the span selector (a v2
component), the projects and adjudication page."""
