"""Everything a benchmark leaves in OUT besides its cache: report.json, report.md and the
plots; also what ``drkernel report OUT`` redraws from report.json."""

from __future__ import annotations

from pathlib import Path

from services.trainer.bench.markdown import render
from services.trainer.bench.plots import write_plots
from services.trainer.bench.schema import Report, write_report

MARKDOWN_FILE = "report.md"


def write_all(report: Report, out_dir: Path) -> list[Path]:
    """Writes the report's files into ``out_dir``; returns them."""
    out_dir.mkdir(parents=True, exist_ok=True)
    markdown = out_dir / MARKDOWN_FILE
    markdown.write_text(render(report))
    return [write_report(report, out_dir), markdown, *write_plots(report, out_dir)]
