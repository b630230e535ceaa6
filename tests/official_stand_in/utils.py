"""Stand-in: seeding as the official utils module offers it."""
import random

import numpy as np
import torch


def set_seed_everywhere(seed):
    torch.manual_seed(seed)
    np.random.seed(seed)
    random.seed(seed)
