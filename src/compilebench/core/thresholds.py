"""When a mode's output counts as correct: the thresholds the engine applies and the paper states."""

COSINE_MIN = 0.99  # PyTorch's dynamo harness uses the same cosine threshold
FLOAT32_REL_TOL = 1e-3
# Against the float64 output, as PyTorch's benchmark harness judges: RMSE at most k x eager's own + a tolerance
FLOAT64_MULTIPLIER = {"float32": 2.0, "reduced": 3.0}
FLOAT64_TOL = 1e-5

# Beyond this share of the machine's CPU time used by other processes (or taken by the hypervisor as steal) while
# a process measured, its measurement is not a fair one.
BUSY_SHARE = 0.25

# A machine's parallel speedup (machine.parallel_capacity) that moved by more than this share between two probes
# means the machine's state moved between them.
CAPACITY_SHIFT = 0.10

# A side whose calls take this many page faults each (memory mapped afresh, from 4 KiB to 2 MiB a fault) is
# timed with the memory allocator's state in its time.
FAULTS_PER_CALL = 256
