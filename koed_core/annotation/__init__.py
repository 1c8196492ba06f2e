"""Linguists' annotation of the cultural adaptation: what the Korean reconstruction changed.

A dialogue gets an adaptation category and cultural-signal spans on its Korean turns,
each linked to the English span it replaces (or marked as having none), in projects with
blind double annotation, agreement and a reviewer's final answer.
"""
