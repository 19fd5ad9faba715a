"""Small synthetic benchmarks and corpora for the scan tests, and a scan of them in one call."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from klue.contamination.corpus import expand
from klue.contamination.index import Example, build_index
from klue.contamination.run import ScanOptions, ScanResult, scan_corpus
from klue.contamination.units import Settings

# Korean sentences of 9-12 eojeols (longer than the default 8) and one of 5 (too short to match)
ARTICLE = "서울시는 오는 3월부터 시내버스 노선 열두 개를 새로 고쳐 출퇴근 시간의 혼잡을 줄이기로 했다."
SECOND = "이번 조치로 강남과 여의도를 오가는 직장인들의 평균 통근 시간이 십 분가량 줄어들 것으로 보인다."
OTHER = "지리산 국립공원의 단풍은 올해 예년보다 일주일쯤 늦게 절정에 이를 것이라고 기상청이 전망했다."
SHORT = "오늘은 날씨가 매우 맑다."

EXAMPLES = [
    Example("nli", "ex-article", (ARTICLE, SHORT), ("entailment",)),
    Example("nli", "ex-second", (SECOND, SHORT), ("neutral",)),
    Example("nli", "ex-other", (OTHER, SHORT), ("contradiction",)),
    Example("nli", "ex-short", (SHORT, SHORT), ("neutral",)),
]

NOISE = ["경제 뉴스는 매일 아침 여덟 시에 발표된다고 관계자가 전했다.", "The quick brown fox jumps over the lazy dog.",
         "한국어 위키백과는 누구나 편집할 수 있는 자유 백과사전이다."]


def corpus_lines(*extra: str) -> list[str]:
    """Noise lines with `extra` lines in the middle (line 3 on)."""
    return [NOISE[0], NOISE[1], *extra, NOISE[2]]


def write_jsonl(path: Path, texts: list[str], field: str = "text") -> Path:
    path.write_text("".join(json.dumps({field: t, "id": i}, ensure_ascii=False) + "\n" for i, t in enumerate(texts)),
                    encoding="utf-8")
    return path


def scan(paths: list[Path], settings: Settings | None = None, examples: list[Example] | None = None,
         state_dir: Path | None = None, **options: Any) -> ScanResult:
    index = build_index(examples if examples is not None else EXAMPLES, settings or Settings())
    return scan_corpus(index, expand([str(p) for p in paths]), ScanOptions(**options), state_dir)


def dirty(result: ScanResult, examples: list[Example] | None = None) -> dict[str, bool]:
    """guid -> dirty on its input."""
    chosen = examples if examples is not None else EXAMPLES
    return {e.guid: i in result.findings for i, e in enumerate(chosen)}
