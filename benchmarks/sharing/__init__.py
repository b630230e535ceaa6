"""Computation that runs share instead of repeating it: ``pretraining`` (runs that differ only
after the switch to online finetuning start from one end-of-pretraining state) and ``runs``
(a run that is the same computation as a complete one copies its record)."""
