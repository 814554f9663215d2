// Package synthetic owns what oxefs's synthetic datasets hold, apart from
// any file format: the table of 29 dataset layouts shaped like the Open
// X-Embodiment mix (Datasets: cameras and their sizes, action and state
// widths, the instruction's form, episode lengths) and, for each (seed,
// dataset, split, episode), the episode's content (EpisodeContent): frames
// rendered on demand, actions, states and an instruction, all following
// one plan of an arm carrying an object, so that they agree.
//
// Each format's writer turns the same content into its own files:
// format/rlds/synth into TFDS TFRecord shards, format/lerobot/synth into
// LeRobot v3 parquet and MP4. Neither writer imports the other; both
// import this package, so the same seed gives the same episodes in both
// formats.
//
// Every random choice goes through a splitmix64 stream keyed by the values
// that identify what it draws, so the content is a pure function of its
// key, whatever the order or the concurrency it is drawn with. The package
// does no I/O and imports nothing of oxefs.
package synthetic
