"""The worker: the only folder that imports torch. It builds, wraps, compiles and measures one experiment in its
own process and writes a process record; it computes no statistics. Imports the core."""
