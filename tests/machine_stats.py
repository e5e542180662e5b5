"""The per-fault table the Jepsen-style state machines print (consumers and providers).

Each client operation is one row entry: the fault armed for it (or "other writer during
op"), whether the fault fired, and the judge's verdict: ``"recovered"``, ``"typed..."``
for a typed error the situation explains, any other plain text for an accepted outcome
worth a note, and ``"!<violation>..."`` for a violation.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence


class Stats:
    """Per variant and fault: injected, fired, recovered, typed error and each violation."""

    def __init__(
        self,
        title: str,
        rows: Sequence[str],
        violations: Sequence[str],
        width: int = 16,
    ) -> None:
        self.title = title
        self.row_names = tuple(rows)
        self.violation_names = tuple(violations)
        self.columns = ("injected", "fired", "recovered", "typed error", *violations)
        self.width = width
        self.rows: dict[str, dict[str, Counter[str]]] = defaultdict(lambda: defaultdict(Counter))
        self.errors: dict[str, Counter[str]] = defaultdict(Counter)
        self.ops: dict[str, Counter[str]] = defaultdict(Counter)
        self.notes: Counter[str] = Counter()

    def add(self, variant: str, row: str, fired: bool, verdict: str) -> None:
        counts = self.rows[variant][row]
        counts["injected"] += 1
        if not fired:
            return
        counts["fired"] += 1
        if verdict.startswith("!"):
            names = self.violation_names
            column = next((v for v in names if verdict[1:].startswith(v)), names[-1])
        else:
            column = "typed error" if verdict.startswith("typed") else "recovered"
            self.notes[verdict] += verdict not in ("recovered", "typed")
        counts[column] += 1

    def render(self) -> str:
        w = self.width
        lines = []
        for variant, rows in sorted(self.rows.items()):
            lines += ["", f"{self.title}, {variant}"]
            heads = [c.replace("other violation", "other viol.")[: w - 1] for c in self.columns]
            lines.append(f"{'fault':<23}" + "".join(f"{c:>{w}}" for c in heads))
            for row in self.row_names:
                counts = rows.get(row, Counter())
                lines.append(f"{row:<23}" + "".join(f"{counts[c]:>{w}}" for c in self.columns))
            errors = ", ".join(f"{k} {v}" for k, v in sorted(self.errors[variant].items()))
            lines.append(f"typed errors raised: {errors or 'none'}")
            if self.ops[variant]:
                ops = ", ".join(f"{k} {v}" for k, v in sorted(self.ops[variant].items()))
                lines.append(f"operations: {ops}")
        notes = "; ".join(f"{k}: {v}" for k, v in sorted(self.notes.items()) if v)
        return "\n".join([*lines, f"notes: {notes or 'none'}"])

    def violations(self, variant: str | None = None) -> dict[str, int]:
        """Violations counted, of one variant or of all."""
        counts = [
            c for name, rows in self.rows.items() if variant in (None, name) for c in rows.values()
        ]
        return {v: sum(c[v] for c in counts) for v in self.violation_names}
