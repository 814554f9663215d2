// Package splitspec owns the split grammar: a split string such as
// "train[:90%]", "train[4shard]" or "train[10:20]+val" parsed and resolved,
// exactly as tensorflow_datasets 4.9 resolves it (core/splits.py), to the
// ordered episode ranges it selects (Resolve).
//
// Every format speaks it: RLDS because TFDS defined it, LeRobot because its
// users select episodes the same way. A format hands Resolve its splits in
// the neutral model's terms (episode.Split: a name and the episodes of each
// shard); the grammar knows nothing of the files behind them.
//
// splitspec imports nothing of oxefs but the neutral model, and does no
// I/O. The tests hold values computed by running TFDS itself
// (testdata/split_golden.json).
package splitspec
