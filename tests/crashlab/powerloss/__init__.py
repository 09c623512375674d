"""Tests of the crash lab's power-loss filesystem (issue 15): the pure durability model, the
FUSE mount for real (what a cut keeps and loses, SQLite in WAL mode, mount hygiene), and the
``powerloss`` / ``powerloss-torn`` faults in trials, sweeps and replays."""
