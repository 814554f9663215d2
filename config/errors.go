package config

import (
	"fmt"
	"strings"
)

// ConfigError is one problem with a config. Its message names the line,
// the dataset and the field, and says what is valid.
type ConfigError struct {
	Line    int    // 0 when not known
	Dataset string // the dataset's name, datasets[i] when it has none, "" for top-level fields
	Field   string
	Msg     string
}

func (e *ConfigError) Error() string {
	var b strings.Builder
	if e.Line > 0 {
		fmt.Fprintf(&b, "line %d: ", e.Line)
	}
	switch {
	case strings.HasPrefix(e.Dataset, "datasets["):
		b.WriteString(e.Dataset + ": ")
	case e.Dataset != "":
		fmt.Fprintf(&b, "dataset %q: ", e.Dataset)
	}
	if e.Field != "" {
		b.WriteString(e.Field + ": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// ConfigErrors are all the problems found in one config.
type ConfigErrors []*ConfigError

func (es ConfigErrors) Error() string {
	if len(es) == 1 {
		return "mix config: " + es[0].Error()
	}
	var b strings.Builder
	fmt.Fprintf(&b, "mix config: %d problems:", len(es))
	for _, e := range es {
		b.WriteString("\n  " + e.Error())
	}
	return b.String()
}

// Unwrap makes errors.As find each *ConfigError.
func (es ConfigErrors) Unwrap() []error {
	out := make([]error, len(es))
	for i, e := range es {
		out[i] = e
	}
	return out
}

// maxProblems bounds the problems one check reports.
const maxProblems = 20

// problems collects ConfigErrors, at most maxProblems of them.
type problems struct {
	errs ConfigErrors
}

func (p *problems) add(line int, dataset, field, format string, args ...any) {
	if len(p.errs) < maxProblems {
		p.errs = append(p.errs, &ConfigError{Line: line, Dataset: dataset, Field: field, Msg: fmt.Sprintf(format, args...)})
	}
}

// err returns the problems, nil when there are none.
func (p *problems) err() error {
	if len(p.errs) == 0 {
		return nil
	}
	return p.errs
}
