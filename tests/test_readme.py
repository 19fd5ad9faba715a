"""Every command in the README works: the guide's commands run here in order, in a scratch directory, with
a tiny model built on the spot wherever a pretrained model is named, with training cut to a few steps, and on a
slice of the real files (`KLUE_DATA_DIR` names a copy with the first few hundred NLI and STS pairs, the KorSTS
files and the corpus are cut the same way): the commands' plumbing on real formats, not a model's quality. A
block the machine cannot run (network, hub, GPUs) says so in a `readme-test: skip` comment that names the test
exercising it, which must exist. The two commands at the top are run by `test_main_command_*` and `.ci/run`."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from cli_in_process import klue_in_process

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
SKIP = re.compile(r"<!-- readme-test: skip, (?P<reason>.*?); (?P<test>tests/\S+) .*-->")
PRETRAINED = ("klue/roberta-base", "klue/roberta-large")
# A few optimizer steps on short inputs: the commands' plumbing, not a model's quality.
QUICK = ("max_steps=2", "batch_size=8", "max_len=64", "evals_per_epoch=0", "progress=false")
# One seed: the seeds option is exercised by the benchmark tests. Eight LLM examples: one batch of the
# in-process backend (--batch-size 8) instead of three; --limit itself is what the guide shows.
SUBSTITUTIONS = {"--max-steps 10000": "--max-steps 3", "--config small": "--config tiny",
                 "--seeds 1,2 ": "--seeds 1 ", "--limit 20 ": "--limit 8 "}
# Commands whose cells would run in a spawned worker process: run here instead (`--jobs 0`), where torch and
# transformers are already imported; the worker pool is tested in tests/benchmark/test_benchmark_processes.py.
CELL_COMMANDS = (["klue", "benchmark"], ["klue", "llm"])
VARIABLE = re.compile(r"\$(\w+)")
# The guide's slice of the real files: enough pairs for every label on both sides of a local split.
GUIDE_PAIRS, KORSTS_LINES, CORPUS_LINES = 300, {"sts-train.tsv": 600, "sts-dev.tsv": 200}, 300


@dataclass(frozen=True)
class Block:
    heading: str
    commands: list[str]
    skip: re.Match[str] | None


def readme_blocks() -> list[Block]:
    blocks, heading, skip = [], "", None
    lines = README.read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("#"):
            heading = line.lstrip("# ").strip()
        elif line.startswith("<!-- readme-test"):
            skip = SKIP.match(line)
            assert skip is not None, f"README line {i + 1}: a readme-test comment names its reason and test: {line}"
        elif line.startswith("```bash"):
            end = lines.index("```", i + 1)
            blocks.append(Block(heading, [c for c in lines[i + 1:end] if c.strip()], skip))
            skip, i = None, end
        elif line.strip():
            skip = None  # a comment applies to the block right after it only
        i += 1
    return blocks


def guide_blocks() -> list[Block]:
    return [b for b in readme_blocks() if b.heading != "klue"]


def test_the_two_commands_come_first_and_ci_runs_the_test_one() -> None:
    top = [b for b in readme_blocks() if b.heading == "klue"]
    assert [b.commands for b in top] == [["bash scripts/quickstart.sh"], ["bash scripts/test.sh"]]
    assert "bash scripts/test.sh" in (REPO / ".ci" / "run").read_text(encoding="utf-8")


def test_every_skipped_block_names_a_test_that_exists() -> None:
    skipped = [b for b in guide_blocks() if b.skip]
    assert skipped, "the guide has commands this machine cannot run; they must say where they are tested"
    for block in skipped:
        assert block.skip is not None
        assert (REPO / block.skip.group("test")).is_file(), block.skip.group(0)


def adapt(command: str, tiny_model: Path, tiny_llama: Path, env: dict[str, str]) -> list[str]:
    """The README command as run here: variables expanded from `env` (one it lacks is an error), a tiny model
    for a pretrained one (a tiny Llama for an `hf:` LLM), a few steps, the cells in this process."""
    for long, short in SUBSTITUTIONS.items():
        command = command.replace(long, short)
    words = [VARIABLE.sub(lambda m: env[m.group(1)], w) for w in shlex.split(command)]
    words = [str(tiny_model) if w in PRETRAINED else f"hf:{tiny_llama}" if w.startswith("hf:") else w
             for w in words]
    words = [_tiny_in_spec(w, tiny_model) for w in words]
    if words[:2] == ["klue", "train"] and words[words.index("--model") + 1] != "classic":
        words += QUICK
    if words[:2] == ["klue", "benchmark"]:
        words += [part for setting in QUICK for part in ("--override", setting)]
    if words[:2] in CELL_COMMANDS and "--jobs" not in words and "--executor" not in words:
        words += ["--jobs", "0"]
    return words


def _tiny_in_spec(word: str, tiny_model: Path) -> str:
    """`BENCHDIR::klue/roberta-base` (klue compare) names the tiny model the benchmark ran instead."""
    path, sep, model = word.partition("::")
    return f"{path}::{tiny_model}" if sep and model in PRETRAINED else word


@pytest.fixture(scope="module")
def guide_data(tmp_path_factory: pytest.TempPathFactory, klue_data_dir: Path) -> Path:
    """The guide's `KLUE_DATA_DIR`: the official layout, with the NLI dev file cut to its first pairs (at a
    premise's end) and the STS one to its first pairs; every other folder is the real one."""
    root = tmp_path_factory.mktemp("klue-data")
    for entry in sorted(klue_data_dir.iterdir()):
        if entry.name not in ("klue-nli-v1.1", "klue-sts-v1.1"):
            (root / entry.name).symlink_to(entry)
            continue
        (root / entry.name).mkdir()
        name = f"{entry.name}_dev.json"
        rows = json.loads((entry / name).read_text(encoding="utf-8"))
        n = GUIDE_PAIRS
        while entry.name == "klue-nli-v1.1" and rows[n]["premise"] == rows[n - 1]["premise"]:
            n += 1
        (root / entry.name / name).write_text(json.dumps(rows[:n], ensure_ascii=False), encoding="utf-8")
    return root


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory, klue_data_dir: Path, shared_data_dir: Path) -> Path:
    """The directory the guide runs in: a corpus.txt of real Korean text with personal information in it, and
    the KorSTS files under korsts/ as a user who downloaded them would have them (their first lines)."""
    root = tmp_path_factory.mktemp("readme")
    pairs = json.loads((klue_data_dir / "klue-nli-v1.1" / "klue-nli-v1.1_dev.json").read_text(encoding="utf-8"))
    texts = list(dict.fromkeys(p["premise"] for p in pairs))[:CORPUS_LINES]
    texts += ["김민수 씨의 연락처는 010-1234-5678이고 메일은 minsu.kim@example.com 입니다."] * 3
    (root / "corpus.txt").write_text("\n".join(texts) + "\n", encoding="utf-8")
    (root / "korsts").mkdir()
    for name, n in KORSTS_LINES.items():
        with (shared_data_dir / "korean" / "korsts" / name).open(encoding="utf-8", newline="") as handle:
            lines = [line for _, line in zip(range(n + 1), handle)]  # the header and n pairs
        (root / "korsts" / name).write_text("".join(lines), encoding="utf-8", newline="")
    return root


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory: pytest.TempPathFactory, klue_data_dir: Path) -> Path:
    from klue.models.tiny import make_tiny_model_dir

    pairs = json.loads((klue_data_dir / "klue-nli-v1.1" / "klue-nli-v1.1_dev.json").read_text(encoding="utf-8"))
    texts = [p[k] for p in pairs[:400] for k in ("premise", "hypothesis")]
    return make_tiny_model_dir(tmp_path_factory.mktemp("tiny"), "bert", texts, vocab_size=800, max_len=128)


@pytest.fixture(scope="module")
def tiny_llama(tmp_path_factory: pytest.TempPathFactory, klue_data_dir: Path) -> Path:
    from klue.models.tiny import make_tiny_llama_dir

    pairs = json.loads((klue_data_dir / "klue-nli-v1.1" / "klue-nli-v1.1_dev.json").read_text(encoding="utf-8"))
    return make_tiny_llama_dir(tmp_path_factory.mktemp("llama"), [p["premise"] for p in pairs[:300]])


# What a section leaves behind, checked after its commands ran.
SECTION_CHECKS = {
    "Benchmark models and seeds, read the report": lambda root: (root / "runs" / "bench" / "report.html").is_file(),
    "Your own files": lambda root: json.loads((root / "runs" / "korsts" / "results.json").read_text(
        encoding="utf-8"))["protocol"] == "files",
    "Pretrain": lambda root: "010-1234-5678" not in (root / "clean" / "corpus.txt").read_text(encoding="utf-8"),
}


def runnable_sections() -> list[str]:
    return list(dict.fromkeys(b.heading for b in guide_blocks() if not b.skip))


def test_the_guide_has_runnable_sections_and_checks_name_them() -> None:
    sections = runnable_sections()
    assert sum(len(b.commands) for b in guide_blocks() if not b.skip) >= 12
    assert set(SECTION_CHECKS) <= set(sections), set(SECTION_CHECKS) - set(sections)


# One test per section (the sections do not depend on each other; the commands inside one do, so they run in
# order), so that the suite's workers share the guide.
@pytest.mark.longest
@pytest.mark.slow
@pytest.mark.realdata
@pytest.mark.parametrize("section", runnable_sections())
def test_the_guide_runs_in_order(section: str, scratch: Path, guide_data: Path, shared_data_dir: Path,
                                 request: pytest.FixtureRequest) -> None:
    """Each `klue` command runs in this process (tests/cli_in_process.py): what a block proves is that its
    commands work in order on the files they leave, which the process boundary adds nothing to (the two top
    commands and the exit-code tests run real processes); a subprocess would import torch again for each."""
    env = {**os.environ, "KLUE_DATA_DIR": str(guide_data), "KLUE_EXTRA_DATA_DIR": str(shared_data_dir),
           "OMP_WAIT_POLICY": "PASSIVE", "OMP_NUM_THREADS": "1"}
    blocks = [b for b in guide_blocks() if b.heading == section and not b.skip]
    text = " ".join(c for b in blocks for c in b.commands)
    # The tiny models are built only for the sections that name a pretrained model or an LLM.
    tiny_model = request.getfixturevalue("tiny_model") if any(m in text for m in PRETRAINED) else Path("unused")
    tiny_llama = request.getfixturevalue("tiny_llama") if "hf:" in text else Path("unused")
    for block in blocks:
        for command in block.commands:
            words = adapt(command, tiny_model, tiny_llama, env)
            assert words[0] == "klue", f"README ({block.heading}): a guide command that is not klue: {command}"
            done = klue_in_process(*words[1:], cwd=scratch, environ=env)
            assert done.returncode == 0, f"README ({block.heading}): {command}\n{done.stderr[-4000:]}"
    check = SECTION_CHECKS.get(section)
    assert check is None or check(scratch), f"README ({section}) did not leave what it should"


@pytest.mark.realdata
@pytest.mark.slow
def test_main_command_runs_the_quickstart(guide_data: Path, shared_data_dir: Path, tmp_path: Path) -> None:
    """The script as the README runs it, in its own process, on the guide's slice of the real files."""
    env = {**os.environ, "KLUE_DATA_DIR": str(guide_data), "KLUE_EXTRA_DATA_DIR": str(shared_data_dir)}
    done = subprocess.run(["bash", "scripts/quickstart.sh", "--tasks", "nli", "--out", str(tmp_path / "q")],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-4000:]
    assert (tmp_path / "q" / "report.html").is_file()
    results = json.loads((tmp_path / "q" / "nli" / "classic" / "seed1" / "results.json").read_text(encoding="utf-8"))
    assert results["status"] == "ok" and results["model"] == "classic"
