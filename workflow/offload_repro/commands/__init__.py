"""One module per command of `offload_repro.cli`: the command's arguments and its call, nothing else.

Each module's docstring is the command's help; `PARENTS` are the shared arguments it takes
(`arguments.py`), `add_arguments(parser)` (where there is one) adds its
own, and `run(args)` runs it and returns the exit status. A stage's code is what its module can
import (`plan/inputs.py`), so editing one command replans the rules that run it and no other.
"""
