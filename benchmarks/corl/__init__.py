"""CORL's single-file IQL (corl-team/CORL) run unmodified on this project's work.

CORL is Apache-2.0 but none of it is in this repository: the user fetches it and points
``ODT_CORL_SRC`` at it (``docs/corl.md``); the ``corl-iql`` method then runs its
``algorithms/offline/iql.py`` (or, with an online phase, ``algorithms/finetune/iql.py``) on the
project's generated dataset and gymnasium environment, with the ``TrainConfig`` of CORL's own
config file for that dataset and the project's ``iql`` budget, and writes records like any
other method.

* ``adapters``: the modules CORL imports and this project lacks (``d4rl``, old ``gym``,
  ``wandb``, ``pyrallis``), and the dataset in D4RL's flat and transition layouts.
* ``driver``: the source folder and its provenance, the mapping of ``iql``'s config onto
  CORL's ``TrainConfig``, and :class:`~benchmarks.corl.driver.CorlIQLAgent`, the runner's agent.
* ``components``: our IQL against CORL's, one piece at a time (same batch, same weights).
"""
