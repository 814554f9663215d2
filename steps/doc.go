// Package steps turns a planned step sample and its episode into the
// arrays of a step-mode batch: a sample is (dataset, episode, t), and every
// quantity is taken at deltas relative to t — frames per camera slot, the
// state and the actions — with indices outside the episode clamped to it
// and flagged in <key>_is_pad (LeRobot's delta_timestamps semantics).
//
// # Pieces
//
// A Spec is the mix's side: the camera slots (name, size, number of
// deltas), the state and action lengths, the widest state and
// action, the layout. Its Layout is the batch: one buffer holding every
// array as its own NumPy 1.0 file, each starting at a multiple of 64 bytes
// (see Layout). A Config is one dataset's side: its camera per slot, its
// deltas resolved to steps (Resolve), its keys, its normalisation and its
// dataset_index. An Assembler is made once per dataset from both and is
// shared by every worker; a Worker holds one worker goroutine's scratch.
// Assembler.Build writes sample i of a Batch. Kind is the whole as a
// sample.Kind, which is all the batch builder sees.
//
// # Frames
//
// Each camera slot the dataset maps is one sample.Request to the batch's
// frame stage (package sample): a frame (dataset, episode, image key,
// step, size, transform parameters) that several samples of a batch, or
// several deltas of one sample, need is decoded once.
//
// # Errors
//
// An episode with no t (steps ≤ drop_last) is a *sample.ShortEpisodeError;
// bad data is an *episode.CorruptError, as in package pairs.
package steps
