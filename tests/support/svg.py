"""A figure read back from its SVG: the text and the geometry of each artist, by its id.

``bench.figures.render`` gives every artist an id (``bench.figures.spec.gid``); this reads
what a person would see of it: the words of a label, the height of a bar, the points of a
line, in the SVG's own units (y grows downwards). Tests compare those with the results the
figure was drawn from, so a figure that drops a series, swaps two or mislabels an axis fails.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

__all__ = ["Svg"]

_NS = "{http://www.w3.org/2000/svg}"
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:e-?\d+)?")


class Svg:
    """One SVG file, its elements indexed by id."""

    def __init__(self, path: Path) -> None:
        self.root = ET.parse(path).getroot()
        self.by_id = {el.get("id", ""): el for el in self.root.iter() if el.get("id")}

    def ids(self, prefix: str) -> list[str]:
        """Every id that starts with ``prefix``, in document order."""
        return [i for i in self.by_id if i.startswith(prefix)]

    def text(self, gid: str) -> str:
        """The words under the element ``gid`` (lines joined by a newline)."""
        return "\n".join("".join(t.itertext()).strip() for t in self.by_id[gid].iter(f"{_NS}text"))

    def points(self, gid: str) -> list[tuple[float, float]]:
        """The vertices of the first path under ``gid``: a line's points, a bar's corners."""
        path = next(self.by_id[gid].iter(f"{_NS}path"))
        numbers = [float(n) for n in _NUMBER.findall(path.get("d", ""))]
        return list(zip(numbers[0::2], numbers[1::2], strict=True))

    def bar_height(self, gid: str) -> float:
        """How tall the bar ``gid`` is drawn."""
        ys = [y for _, y in self.points(gid)]
        return max(ys) - min(ys)
