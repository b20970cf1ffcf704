"""What the workflow will do, decided before anything runs, from the configuration and the code.

- `jobs`: the targets, rows, grid of GPU targets, variants, resources and the evidence files of a
  run, with every refusal (an unknown row, an unpinned image for a GPU run) raised as a DataError
  naming the file and field;
- `inputs`: each stage's code inputs, derived from the import graph, and the docs' table of
  what an edit rebuilds;
- `configuration`: the docs' table of the config's keys, from its schema and defaults;
- `layout`: the docs' layout of the checkout, from the tree, with the floors of the package's
  folders.
"""
