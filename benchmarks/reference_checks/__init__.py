"""Our baselines against the reference code they are meant to match, one component at a time.

Each check imports a reference file that is not in this repository (the user fetches it and
names where it is by an environment variable; nothing is run without it), builds the
reference's pieces and ours with the same weights, feeds them the same batch, and reports each
component as the same (with its largest difference) or different (with the reason it is kept).

* :mod:`benchmarks.reference_checks.sac_cleanrl`: ``baselines/sac.py`` against CleanRL's
  ``cleanrl/sac_continuous_action.py`` (``ODT_CLEANRL_SRC``);
* :mod:`benchmarks.reference_checks.dt_corl`: ``baselines/dt.py`` (ODT's model with the
  deterministic head) against CORL's ``algorithms/offline/dt.py`` (``ODT_CORL_SRC``).

Each writes its section of ``paper_tables/baselines_components_cpu.md``
(``python -m benchmarks.reference_checks.sac_cleanrl --out paper_tables/baselines_components_cpu.md``).
"""
