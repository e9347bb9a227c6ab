"""Every threshold compilebench judges by, in one place: when an output counts as correct, when a difference is a
verdict, and when the machine's state makes a measurement unfair. The paper states each where it applies."""

# When a mode's output counts as correct.
COSINE_MIN = 0.99  # PyTorch's dynamo harness uses the same cosine threshold
FLOAT32_REL_TOL = 1e-3
# Against the float64 output, as PyTorch's benchmark harness judges: RMSE at most k x eager's own + a tolerance
FLOAT64_MULTIPLIER = {"float32": 2.0, "reduced": 3.0}
FLOAT64_TOL = 1e-5
# A training step's losses, gradients and weights, as PyTorch's dynamo harness judges training on GPUs: close within
# this (absolute and relative), or an RMSE against float64 at most the multiplier x eager's + a tenth of it.
TRAIN_TOL = 1e-3

# Beyond this share of the machine's CPU time used by other processes (or taken by the hypervisor as steal) while
# a process measured, its measurement is not a fair one.
BUSY_SHARE = 0.25

# A machine's parallel speedup (machine.parallel_capacity) that moved by more than this share between two probes
# means the machine's state moved between them.
CAPACITY_SHIFT = 0.10

# A side whose calls take this many page faults each (memory mapped afresh, from 4 KiB to 2 MiB a fault) is
# timed with the memory allocator's state in its time.
FAULTS_PER_CALL = 256

# The band of `same` for a speedup or any ratio of medians (`report.threshold` overrides it): an interval inside
# 1 ± this is no detectable difference.
DEFAULT_THRESHOLD = 0.05
# The band of `same` for compile times, as PyTorch's compiler dashboard judges them.
COMPILE_THRESHOLD = 0.15
# Fresh starts a side before a compile time gets an interval and a verdict.
MIN_COMPILE_SAMPLES = 3
# A mode whose interleaved median is further than this from its median timed alone is flagged.
STEADY_STATE_TOLERANCE = 0.05
# A timed series whose level moved by more than this share partway through a process (analysis.levels) describes
# neither level: the process is measured again and set aside.
LEVEL_SHIFT_TOLERANCE = 0.15
# The penalty of each change point, in units of the series' call-to-call spread times log(calls): higher finds
# fewer changes. Calibrated by benchmarks/validation/level_shifts.py on A/A series and injected steps.
LEVEL_SHIFT_PENALTY = 3.0
# A mode whose processes' levels split at a gap wider than this share of the faster level ran at two speeds
# (`bimodal`): its result states both, not their average.
BIMODAL_GAP = 0.25

# A run of at least this many models is a suite: its paper opens with the suite table, and `history add` keeps its
# pass rate and geometric-mean speedup per hardware × mode as series of their own.
SUITE_MIN_MODELS = 10
