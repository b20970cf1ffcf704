"""The optional stages a run adds by a config key (experiments/config.yaml): each one's name in
words and the command that adds it, for a claim that only such a stage can judge."""

from __future__ import annotations

SNAKEMAKE = ".venv/bin/snakemake"  # as a user types it after envs/bootstrap.sh

TITLES = {
    "whatif": "the what-if stage",
    "assumptions": "the sensitivity stage",
    "validation": "the validation stage",
    "infer": "the search for settings the source's outcomes decide",
}


def command(stage: str) -> str:
    """The command line that runs the main job with `stage` added, as a user types it."""
    return f"{SNAKEMAKE} --cores all --config {stage}=True"


def needs_text(needs: dict[str, str]) -> str:
    """A claim's `needs` in words: 'the capacity frontier comes from the what-if stage: <command>'."""
    return f"{needs['what']} comes from {TITLES[needs['stage']]}: {command(needs['stage'])}"
