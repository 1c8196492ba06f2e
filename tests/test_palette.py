"""The span widget's type colours: apart from each other, from the states (a pending
selection, an English counterpart) and from the page, for normal sight and for each
colour blindness, and dark text readable on every one.

Distance is CIEDE2000 (colour-science's ``delta_E(..., method="CIE 2000")``) in CIELAB
(sRGB, D65): unlike CIE76, it weighs a difference as people see it (CIE76 rated two
light colours people confuse as 15 apart). Colour blindness is simulated with Machado,
Oliveira and Fernandes (2009), severity 1.0, on linear RGB (colour-science's matrices);
readability is the WCAG 2 contrast ratio against the page's text colour."""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest

from components.annotation.span_select import COLOURS, CSS, STATES

with warnings.catch_warnings():  # it warns that matplotlib (its plots) is not installed
    warnings.simplefilter("ignore")
    import colour

TEXT = "#111827"
PAGE = "#ffffff"
DEFICIENCY = {
    "deuteranopia": "Deuteranomaly",
    "protanopia": "Protanomaly",
    "tritanopia": "Tritanomaly",
}
APART = {"normal": 12.0, "deuteranopia": 7.5, "protanopia": 7.5, "tritanopia": 6.0}
"""Least CIEDE2000 between any two of the types, the states and the page: 12 reads as
plainly different side by side (2 is about the least a person notices); the simulated
colour blindnesses keep 6-7.5, lightness carrying them apart. The palette before this
test measured CIEDE2000 had 7.2 (customs and other) and 4.5 under deuteranopia."""


def _sight(name: str) -> np.ndarray:
    if name == "normal":
        return np.eye(3)
    with warnings.catch_warnings():  # tritanomaly's matrices are an approximation: said
        warnings.simplefilter("ignore")
        return colour.blindness.matrix_cvd_Machado2009(DEFICIENCY[name], 1.0)


def _rgb(code: str) -> np.ndarray:
    return np.array([int(code[i : i + 2], 16) / 255 for i in (1, 3, 5)])


def _lab(code: str, sight: str) -> np.ndarray:
    linear = np.clip(_sight(sight) @ colour.cctf_decoding(_rgb(code), function="sRGB"), 0, 1)
    xyz = colour.RGB_to_XYZ(linear, colour.RGB_COLOURSPACES["sRGB"], apply_cctf_decoding=False)
    white = colour.CCS_ILLUMINANTS["CIE 1931 2 Degree Standard Observer"]["D65"]
    return colour.XYZ_to_Lab(xyz, white)


def _apart(a: str, b: str, sight: str) -> float:
    return float(colour.delta_E(_lab(a, sight), _lab(b, sight), method="CIE 2000"))


def _contrast(a: str, b: str) -> float:
    weights = np.array([0.2126, 0.7152, 0.0722])
    lum = [float(weights @ colour.cctf_decoding(_rgb(c), function="sRGB")) for c in (a, b)]
    return (max(lum) + 0.05) / (min(lum) + 0.05)


def test_the_states_are_the_widgets_own() -> None:
    assert f"mark.pending {{ background: {STATES['pending']}" in CSS
    assert f"mark.en {{ background: {STATES['english']}" in CSS


def test_the_distance_is_colour_sciences_ciede2000() -> None:
    """Sharma, Wu and Dalal's test data (2005), pair 1: 2.0425."""
    pair = np.array([50.0, 2.6772, -79.7751]), np.array([50.0, 0.0, -82.7485])
    assert float(colour.delta_E(*pair, method="CIE 2000")) == pytest.approx(2.0425, abs=1e-4)


@pytest.mark.parametrize("sight", list(APART))
def test_every_type_colour_stands_apart(sight: str) -> None:
    colours = [*STATES.values(), PAGE, *COLOURS]
    assert len(set(COLOURS)) == len(COLOURS) == 10
    close = [
        (a, b, round(_apart(a, b, sight), 1))
        for a, b in itertools.combinations(colours, 2)
        if _apart(a, b, sight) < APART[sight]
    ]
    assert not close, close


def test_the_earlier_palettes_failed() -> None:
    """What reviews found: type 4 was the pending green, type 2 the English blue; then,
    measured in CIEDE2000, customs and other 7.2 apart, food and institutions 4.5 under
    deuteranopia."""
    first = ["#fde68a", "#bfdbfe", "#fbcfe8", "#bbf7d0", "#fed7aa"]
    assert _apart(first[3], STATES["pending"], "normal") < APART["normal"]
    assert _apart(first[1], STATES["english"], "normal") < APART["normal"]
    second = ["#ffdb70", "#d08fff", "#ff8870", "#daff8f", "#e28dbf"]
    second += ["#cbb4f9", "#f3ff70", "#f9b4c5", "#d4e28d", "#f47bd6"]
    assert round(_apart(second[4], second[9], "normal"), 1) == 7.2
    assert round(_apart(second[0], second[3], "deuteranopia"), 1) == 4.5


def test_text_reads_on_every_colour() -> None:
    assert min(_contrast(TEXT, c) for c in COLOURS) >= 7.0  # WCAG AAA
