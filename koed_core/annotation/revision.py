"""A revised taxonomy for an open project: guidelines rewritten, types added, while the
annotation goes on; the annotators' earlier answers keep the version they were made with."""

from __future__ import annotations

from koed_core.annotation.projects import AnnotationRules
from koed_core.annotation.taxonomy import AnnotationError, Taxonomy
from koed_core.i18n import _


def revise_taxonomy(annotations: AnnotationRules, project_id: int, revised: Taxonomy) -> str:
    """Give an open project a revised taxonomy and return its version. Every code of the
    current one stays: an annotation already made names its types by code, and a code's
    meaning is the annotators' contract. New annotations take the revised version.

    Raises:
        AnnotationError: the project is closed, or the revision drops a code.
    """
    project = annotations.project(project_id)
    if project["closed"]:
        raise AnnotationError(_("project {id} is closed", id=project_id))
    current = annotations.taxonomy(project)
    dropped = [code for code in current.codes if code not in revised.codes]
    if dropped:
        raise AnnotationError(
            _(
                "a revision keeps every type of the current taxonomy (annotations name them); "
                "missing: {codes}",
                codes=", ".join(dropped),
            )
        )
    annotations.q.ensure_taxonomy(revised.version, revised.name, revised.as_rows())
    annotations.q.set_taxonomy(project_id, revised.version)
    return revised.version
