"""What a reader sees, drawn from the evidence table and the verdicts and never computed or judged
here: the pages and their charts, table.csv, the main job's closing lines, and the command line
that produces a target's evidence."""
