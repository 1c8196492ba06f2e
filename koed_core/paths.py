"""Where the files the project ships live, resolved once from the package location."""

from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parents[1]
DATA_DIR = PROJECT_ROOT / "data"
LABELS_FILE = DATA_DIR / "labels.json"
SAMPLE_FILE = DATA_DIR / "sample" / "koed_sample.json"
DEFAULT_REGISTRY = PROJECT_ROOT / "models.toml"
LOCALE_DIR = PROJECT_ROOT / "locale"
"""gettext catalogs: ``koed.pot`` (extracted from the code) and ``<lang>/LC_MESSAGES/koed.po``."""
