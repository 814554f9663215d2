// Package layers holds the test that keeps oxefs's import graph pointing one
// way: from the command and its composition root down through the FUSE
// adapter and the benchmark, the scheduler, the plan, the sample assembler
// and the frames, to the format-neutral model, the formats and storage. The
// table in layers_test.go places every package; a package missing from it,
// or an import that points up or sideways, fails the test. A second test
// keeps the formats behind their registry: outside format/, only the
// registration point (format/formats) imports a format's package, save the
// measurement scripts it names. A third (TestOneFactory) keeps the kind of
// sample picked in one place: no Go file but config/kind.go (config's
// registry of kinds) compares the config's sample block or the step layout
// with nil, or a config.Kind with one of its values, and no Python code
// but _reader looks at info.json's "sample".
package layers
