"""When a mode's output counts as correct: the thresholds the engine applies and the paper states."""

COSINE_MIN = 0.99  # PyTorch's dynamo harness uses the same cosine threshold
FLOAT32_REL_TOL = 1e-3
