"""The base every learner of the harness stands on: ODT, DT, IQL, SAC and BC alike.

Configuration plumbing, the evaluation protocol's shared facts, training-loop
exceptions and metric means, environments and episodes, named seed streams,
datasets as trajectories, checkpoints, clocks and progress bars. It imports nothing
of ``odt``, ``baselines``, ``benchmarks`` or ``studies``: an algorithm package
depends on it, never on another algorithm's trainer, and the harness sits above both.
"""
