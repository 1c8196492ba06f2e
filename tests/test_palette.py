"""The span widget's type colours: apart from each other and from the
states (a pending selection, an English counterpart) for normal sight and for each colour
blindness, and dark text readable on every one.

Distance is CIE76 Delta E in CIELAB (sRGB, D65); colour blindness is simulated with
Machado, Oliveira and Fernandes (2009), severity 1.0, on linear RGB; readability is the
WCAG 2 contrast ratio against the page's text colour."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from components.annotation.span_select import COLOURS, CSS, STATES

TEXT = "#111827"
SIGHT = {
    "normal": np.eye(3),
    "deuteranopia": np.array(
        [
            [0.367322, 0.860646, -0.227968],
            [0.280085, 0.672501, 0.047413],
            [-0.01182, 0.04294, 0.968881],
        ]
    ),
    "protanopia": np.array(
        [
            [0.152286, 1.052583, -0.204868],
            [0.114503, 0.786281, 0.099216],
            [-0.003882, -0.048116, 1.051998],
        ]
    ),
    "tritanopia": np.array(
        [
            [1.255528, -0.076749, -0.178779],
            [-0.078411, 0.930809, 0.147602],
            [0.004733, 0.691367, 0.3039],
        ]
    ),
}
APART = {"normal": 15.0, "deuteranopia": 9.0, "protanopia": 9.0, "tritanopia": 8.0}
"""Least Delta E between any two colours: 15 reads as plainly different side by side;
the simulated colour blindnesses keep at least 8-9 (lightness carries them apart)."""


def _rgb(code: str) -> np.ndarray:
    return np.array([int(code[i : i + 2], 16) / 255 for i in (1, 3, 5)])


def _linear(c: np.ndarray) -> np.ndarray:
    return np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)


def _lab(code: str, sight: str) -> np.ndarray:
    linear = np.clip(SIGHT[sight] @ _linear(_rgb(code)), 0, 1)
    xyz = (
        np.array([[0.4124, 0.3576, 0.1805], [0.2126, 0.7152, 0.0722], [0.0193, 0.1192, 0.9505]])
        @ linear
        / np.array([0.95047, 1.0, 1.08883])
    )
    f = np.where(xyz > 0.008856, np.cbrt(xyz), 7.787 * xyz + 16 / 116)
    return np.array([116 * f[1] - 16, 500 * (f[0] - f[1]), 200 * (f[1] - f[2])])


def _contrast(a: str, b: str) -> float:
    lum = [float(np.array([0.2126, 0.7152, 0.0722]) @ _linear(_rgb(c))) for c in (a, b)]
    return (max(lum) + 0.05) / (min(lum) + 0.05)


def test_the_states_are_the_widgets_own() -> None:
    assert f"mark.pending {{ background: {STATES['pending']}" in CSS
    assert f"mark.en {{ background: {STATES['english']}" in CSS


@pytest.mark.parametrize("sight", list(SIGHT))
def test_every_type_colour_stands_apart(sight: str) -> None:
    colours = [*STATES.values(), *COLOURS]
    assert len(set(COLOURS)) == len(COLOURS) == 10
    close = [
        (a, b, round(float(np.linalg.norm(_lab(a, sight) - _lab(b, sight))), 1))
        for a, b in itertools.combinations(colours, 2)
        if np.linalg.norm(_lab(a, sight) - _lab(b, sight)) < APART[sight]
    ]
    assert not close, close


def test_the_old_palette_failed() -> None:
    """What a review found: type 4 was the pending green, type 2 the English blue."""
    old = ["#fde68a", "#bfdbfe", "#fbcfe8", "#bbf7d0", "#fed7aa"]
    assert np.linalg.norm(_lab(old[3], "normal") - _lab(STATES["pending"], "normal")) < 15
    assert np.linalg.norm(_lab(old[1], "normal") - _lab(STATES["english"], "normal")) < 15


def test_text_reads_on_every_colour() -> None:
    assert min(_contrast(TEXT, c) for c in COLOURS) >= 7.0  # WCAG AAA
