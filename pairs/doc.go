// Package pairs turns a planned sample and its episode into training data:
// it picks the sample's frames, has package frames decode and resize them
// straight into the sample's slot of a batch buffer, and builds the
// sample's metadata record (dataset name, episode id, frame indices,
// language, summed action, initial state, robot). It reads episodes through
// the format-neutral model (package episode), draws its random choices
// with keyed.Draw, takes its enums, frame selection and rules from package
// config, and knows nothing of FUSE, of the batch file format, of storage
// or formats, or of how a frame is decoded.
//
// # Pieces
//
// An Assembler is built once per dataset of a mix from a Config (image key,
// frame selection, action/state/language keys, target size, resize mode,
// layout) whose keys package config's rules accepted when the mix was
// opened, which New does not check again; it is immutable and shared by
// every worker. A Worker belongs to one worker goroutine: the scratch
// reused from sample to sample. Assembler.Build(ctx, worker, frames,
// sample, episode, slot, meta) does the work; Kind is the whole as a
// sample.Kind, which is all the batch builder sees.
//
// # Frames
//
// Frames are chosen in [t, t+offset] (see Select and config.FrameMode for
// the exact rules): t is drawn with keyed.Draw(key, keyed.StreamT, ·) when
// samples_per_episode ≥ 1 and is the sample's Unit when it is 0; a [min,
// max] offset is drawn after t with keyed.Draw(key, keyed.StreamOffset, ·) over
// the offsets that fit the episode.
//
// The chosen frames are one sample.Request to the batch's frame stage
// (package sample), which decodes each frame of the batch once, straight
// into the sample's slot when the sample is the first to ask for all of
// its frames, through the camera's frames.Source (sample.Camera): how a
// camera is stored changes only which Source the episode's camera gives.
//
// # Errors
//
// An episode too short for the offset is a *sample.ShortEpisodeError (the plan
// substitutes another unit). Bad data — an image that is empty, undecodable
// or of the wrong size, a missing feature, a malformed tensor — is a
// *episode.CorruptError naming the dataset, shard and record, wrapping a
// *frames.ImageError that names the key and step where an image is at
// fault. Nothing is ever silently replaced.
package pairs
