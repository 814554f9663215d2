// Package assemble builds the batches of one view of a plan: for batch n, it
// takes the plan's samples, has the caller bring their remote bytes in
// (Options.Fetch), loads their episodes, and assembles every sample in
// parallel on a Pool of decode workers, each a pairs.Worker with its own
// frames.Decoder, into the batch's buffer; then it writes the batch's
// metadata file (dataset, episode, frames, actions, masks).
//
// A sample whose episode is too short or damaged is substituted
// deterministically (Builder.sample): the same bad unit is always
// replaced by the same good one, whatever reader met it first, and every
// substitution is counted in Stats for stats.json.
//
// assemble knows nothing of storage or of any format: it reads episodes
// through the neutral episode.Dataset.
package assemble
