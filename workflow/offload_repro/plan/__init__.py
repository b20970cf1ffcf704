"""What the workflow will do, decided before anything runs, from the configuration and the code."""
