"""A run's curve in experiment trackers (TensorBoard, Weights & Biases): ``loggers`` sends curve
rows live during a run (``--log tensorboard|wandb``), ``export`` replays finished runs' curves
(``python -m benchmarks.trackers.export``). ``curve.jsonl`` stays the record."""
