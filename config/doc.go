// Package config owns the mix config: its YAML schema (Config,
// DatasetConfig, Offset, Weight), the strict parser (Parse, Load: an
// unknown or repeated key is an error, and every value keeps the line it
// was written on), the defaults, the enumerated values as typed values with
// one name table each (FrameMode, Layout, ResizeMode, MetaMode), and every
// rule a config must satisfy:
//
//   - the rules that need nothing but the config itself (ranges, choices,
//     names, weights, the frame-mode rules of Frames, the sample block of
//     step mode and the keys each mode refuses), checked by Parse and
//     Validate;
//   - the rules that need a dataset's feature list, one predicate per rule
//     (IsCamera for image_key, IsVector for action_keys and state_key,
//     LanguageOf for language_key), checked by DatasetConfig.CheckFeatures
//     against a small neutral Feature description; in step mode IsCamera
//     applies to each camera slot's key instead of image_key;
//   - the rules that need a dataset's metadata in step mode:
//     Config.StepDeltas (deltas in seconds through the dataset's fps,
//     DatasetConfig.FrameRate). Those that need episode lengths (drop_last,
//     the action chunk) are package loader's, which knows the lengths.
//
// A config without a `sample` block serves frame pairs (FramesOf, the
// dataset's offset); with one, step samples (StepSpec, StepDeltas, and
// PlanOffset, which gives the plan its units in both modes). These two
// kinds of sample are config's own; any other is registered by the
// composition root (RegisterKind: a KindDef with its top-level block's
// key and parser, and its KindRules), and a config asks for it with that
// block (Config.Kind, Config.KindBlock).
//
// Every problem is a *ConfigError carrying the YAML line of the offending
// key (the dataset entry's line when the key is absent), the dataset and
// the field, and saying what is valid; the problems of one config come back
// together as ConfigErrors. The package does no I/O but reading the file
// Load is given.
//
// Both the composition root (package loader, which checks a mix against its
// datasets) and the sample assembler (package pairs) take
// their types and rules from here, so a rule exists once: what a config
// passes here, the assembler can build.
//
// config imports nothing else of oxefs but the neutral model's feature
// kinds (episode.Kind) and the augmentation ops' table and ranges
// (package augment), which the augment block is checked against. Callers describe a dataset's features with Feature;
// package loader fills it from the format-neutral model.
package config
