"""From result files to verdicts: each result kind's observer (what a result is expected to be is
worked out here), one evidence table whose metric names have one owner (metric_names), every claim
judged (by prediction never more strongly than the model's measured error allows), notes on
repeats, and which verdicts hang on unstated settings."""
