"""The unmodified official online-dt code (facebookresearch/online-dt) run on this project's work.

The official code is CC-BY-NC: nothing of it is in this repository. The user fetches it and
points ``ODT_OFFICIAL_SRC`` at the source folder (see ``docs/official-odt.md``); the
``official-odt`` method then runs its ``main.py`` Experiment on the project's generated
dataset and gymnasium environment, at the preset's hyperparameters, and writes records like
any other method.

* ``adapters``: what the official code imports and cannot find here (old gym API, ``d4rl``,
  stable-baselines3's vector env), and the dataset in the official pickle layout.
* ``driver``: the source folder and its provenance, the preset mapped onto the official
  ``variant``, and :class:`~benchmarks.official.driver.OfficialODTAgent`, the runner's agent.
"""
