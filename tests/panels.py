"""Reading a widget panel as a person would: its parts, its text, its plot (shared by the widget tests)."""
import html
import io
import re

import ipywidgets as w
import numpy as np
from PIL import Image

from minilab import widgets


def parts(box, cls, description=None):
    """Every widget of type `cls` (and `description`) inside `box`, in reading order."""
    found = [box] if isinstance(box, cls) and description in (None, getattr(box, "description", None)) else []
    for child in getattr(box, "children", ()):
        found += parts(child, cls, description)
    return found


def part(box, cls, description=None):
    found = parts(box, cls, description)
    assert len(found) == 1, f"{len(found)} {cls.__name__} widgets named {description!r}"
    return found[0]


def text(box) -> str:
    """The panel's text area, as a person reads it."""
    return html.unescape(re.sub("<[^>]+>", "", parts(box, w.HTML)[0].value))


def plot_pixels(box) -> np.ndarray:
    """The panel's plot decoded; fails unless it is a real, non-blank PNG no taller than the limit."""
    data = part(box, w.Image).value
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "the plot is not a PNG"
    assert len(data) > 8_000, f"a {len(data)}-byte PNG is a blank plot"
    img = np.asarray(Image.open(io.BytesIO(data)).convert("L"), dtype=np.float64)
    assert img.shape[0] <= widgets.MAX_PLOT_HEIGHT_PX, f"plot {img.shape[0]} px tall"
    ink = (img < 200).mean()  # share of pixels that are not (near-)white
    assert img.std() > 10 and ink > 0.01, f"near-uniform plot (std {img.std():.1f}, ink {ink:.3f})"
    return img


def assert_fits(box):
    assert box.layout.max_height == widgets.MAX_HEIGHT
    for html_part in parts(box, w.HTML):
        assert html_part.layout.max_height is None or html_part.layout.max_height.endswith("px")
